package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/sim"
)

// tuning is one step-size sweep: an algorithm family under one set of
// constants, at the reference setting (sim.ReferenceParams), trained on
// the training part of dataset.ValidationSplit and scored on its
// validation part. The test set plays no part.
type tuning struct {
	c      constants
	family string    // "mu2" (the mu^2 family, run as "nc") or "sgd" (run as "noisysgd")
	grid   []float64 // step sizes tried at the reference setting
}

// tunings are the sweeps behind sim.Tuned and sim.TunedPaper. The mu^2
// family with the papers' constants takes Theorem 5.2's step size (the
// papers' choice), so it has no sweep.
func tunings() []tuning {
	return []tuning{
		{ourConsts, "mu2", []float64{1e-4, 3e-4, 1e-3, 3e-3, 1e-2}},
		{ourConsts, "sgd", []float64{0.03, 0.1, 0.3, 1}},
		{paperConsts, "sgd", []float64{1e-4, 1e-3, 1e-2}},
	}
}

func (tu tuning) alg() string {
	if tu.family == "sgd" {
		return "noisysgd"
	}
	return "nc"
}

// chosen is the step size the constants hold for the family.
func (tu tuning) chosen() float64 {
	if tu.family == "sgd" {
		return tu.c.steps.SGD
	}
	return tu.c.steps.Mu2
}

func (tu tuning) run(eta float64) exp {
	p := sim.ReferenceParams(tu.alg(), optim.Params{Clip: tu.c.clip, G: tu.c.g, L: tu.c.l, Diameter: tu.c.d})
	p.Eta = eta
	return exp{id: fmt.Sprintf("tune-%s-%s-eta%g", tu.c.name, tu.family, eta), label: fmt.Sprintf("eta=%g", eta), p: p}
}

// tune runs (or reads back) every sweep on the validation split and
// checks that the step sizes the reported runs use are the sweeps'
// choices (highest final validation accuracy). It writes the sweeps as a
// markdown table to w.
func tune(ctx context.Context, o options, train dataset.Set, dir string, w, stderr io.Writer) error {
	fit, val, err := dataset.ValidationSplit(train)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Step sizes chosen on the validation split (%d training images, %d held out; the test set is not read): final validation accuracy at the reference setting (M = 100, m = 50, T = %d, b = 1, rho_p = 8).\n\n",
		fit.Len(), val.Len(), sim.ReferenceRounds)
	fmt.Fprintln(w, "| constants | family | eta: validation accuracy | chosen |\n|---|---|---|---|")
	var errs []error
	for _, tu := range tunings() {
		best, bestAcc := math.NaN(), math.Inf(-1)
		var cells []string
		for _, eta := range tu.grid {
			e := tu.run(eta)
			oc, err := runOrRead(ctx, o, e, fit, val, dir, stderr)
			if err != nil {
				return err
			}
			cells = append(cells, fmt.Sprintf("%g: %s", eta, pct(oc.acc)))
			if oc.acc > bestAcc {
				best, bestAcc = eta, oc.acc
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | **%g** |\n", tu.c.name, tu.family, strings.Join(cells, ", "), best)
		if best != tu.chosen() {
			errs = append(errs, fmt.Errorf("%s/%s: the validation sweep chooses eta = %g, the runs would use %g: update sim.Tuned or sim.TunedPaper (the one home of the step sizes)", tu.c.name, tu.family, best, tu.chosen()))
		}
	}
	return errors.Join(errs...)
}

// runOrRead returns e's outcome from its file under dir, running it first
// (on train, evaluated on eval) when the file is missing or o.fresh.
func runOrRead(ctx context.Context, o options, e exp, train, eval dataset.Set, dir string, stderr io.Writer) (outcome, error) {
	path := filepath.Join(dir, e.id+".csv.gz")
	if !o.fresh {
		if oc, err := readOutcome(path); err == nil {
			return oc, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return outcome{}, err
		}
	}
	seed := o.seed
	if e.seed != 0 {
		seed = e.seed
	}
	if e.features != "" {
		var err error
		if train, err = o.feats.of(e.features, train); err != nil {
			return outcome{}, fmt.Errorf("%s: %w", e.id, err)
		}
		if eval, err = o.feats.of(e.features, eval); err != nil {
			return outcome{}, fmt.Errorf("%s: %w", e.id, err)
		}
	}
	cfg := sim.Config{Params: e.p, Train: train, Test: eval, Partition: dataset.Scheme{Kind: dataset.SchemeIID},
		Seed: seed, EvalEvery: e.evalEvery(), Delta: e.delta}
	if err := capReleases(&cfg); err != nil {
		return outcome{}, fmt.Errorf("%s: %w", e.id, err)
	}
	if !o.quiet {
		cfg.Progress = stderr
		fmt.Fprintf(stderr, "%s\n", e.id)
	}
	res, err := sim.Run(ctx, cfg)
	if err != nil {
		return outcome{}, fmt.Errorf("%s: %w", e.id, err)
	}
	if err := writeRun(path, res.Records); err != nil {
		return outcome{}, err
	}
	return summarize(res.Records), nil
}

// capReleases sets the session's release cap for a single-pass algorithm
// to what the largest device's data holds (sim.SinglePassCap), as the
// owner of a real session would, so the noise uses the whole budget.
//
// A run whose cap is already set (the privacy-utility runs set it so the
// report can state their figures without the data) must have the cap
// the partition gives: a smaller one would state too small an epsilon.
func capReleases(cfg *sim.Config) error {
	k, err := sim.SinglePassCap(*cfg)
	if err != nil {
		return err
	}
	if cfg.Params.MaxReleases != 0 {
		if cfg.Params.MaxReleases != k {
			return fmt.Errorf("release cap %d, the partition's is %d", cfg.Params.MaxReleases, k)
		}
		return nil
	}
	cfg.Params.MaxReleases = k
	return nil
}
