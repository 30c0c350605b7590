package main

import (
	"fmt"
	"math"

	"browserfl/shared/optim"
	"browserfl/sim"
)

// constants is one choice of the model constants behind the sensitivity.
type constants struct {
	name string
	// clip sets Params.Clip, G, L, Diameter.
	clip, g, l, d float64
	// steps are the step sizes, chosen on the validation split at the
	// reference setting (tuneGroups checks them against the sweep before
	// any reported run starts; sim.StepSizes.Eta scales them).
	steps sim.StepSizes
}

// The papers' constants: G = sqrt(2*785), L = 785/2, D = 0.1, so
// S = G + 2LD = 118.1 (noise-cancellation paper sec. 5.3), with Theorem
// 5.2's step size for the mu^2 family.
var paperConsts = constants{name: "paper", g: math.Sqrt(2 * 785), l: 785.0 / 2, d: 0.1, steps: sim.TunedPaper}

// Our clipping: S = 1 per-sample correction (resp. gradient), no
// projection (D = 0).
var ourConsts = constants{name: "clip1", clip: 1, steps: sim.Tuned}

func (c constants) apply(p *optim.Params) {
	p.Clip, p.G, p.L, p.Diameter = c.clip, c.g, c.l, c.d
	p.Eta = c.steps.Eta(*p, logRegDim)
}

// exp is one simulated run.
type exp struct {
	id, label string
	p         optim.Params
	delta     float64 // reporting delta (0 = sim default 1e-5)
	seed      uint64  // run seed (0 = the -seed flag)
	paper     string  // the paper's figure for this cell, if any
	paperLoss string
	// features names the transform every picture goes through before
	// training and evaluation ("" for the pixels; plan.FeaturesScatter).
	features string
}

func (e exp) evalEvery() int {
	return max(1, e.p.Rounds/20)
}

// group is a set of runs reported together.
type group struct {
	name, title string
	plot        string // file stem of its charts ("" = no chart)
	runs        []exp
}

const (
	nTrain    = 60000
	logRegDim = 10 * 785
)

func ncRun(c constants, alg string, rho float64, m int) exp {
	p := optim.Params{Algorithm: alg, Model: "logreg", M: 100, Cohort: m, Rounds: nTrain / m, Batch: 1, Rho: rho}
	c.apply(&p)
	return exp{id: fmt.Sprintf("nc-%s-%s-rho%g-m%d", c.name, alg, rho, m), label: fmt.Sprintf("%s rho=%g m=%d", alg, rho, m), p: p}
}

// paperNC holds the noise-cancellation paper's Tables 1 and 2 (MNIST):
// [rho or m] -> {our work, noisy SGD}.
var paperNCTable1 = map[float64][2]string{4: {"53.8%", "45.1%"}, 8: {"63.7%", "58.9%"}, 12: {"66.5%", "63.7%"}}
var paperNCTable2 = map[int][2]string{20: {"60.8%", "54.9%"}, 50: {"63.7%", "58.9%"}, 80: {"63.8%", "57.0%"}}

// paperFP holds the full-participation paper's Tables 1 (untrusted) and 2
// (trusted): [trusted][rho][M] -> {loss, accuracy}.
var paperFP = map[bool]map[float64]map[int][2]string{
	false: {4: {1: {"2.256", "69.9%"}, 10: {"2.267", "69.4%"}, 100: {"2.285", "65.4%"}},
		8:  {1: {"2.253", "70.2%"}, 10: {"2.259", "70.0%"}, 100: {"2.274", "69.8%"}},
		16: {1: {"2.252", "70.4%"}, 10: {"2.255", "70.1%"}, 100: {"2.264", "70.0%"}}},
	true: {4: {1: {"2.256", "69.9%"}, 10: {"2.256", "69.7%"}, 100: {"2.258", "69.5%"}},
		8:  {1: {"2.253", "70.2%"}, 10: {"2.253", "70.1%"}, 100: {"2.257", "69.6%"}},
		16: {1: {"2.252", "70.4%"}, 10: {"2.252", "70.3%"}, 100: {"2.256", "69.7%"}}},
}

func fpRun(c constants, trusted bool, rho float64, M int) exp {
	alg := "nc"
	if trusted {
		alg = "trusted"
	}
	p := optim.Params{Algorithm: alg, Model: "logreg", M: M, Cohort: M, Rounds: nTrain / M, Batch: 1, Rho: rho}
	c.apply(&p)
	pl := paperFP[trusted][rho][M]
	return exp{id: fmt.Sprintf("fp-%s-%s-rho%g-M%d", c.name, alg, rho, M), label: fmt.Sprintf("%s rho=%g M=%d", alg, rho, M), p: p,
		paperLoss: pl[0], paper: pl[1]}
}

// SoteriaFL (sec. 6.2): shallow network, n = 10 devices, full
// participation, random-k with k = d/20, (epsilon, 1e-3)-LDP.
const (
	sotRounds = 100
	sotBatch  = 600
	sotEta    = 0.6
)

func sotRun(alg, comp, label string, eps float64) exp {
	p := optim.Params{Algorithm: alg, Model: "mlp", M: 10, Cohort: 10, Rounds: sotRounds, Batch: sotBatch,
		Clip: 1, Eta: sotEta, Epsilon: eps, Delta: 1e-3, Compressor: comp}
	return exp{id: fmt.Sprintf("sot-%s-%s-eps%g", alg, compName(comp), eps), label: label, p: p, delta: 1e-3}
}

func compName(c string) string {
	if c == "" {
		return "dense"
	}
	out := []byte(c)
	for i, b := range out {
		if b == ':' || b == '+' || b == '=' {
			out[i] = '-'
		}
	}
	return string(out)
}

// Compressors studied on noise-cancelled messages (goal: >= 10x fewer
// uplink bytes than dense float32 within 1 point of accuracy).
var compressors = []string{"", "randk:0.05", "ef+randk:0.05", "ef+topk:0.05", "ef+topk:0.02", "ef+quant:8bit", "qinf:3bit", "ef+qinf:4bit", "ef+qinf:3bit"}

func compRun(comp string) exp {
	p := optim.Params{Algorithm: "nc", Model: "logreg", M: 100, Cohort: 50, Rounds: nTrain / 50, Batch: 1, Rho: 8, Compressor: comp}
	ourConsts.apply(&p)
	label := comp
	if label == "" {
		label = "dense float32"
	}
	return exp{id: "comp-nc-" + compName(comp), label: label, p: p}
}

// experiments are every group; choices are the privacy-utility sweeps'
// choices (puTune).
func experiments(choices map[puKey]puConf) []group {
	var gs []group
	for _, c := range []constants{paperConsts, ourConsts} {
		t1 := group{name: "nc-table1-" + c.name, title: "NC paper Table 1 (" + c.name + ")", plot: "nc-table1-" + c.name}
		for _, rho := range []float64{4, 8, 12} {
			for _, alg := range []string{"nc", "noisysgd"} {
				t1.runs = append(t1.runs, ncRun(c, alg, rho, 50))
			}
		}
		t2 := group{name: "nc-table2-" + c.name, title: "NC paper Table 2 (" + c.name + ")"}
		for _, m := range []int{20, 50, 80} {
			for _, alg := range []string{"nc", "noisysgd"} {
				t2.runs = append(t2.runs, ncRun(c, alg, 8, m))
			}
		}
		fp := group{name: "fp-" + c.name, title: "Full-participation paper Tables 1-2 (" + c.name + ")"}
		for _, trusted := range []bool{false, true} {
			for _, rho := range []float64{4, 8, 16} {
				for _, M := range []int{1, 10, 100} {
					fp.runs = append(fp.runs, fpRun(c, trusted, rho, M))
				}
			}
		}
		gs = append(gs, t1, t2, fp)
	}
	for _, eps := range []float64{1, 4, 16} {
		g := group{name: fmt.Sprintf("soteria-eps%g", eps), title: fmt.Sprintf("SoteriaFL sec. 6.2, (%g, 1e-3)-LDP", eps), plot: fmt.Sprintf("soteria-eps%g", eps)}
		g.runs = []exp{
			sotRun("cdpsgd", "", "LDP-SGD (uncompressed)", eps),
			sotRun("cdpsgd", "randk:0.05", "CDP-SGD randk 5%", eps),
			sotRun("soteria-sgd", "randk:0.05", "SoteriaFL-SGD randk 5%", eps),
			sotRun("soteria-svrg", "randk:0.05", "SoteriaFL-SVRG randk 5%", eps),
		}
		gs = append(gs, g)
	}
	cg := group{name: "compress", title: "Compressing noise-cancelled messages (nc, rho=8, M=100, m=50)", plot: "compress"}
	for _, c := range compressors {
		cg.runs = append(cg.runs, compRun(c))
	}
	gs = append(gs, cg)
	gs = append(gs, privacyUtilityGroups(choices)...)
	return gs
}
