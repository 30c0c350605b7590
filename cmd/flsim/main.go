// Command flsim runs one of the product's federated-learning algorithms
// offline, in one process, through the same server and device halves the
// coordinator and the browser run. It prints a progress bar, writes a
// per-round CSV (accuracy, loss, uplink and downlink bytes, privacy spent
// per device) and a plot.
//
//	flsim                                     # nc, Table 1 setting, epsilon 8 at delta 1e-5
//	flsim -algorithm nc -M 100 -m 50 -rho 8 -out out/nc
//	flsim -validate -eta 0.003                # try a step size on the validation split
//	flsim -eta theorem -paper-constants       # the paper's Theorem 5.2 step size
//
// Defaults: the step size is the one chosen on the validation split for
// the algorithm (sim.Tuned; with -paper-constants sim.TunedPaper), the
// privacy target is the page's default budget (epsilon 8 at delta 1e-5),
// and a single-pass session's release cap is what the largest device's
// shard holds (sim.SinglePassCap). The test set is evaluated once, at the
// end, unless -eval-every asks for a curve; with -validate the run trains
// on the training part of dataset.ValidationSplit and evaluates on its
// validation part only (for choosing hyperparameters).
//
// Run `flsim -h` for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
	"browserfl/sim"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "flsim:", err)
		os.Exit(2)
	}
}

// stepSize fills p.Eta for -eta auto or theorem (model dimension d).
func stepSize(o options, p *optim.Params, d int) error {
	switch o.eta {
	case "auto":
		steps := sim.Tuned
		if o.paperConstants {
			steps = sim.TunedPaper
		}
		p.Eta = steps.Eta(*p, d)
		if o.rowTask != nil && sim.MuSquared(p.Algorithm) {
			p.Eta = o.rowTask.Eta
		}
	case "theorem":
		if err := theoremEtaUsable(*p); err != nil {
			return err
		}
		p.Eta = algo.NCTheoremEta(*p, d)
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.out != "" {
		// Before the data load and the run: a run must not be lost to
		// a place it cannot write.
		if err := checkOut(o.out, o.plotExt); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var train, test dataset.Set
	if o.def != nil {
		train, test, err = loadRows(o.def, o.rows, o.test)
	} else {
		train, test, err = loadData(o.taskName, o.datasetName, o.dataDir)
	}
	if err != nil {
		return err
	}
	if o.trainSamples > 0 {
		if train, err = train.Take(o.trainSamples); err != nil {
			return err
		}
	}
	if o.features == plan.FeaturesScatter {
		if train, test, err = scatterBoth(train, test, o.workers); err != nil {
			return err
		}
	}
	evalName := "test"
	if o.validate {
		// Choose on the validation split; the test set is not read.
		if train, test, err = dataset.ValidationSplit(train); err != nil {
			return err
		}
		evalName = "validation"
	}
	if o.p.Rounds == 0 && o.p.Cohort > 0 && o.p.Batch > 0 {
		o.p.Rounds = len(train.Samples) / (o.p.Cohort * o.p.Batch)
	}
	if o.evalEvery == 0 {
		o.evalEvery = max(o.p.Rounds, 1) // once, after the last round
	}
	cfg := sim.Config{Params: o.p, Train: train, Test: test, Partition: o.scheme, Seed: o.seed,
		EvalEvery: o.evalEvery, EvalSamples: o.evalSamples, Delta: o.reportDelta, Workers: o.workers,
		Attack: o.attack, Attackers: o.attackers, NormOnly: o.normOnly, AttackCap: o.attackCap, NaiveAttack: o.naiveAttack}
	if cfg.Params.MaxReleases == -1 {
		cfg.Params.MaxReleases = 0
		if cfg.Params.MaxReleases, err = sim.SinglePassCap(cfg); err != nil {
			return err
		}
	}
	m, err := model.New(o.p.Model, train.Features, train.Classes)
	if err != nil {
		return err
	}
	if err := stepSize(o, &cfg.Params, m.Dim()); err != nil {
		return err
	}
	// The model's shape, as sim.Run sets it: the stated figures
	// (plan.SessionFigures) are then the devices' own.
	cfg.Params.Features, cfg.Params.Classes = train.Features, train.Classes
	o.p = cfg.Params
	if !o.quiet {
		cfg.Progress = stderr
	}
	res, err := sim.Run(ctx, cfg)
	if len(res.Records) == 0 {
		if err == nil {
			err = errors.New("no round ran: every device declined the first (its budget or its data)")
		}
		return err
	}
	o.p = res.Params
	if o.out != "" {
		if werr := writeOutputs(o, res, evalName); werr != nil {
			return errors.Join(err, werr)
		}
	}
	printSummary(stdout, o, res, evalName)
	if err != nil {
		written := ""
		if o.out != "" {
			written = ", written to " + o.out + ".csv"
		}
		return fmt.Errorf("stopped after round %d (the results so far are above%s): %w", res.Rounds, written, err)
	}
	return nil
}
