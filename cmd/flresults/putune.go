package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"browserfl/shared/dataset"
)

// puKey names one cell family of the privacy-utility table whose batch
// size, local steps and step size are chosen on the validation split:
// a model, an algorithm and a per-device epsilon (0: non-private).
type puKey struct {
	model, alg string
	eps        float64
}

// puConf is one point of a sweep: batch size b, local steps K ("local"
// only) and step size eta.
type puConf struct {
	b, k, e int // e: local passes E (0: one)
	eta     float64
}

// puModels are the models of the tuned rows: logreg-unit has only
// "local" with several passes; puScatter (logistic regression over the
// scattering features) has nc, trusted, shared and the non-private mu2.
var puModels = []string{"logreg", "mlp", "logreg-unit", puScatter}

// puAlgs are the algorithms of model's tuned rows, the private ones
// first.
func puAlgs(model string) (private, nonPrivate []string) {
	switch model {
	case "logreg-unit":
		return []string{"local"}, nil
	case puScatter:
		return []string{"nc", "trusted", "shared"}, []string{"mu2"}
	case "mlp":
		return []string{"nc", "trusted", "noisysgd", "local"}, []string{"mu2", "sgd"}
	}
	return []string{"nc", "trusted", "shared", "noisysgd", "local"}, []string{"mu2", "sgd"}
}

func (c puConf) String() string {
	s := fmt.Sprintf("b=%d", c.b)
	if c.b == puShard {
		s = "b=shard"
	}
	if c.k > 0 {
		s += fmt.Sprintf(" K=%d", c.k)
	}
	if c.e > 1 {
		s += fmt.Sprintf(" E=%d", c.e)
	}
	return s + fmt.Sprintf(" eta=%g", c.eta)
}

// puSweepKeys are the swept cells: logistic regression and the MLP at
// every epsilon, for the private algorithms and the non-private
// references.
func puSweepKeys() []puKey {
	var ks []puKey
	// Epsilon 8 (the goal's budget) first, so that an interrupted sweep
	// has it.
	for _, model := range puModels {
		private, nonPrivate := puAlgs(model)
		for _, e := range []float64{8, 0, 1, 4, 2} {
			algs := private
			if e == 0 {
				algs = nonPrivate
			}
			for _, alg := range algs {
				ks = append(ks, puKey{model, alg, e})
			}
		}
	}
	return ks
}

// puGrid is the sweep of k: batch sizes that leave several rounds of a
// single pass, K that divide them, and step sizes around the ones
// scripts/localtune chose at b = 100 (docs/results-notes.md).
func puGrid(k puKey) []puConf {
	bs, etas, ks := []int{50, 100, 200}, []float64{1, 3, 10}, []int{2, 5}
	switch {
	case k.model == puScatter:
		// The features' norm is about 63 against about 10 for the
		// pixels, so every per-sample correction is clipped harder and
		// the step sizes are smaller (docs/features.md's first sweeps:
		// b = 50, eta 0.05-0.3); b = 10 and 20 give the non-private
		// reference and trusted 5 and 2.5 times the steps.
		bs, etas = []int{10, 20, 50, 100}, []float64{0.05, 0.1, 0.2, 0.4, 0.8}
	case k.model == "mlp":
		bs, etas = []int{100}, []float64{0.3, 1, 3, 10}
	case k.eps == 8:
		// A wider grid at epsilon 8: b = 50 and eta = 1 are at the edge
		// of the narrower one.
		bs, etas = []int{20, 50, 100, 200}, []float64{0.3, 1, 3, 10}
	}
	var out []puConf
	if k.model == "logreg-unit" {
		// Several passes: a whole shard or b = 200 per round, K step
		// batches that divide both, E passes, eta <= 2 (the certificate).
		for _, c := range []puConf{{b: 200, k: 20, e: 16}, {b: puShard, k: 25, e: 25}} {
			for _, eta := range []float64{1, 2} {
				c.eta = eta
				out = append(out, c)
			}
		}
		return out
	}
	for _, b := range bs {
		for _, eta := range etas {
			if k.alg != "local" {
				out = append(out, puConf{b: b, eta: eta})
				continue
			}
			for _, kk := range ks {
				out = append(out, puConf{b: b, k: kk, eta: eta})
			}
		}
	}
	return out
}

// puExp is the run of k at c in the Table-1 setting's parameters for k at c on n training
// samples (one pass: T = n / (m b); the release cap of the IID partition,
// n/M samples per device).
func puExp(k puKey, c puConf, n int, seed uint64, prefix string) exp {
	r := puRow{alg: k.alg, model: k.model, batch: c.b, eta: map[float64]float64{k.eps: c.eta}, kAt: map[float64]int{k.eps: c.k}, eAt: map[float64]int{k.eps: c.e}}
	return r.runOn(n, k.eps, seed, prefix)
}

// puTest is the reported run of k at its chosen c, on the whole
// training set.
func puTest(k puKey, c puConf, seed uint64) exp { return puExp(k, c, nTrain, seed, "pu") }

// puTune runs (when its group is selected) or reads back the sweeps on
// the validation split and returns each key's choice (highest final
// validation accuracy; ties to the first) and the sweep tables by family
// (puFamily). A key whose sweep is not complete on disk has no choice.
func puTune(ctx context.Context, o options, train dataset.Set, dir string, only *regexp.Regexp, stderr io.Writer) (map[puKey]puConf, map[string]sweepTable, error) {
	fit, val, err := dataset.ValidationSplit(train)
	if err != nil {
		return nil, nil, err
	}
	builders := map[string]*strings.Builder{}
	tables := map[string]sweepTable{}
	choices := map[puKey]puConf{}
	for _, k := range puSweepKeys() {
		fam := puFamily(k.model)
		w := builders[fam]
		if w == nil {
			w = &strings.Builder{}
			builders[fam] = w
			fmt.Fprintf(w, "Sweeps on the validation split (%d training images, %d held out, seed 1; the test set is not read): final validation accuracy, best first.\n\n", fit.Len(), val.Len())
			fmt.Fprintln(w, "| model | algorithm | epsilon | chosen (validation accuracy) | runner-up | worst |\n|---|---|---|---|---|---|")
		}
		t := tables[fam]
		name := fmt.Sprintf("pu-tune-%s-eps%g", k.model, k.eps)
		// -only matches the sweep's name, or its name and algorithm
		// ("pu-tune-logreg-eps8/shared") to run one algorithm's sweeps.
		run := only == nil || only.MatchString(name) || only.MatchString(name+"/"+k.alg)
		type scored struct {
			c   puConf
			acc float64
		}
		var got []scored
		complete := true
		for _, c := range puGrid(k) {
			e := puExp(k, c, fit.Len(), 1, "put")
			var oc outcome
			var err error
			t.reads++
			if run {
				if !o.quiet {
					fmt.Fprintf(stderr, "%s: ", name)
				}
				oc, err = runOrRead(ctx, o, e, fit, val, dir, stderr)
			} else {
				oc, err = readOutcome(filepath.Join(dir, e.id+".csv.gz"))
			}
			if err != nil {
				if run {
					return nil, nil, err
				}
				complete = false
				continue
			}
			t.hits++
			acc := oc.acc
			if math.IsNaN(acc) {
				acc = 0
			}
			got = append(got, scored{c, acc})
		}
		tables[fam] = t
		if !complete || len(got) == 0 {
			fmt.Fprintf(w, "| %s | %s | %s | not run | | |\n", k.model, k.alg, epsName(k.eps))
			continue
		}
		best, worst, second := 0, 0, -1
		for i, s := range got {
			if s.acc > got[best].acc {
				best = i
			}
			if s.acc < got[worst].acc {
				worst = i
			}
		}
		for i, s := range got {
			if i != best && (second < 0 || s.acc > got[second].acc) {
				second = i
			}
		}
		choices[k] = got[best].c
		cell := func(i int) string {
			if i < 0 {
				return ""
			}
			return fmt.Sprintf("%s (%s)", got[i].c, pct(got[i].acc))
		}
		fmt.Fprintf(w, "| %s | %s | %s | **%s** | %s | %s |\n", k.model, k.alg, epsName(k.eps), cell(best), cell(second), cell(worst))
	}
	for fam, w := range builders {
		t := tables[fam]
		t.text = w.String()
		tables[fam] = t
	}
	return choices, tables, nil
}

func epsName(eps float64) string {
	if eps == 0 {
		return "non-private"
	}
	return fmt.Sprintf("%g", eps)
}

// sweepSize is the number of runs in the sweeps of a family (puFamily;
// for the docs).
func sweepSize(family string) int {
	n := 0
	for _, k := range puSweepKeys() {
		if puFamily(k.model) == family {
			n += len(puGrid(k))
		}
	}
	return n
}

// sweepFiles are the sweep tables' files under docs/results/, by family.
var sweepFiles = map[string]string{"pixels": "pu-tuning.md", puScatter: "pu-tuning-scatter.md"}

// writeSweepTable writes a family's sweep table to its file when every
// run of it is on disk, and otherwise leaves the file as it is (as the
// report keeps its section).
func writeSweepTable(dir, family string, t sweepTable, stderr io.Writer) error {
	path := filepath.Join(dir, sweepFiles[family])
	if t.reads == 0 || t.hits != t.reads {
		fmt.Fprintf(stderr, "flresults: %s kept as it was (%d of its %d sweep runs on disk)\n", path, t.hits, t.reads)
		return nil
	}
	if err := os.WriteFile(path, []byte(t.text), 0o644); err != nil {
		return fmt.Errorf("write sweep table: %w", err)
	}
	return nil
}
