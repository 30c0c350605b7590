package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/sim"
)

// The privacy-utility table: the noise-cancellation
// paper's Table-1 setting (Fashion-MNIST, M = 100, m = 50, one pass, the
// release cap of the IID partition) at a per-device epsilon in
// puEpsilons at delta = plan.DefaultDelta, over puSeeds.
var (
	puEpsilons = []float64{1, 2, 4, 8}
	puSeeds    = []uint64{1, 2, 3}
)

const (
	// puScatter is the model family of the feature rows: logistic
	// regression over each picture's scattering features (docs/features.md).
	puScatter = "scatter"
	puShard   = -1    // puRow.batch: a device's whole shard (n/M) in one round
	mlpDim    = 50890 // 784-64-10 (model.New("mlp", 784, 10))
	puCohort  = 50
)

// puRow is one row of the table: an algorithm at a batch size, with its
// step size (0: sim.Tuned's, scaled as sim.StepSizes.Eta scales it) and
// local steps, and the epsilons and seeds it was run at.
type puRow struct {
	alg, model string
	batch      int
	// eta maps epsilon to the step size chosen on the validation split at
	// that epsilon (0 or missing: sim.Tuned.Eta).
	eta map[float64]float64
	// kAt maps epsilon to local steps K (local only).
	kAt map[float64]int
	// eAt maps epsilon to local passes E (local only; 0: one).
	eAt   map[float64]int
	eps   []float64 // nil: non-private
	seeds []uint64
	// sameAs names the row this one is identical to (not run).
	sameAs string
	note   string
}

// puRows are the Table-1 rows at b = 1 (the paper's batch size), with
// the step sizes of sim.Tuned (chosen on the validation split at rho_p =
// 8) scaled to each epsilon as Theorem 5.2's step size scales. The rows
// with b, K and eta chosen per epsilon on the validation split are
// puTunedRows.
func puRows() []puRow {
	all := puSeeds
	return []puRow{
		{alg: "nc", model: "logreg", batch: 1, eps: puEpsilons, seeds: all},
		{alg: "trusted", model: "logreg", batch: 1, eps: puEpsilons, seeds: all},
		{alg: "noisysgd", model: "logreg", batch: 1, eps: puEpsilons, seeds: all},
		{alg: "local", model: "logreg", batch: 1, eps: puEpsilons, sameAs: "noisysgd",
			note: "at b = 1 the only K is 1, which is `noisysgd` exactly (docs/privacy.md 4b)"},
		{alg: "mu2", model: "logreg", batch: 1, seeds: all, note: "non-private"},
		{alg: "sgd", model: "logreg", batch: 1, seeds: all, note: "non-private"},
	}
}

// run is the experiment of row r at epsilon eps (0: non-private) and seed.
func (r puRow) run(eps float64, seed uint64) exp { return r.runOn(nTrain, eps, seed, "pu") }

// runOn is r's run at eps and seed on n training samples, its id
// starting with prefix.
func (r puRow) runOn(n int, eps float64, seed uint64, prefix string) exp {
	b, bName := r.batch, fmt.Sprint(r.batch)
	if b == puShard {
		b, bName = n/100, "shard" // a device's whole shard in one round
	}
	mdl, features, d, in := r.model, "", logRegDim, 784
	switch r.model {
	case "mlp":
		d = mlpDim
	case puScatter:
		// Logistic regression over each picture's scattering features.
		mdl, features, d, in = "logreg", plan.FeaturesScatter, scatterDim, scatterDim/10-1
	}
	// The model's input and classes, as the simulator sets them from the
	// dataset: the figures (plan.SessionFigures) read the model's
	// dimension, which a shared-noise session's promise needs.
	p := optim.Params{Algorithm: r.alg, Model: mdl, Features: in, Classes: 10, M: 100, Cohort: puCohort, Rounds: n / (puCohort * b), Batch: b}
	ourConsts.apply(&p)
	if G, _, ok := model.Convexity(r.model); ok {
		p.Clip = G // the certified gradient bound: nothing is clipped
	}
	if eps > 0 {
		p.Epsilon, p.Delta = eps, plan.DefaultDelta
	}
	p.Eta = ourConsts.steps.Eta(p, d)
	if e := r.eta[eps]; e > 0 {
		p.Eta = e
	}
	if r.alg == "local" {
		p.LocalSteps = max(1, r.kAt[eps])
		p.LocalEpochs = r.eAt[eps]
	}
	if p.Rounds*p.Cohort*p.Batch > n {
		panic("privacy-utility run beyond one pass")
	}
	// The release cap of the IID partition: every device holds
	// nTrain/M samples (runOrRead checks it against sim.SinglePassCap).
	p.MaxReleases = p.SinglePassReleases(n / p.M)
	id := fmt.Sprintf("%s-%s-%s-b%s", prefix, r.model, r.alg, bName)
	if r.alg == "local" {
		id += fmt.Sprintf("-K%d", p.LocalSteps)
		if p.LocalEpochs > 1 {
			id += fmt.Sprintf("-E%d", p.LocalEpochs)
		}
	}
	id += fmt.Sprintf("-eta%g", p.Eta)
	if eps > 0 {
		id += fmt.Sprintf("-eps%g", eps)
	}
	id += fmt.Sprintf("-s%d", seed)
	return exp{id: id, label: fmt.Sprintf("%s eps=%g seed=%d", r.alg, eps, seed), p: p, seed: seed, delta: plan.DefaultDelta, features: features}
}

func (r puRow) cells() [][]exp {
	if r.sameAs != "" {
		return nil
	}
	var out [][]exp
	targets := r.eps
	if targets == nil {
		targets = []float64{0}
	}
	for _, eps := range targets {
		var es []exp
		for _, s := range r.seeds {
			es = append(es, r.run(eps, s))
		}
		out = append(out, es)
	}
	return out
}

// privacyUtilityGroups are the table's test runs: the b = 1 rows, then
// per model the rows chosen on the validation split (choices, from
// puTune; a key without a choice has no runs yet). Ordered so that an
// interrupted run has all seeds of the first epsilons.
func privacyUtilityGroups(choices map[puKey]puConf) []group {
	var gs []group
	for _, eps := range []float64{8, 0, 1, 4, 2} {
		name := fmt.Sprintf("privacy-utility-b1-eps%g", eps)
		if eps == 0 {
			name = "privacy-utility-b1-nonprivate"
		}
		g := group{name: name, title: "Privacy-utility table, b = 1"}
		for _, s := range puSeeds {
			for _, r := range puRows() {
				if r.sameAs != "" || (eps == 0) != (r.eps == nil) {
					continue
				}
				g.runs = append(g.runs, r.run(eps, s))
			}
		}
		gs = append(gs, g)
	}
	for _, model := range puModels {
		g := group{name: "privacy-utility-" + model + "-tuned", title: "Privacy-utility table, " + model + ", chosen on validation"}
		for _, s := range puSeeds {
			for _, k := range puSweepKeys() {
				if c, ok := choices[k]; ok && k.model == model {
					g.runs = append(g.runs, puTest(k, c, s))
				}
			}
		}
		gs = append(gs, g)
	}
	return gs
}

// meanSD formats the accuracies of the runs on disk as mean ± sd
// (sample standard deviation), with the number of seeds when it is not
// all of them.
func meanSD(es []exp, res *results) string {
	var accs []float64
	var each []string
	for _, e := range es {
		if oc, ok := res.get(e.id); ok && !math.IsNaN(oc.acc) {
			accs = append(accs, oc.acc)
			each = append(each, fmt.Sprintf("%.1f", 100*oc.acc))
		}
	}
	if len(accs) == 0 {
		return "not run"
	}
	mean := 0.0
	for _, a := range accs {
		mean += a
	}
	mean /= float64(len(accs))
	if len(accs) == 1 {
		return fmt.Sprintf("%.1f%% (1 seed)", 100*mean)
	}
	ss := 0.0
	for _, a := range accs {
		ss += (a - mean) * (a - mean)
	}
	sd := math.Sqrt(ss / float64(len(accs)-1))
	s := fmt.Sprintf("%.1f ± %.1f%%", 100*mean, 100*sd)
	if len(accs) < len(es) {
		s += fmt.Sprintf(" (%d seeds: %s)", len(accs), strings.Join(each, " / "))
	}
	return s
}

// figuresEps is the session's per-device epsilon at plan.DefaultDelta as every
// surface states it (plan.SessionFigures, the one home of the figures).
func figuresEps(p optim.Params) string {
	f, err := plan.SessionFigures(p, plan.DefaultDelta)
	if err != nil {
		return "error: " + err.Error()
	}
	if !f.Private {
		return "∞"
	}
	return f.EpsilonText()
}

// puReport is what the privacy-utility section needs besides the runs:
// the sweeps' choices and their tables.
type puReport struct {
	choices map[puKey]puConf
	// sweeps are the sweep tables by family (puFamily), with how many of
	// their runs were looked up and found on disk.
	sweeps map[string]sweepTable
	// tasks is the row tasks' table (TasksTable), "" to leave it out.
	tasks string
}

// sweepTable is one family's sweep table and its lookups.
type sweepTable struct {
	text        string
	reads, hits int
}

// puFamily is the sweep table a model's sweeps are listed in: the
// pixels' (results/pu-tuning.md) or the features' (results/pu-tuning-scatter.md).
func puFamily(model string) string {
	if model == puScatter {
		return puScatter
	}
	return "pixels"
}

// writePrivacyUtility adds the privacy-utility sections: the pixel
// models' table, the feature rows with their sweeps, and the pixel
// models' sweeps.
func writePrivacyUtility(sw *sectionWriter, pu puReport) {
	px := pu.sweeps["pixels"]
	sw.add("privacy-utility", func(b *strings.Builder) {
		b.WriteString(puHeader)
		b.WriteString("**Table-1 setting, b = 1** (logistic regression):\n\n")
		puHead(b, "algorithm")
		for _, r := range puRows() {
			fmt.Fprintf(b, "| `%s` |", r.alg)
			if r.sameAs != "" {
				for range puEpsilons {
					fmt.Fprintf(b, " = `%s` |", r.sameAs)
				}
				fmt.Fprintf(b, " %s |\n", r.note)
				continue
			}
			cells := r.cells()
			var etas []string
			if r.eps == nil {
				es := cells[0]
				fmt.Fprintf(b, " %s (%s) |%s", meanSD(es, sw.res), r.note, strings.Repeat(" |", len(puEpsilons)-1))
				etas = append(etas, fmt.Sprintf("%.3g", es[0].p.Eta))
			} else {
				for i, es := range cells {
					fmt.Fprintf(b, " %s<br>epsilon %s |", meanSD(es, sw.res), figuresEps(es[0].p))
					etas = append(etas, fmt.Sprintf("%g: %.3g", r.eps[i], es[0].p.Eta))
				}
			}
			fmt.Fprintf(b, " %s |\n", strings.Join(etas, ", "))
		}
		b.WriteString(puTunedHeader)
		for _, model := range puModels {
			if model != puScatter {
				puTunedTable(b, model, sw.res, pu)
			}
		}
	}, px)
	sw.add("privacy-utility-scatter", func(b *strings.Builder) {
		puTunedTable(b, puScatter, sw.res, pu)
		b.WriteString(puScatterNote)
		b.WriteString(pu.sweeps[puScatter].text)
	}, pu.sweeps[puScatter])
	sw.add("pu-sweeps", func(b *strings.Builder) {
		fmt.Fprintf(b, "\nThe sweeps (%d runs; `go run ./cmd/flresults -only pu-tune`; also in results/pu-tuning.md):\n\n%s", sweepSize("pixels"), px.text)
		fmt.Fprintf(b, "\nReference for the b = 1 step sizes: sim.Tuned = {mu^2: %g, SGD: %g} at rho_p = 8, T = %d (validation split).\n",
			sim.Tuned.Mu2, sim.Tuned.SGD, sim.ReferenceRounds)
	}, px)
}

// puHead writes the header of a privacy-utility table.
func puHead(b *strings.Builder, first string) {
	fmt.Fprintf(b, "| %s | ", first)
	for _, eps := range puEpsilons {
		fmt.Fprintf(b, "epsilon = %g | ", eps)
	}
	b.WriteString("step size (eta) |\n|---|")
	for range puEpsilons {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
}

// puTunedTable writes the rows of model chosen on the validation split.
func puTunedTable(b *strings.Builder, model string, res *results, pu puReport) {
	fmt.Fprintf(b, "\n%s:\n\n", modelTitle(model))
	puHead(b, "algorithm (b, K, eta chosen on validation per epsilon)")
	private, nonPrivate := puAlgs(model)
	for _, alg := range append(append([]string{}, private...), nonPrivate...) {
		fmt.Fprintf(b, "| `%s` |", alg)
		isPrivate := slices.Contains(private, alg)
		var confs []string
		for i, eps := range puEpsilons {
			key := puKey{model, alg, eps}
			if !isPrivate {
				key.eps = 0
			}
			c, ok := pu.choices[key]
			if !isPrivate && i > 0 {
				b.WriteString(" |")
				continue
			}
			if !ok {
				b.WriteString(" no sweep (time) |")
				continue
			}
			var es []exp
			for _, s := range puSeeds {
				es = append(es, puTest(key, c, s))
			}
			if isPrivate {
				fmt.Fprintf(b, " %s<br>epsilon %s |", meanSD(es, res), figuresEps(es[0].p))
				confs = append(confs, fmt.Sprintf("%g: %s", eps, c))
			} else {
				fmt.Fprintf(b, " %s (non-private) |", meanSD(es, res))
				confs = append(confs, c.String())
			}
		}
		fmt.Fprintf(b, " %s |\n", strings.Join(confs, "; "))
	}
}

func modelTitle(model string) string {
	if model == puScatter {
		return "**Extra rows, logistic regression on scattering features** (each picture's scattering transform, J = 2, L = 8, 3,969 features normalised per picture, computed on the device from its own pictures alone, so they cost no privacy; d = 39,700; docs/features.md), one pass, b and eta chosen on the validation split"
	}
	if model == "logreg-unit" {
		return "**Extra row, `local` with E passes by output perturbation** (`logreg-unit`: logistic regression on inputs scaled to norm 1, so S = 2 clips nothing and a step of eta <= 2 is nonexpansive; the K E hidden steps run without noise and the last iterate gets one noise vector calibrated to E Delta, charged one step's zCDP, docs/privacy.md 4b), one pass, b (shard: a device's whole shard in one round), K, E and eta chosen on the validation split"
	}
	if model == "mlp" {
		return "**Extra rows, MLP** (784-64-10, d = 50,890), one pass, b, K and eta chosen on the validation split"
	}
	return "**Extra rows, logistic regression**, one pass, b, K and eta chosen on the validation split (not the Table-1 b = 1)"
}
