// Command flsim runs one of the product's federated-learning algorithms
// offline, in one process, through the same server and device halves the
// coordinator and the browser run. It prints a progress bar, writes a
// per-round CSV (test accuracy, loss, uplink and downlink bytes, privacy
// spent per device) and a plot.
//
//	flsim -algorithm nc -M 100 -m 50 -rho 8 -out out/nc
//
// Run `flsim -h` for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/privacy/plan"
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

// options are the parsed flags.
type options struct {
	p                      optim.Params
	datasetName, dataDir   string
	partition              string
	trainSamples           int
	seed                   uint64
	evalEvery, evalSamples int
	reportDelta            float64
	out                    string
	plotExt                string
	quiet, paperConstants  bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("flsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: flsim [flags]\n\nAlgorithms: %s\n\nFlags:\n", strings.Join(optim.Names(), ", "))
		fs.PrintDefaults()
	}
	fs.StringVar(&o.p.Algorithm, "algorithm", "nc", "algorithm: "+strings.Join(optim.Names(), ", "))
	fs.StringVar(&o.p.Model, "model", "logreg", "model: logreg (d = 7,850) or mlp (784-64-10)")
	fs.StringVar(&o.datasetName, "dataset", "fashion-mnist", "dataset: fashion-mnist or mnist")
	fs.StringVar(&o.dataDir, "data-dir", "", "dataset directory (default: /usr/share/datasets/fashion-mnist, or data/mnist)")
	fs.StringVar(&o.partition, "partition", "iid", "partition over devices: iid, shards[:K], dirichlet:ALPHA")
	fs.IntVar(&o.trainSamples, "train-samples", 0, "use only the first n training samples (0 = all)")
	fs.IntVar(&o.p.M, "M", 100, "number of devices")
	fs.IntVar(&o.p.Cohort, "m", 50, "devices per round (cohort size)")
	fs.IntVar(&o.p.Rounds, "T", 0, "rounds (0 = one pass: n / (m b))")
	fs.IntVar(&o.p.Batch, "b", 1, "samples per device per round")
	fs.Float64Var(&o.p.Rho, "rho", 0, "privacy target: the papers' rho_p (each device rho_p^2/2-zCDP)")
	fs.Float64Var(&o.p.Epsilon, "epsilon", 0, "privacy target: epsilon per device (with -delta)")
	fs.Float64Var(&o.p.Delta, "delta", 0, "privacy target: delta per device (with -epsilon)")
	fs.Float64Var(&o.p.Clip, "clip", 1, "per-sample L2 clipping bound S (0 = G + 2LD)")
	fs.Float64Var(&o.p.G, "G", 0, "Lipschitz constant G (used when -clip 0)")
	fs.Float64Var(&o.p.L, "L", 0, "smoothness constant L (used when -clip 0)")
	fs.Float64Var(&o.p.Diameter, "D", 0, "diameter of the feasible ball (0 = unconstrained)")
	fs.BoolVar(&o.paperConstants, "paper-constants", false, "use the papers' G = sqrt(2*785), L = 785/2, D = 0.1 (S = 118.1); overrides -clip, -G, -L, -D")
	fs.Float64Var(&o.p.Eta, "eta", 0.5, "step size eta")
	fs.StringVar(&o.p.Compressor, "compressor", "", "uplink compressor: none, randk:FRAC, topk:FRAC, quant:BITSbit, ef+..., (default dense float32)")
	fs.IntVar(&o.p.LocalSize, "local-size", 0, "SVRG/SAGA local dataset size (0 = n / M)")
	fs.IntVar(&o.p.LocalSteps, "local-steps", 0, "local: hidden local steps K per round, each on b/K of the round's b samples (0 = b)")
	fs.Uint64Var(&o.seed, "seed", 1, "run seed (partition, cohorts, noise streams)")
	fs.IntVar(&o.evalEvery, "eval-every", 10, "evaluate on the test set every K rounds")
	fs.IntVar(&o.evalSamples, "eval-samples", 0, "evaluate on the first n test samples (0 = all)")
	fs.Float64Var(&o.reportDelta, "report-delta", plan.DefaultDelta, "the owner's delta, at which each device's epsilon is reported (as on the page; -delta only describes the target)")
	fs.StringVar(&o.out, "out", "", "output prefix: writes PREFIX.csv and PREFIX.svg (default: no files)")
	fs.StringVar(&o.plotExt, "plot", "svg", "plot format: svg, png or pdf")
	fs.BoolVar(&o.quiet, "q", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q (every option is a flag; see -h)", fs.Args())
	}
	if o.paperConstants {
		o.p.Clip, o.p.G, o.p.L, o.p.Diameter = 0, math.Sqrt(2*785), 785.0/2, 0.1
	}
	switch o.plotExt {
	case "svg", "png", "pdf":
	default:
		return o, fmt.Errorf("-plot %q: want svg, png or pdf", o.plotExt)
	}
	switch o.datasetName {
	case "fashion-mnist", "mnist":
	default:
		return o, fmt.Errorf("-dataset %q: want fashion-mnist or mnist", o.datasetName)
	}
	if o.trainSamples < 0 || o.evalSamples < 0 || o.evalEvery < 1 {
		return o, errors.New("-train-samples and -eval-samples must be >= 0, -eval-every >= 1")
	}
	if _, err := optim.Lookup(o.p.Algorithm); err != nil {
		return o, err
	}
	return o, nil
}

// loadData loads the named dataset from dir (or its default directory).
func loadData(name, dir string) (train, test dataset.Set, err error) {
	switch name {
	case "mnist":
		if dir == "" {
			dir = dataset.DefaultMNISTDir
		}
		return dataset.LoadMNIST(dir)
	default:
		if dir == "" {
			dir = dataset.DefaultFashionMNISTDir
		}
		return dataset.LoadFashionMNIST(dir)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	train, test, err := loadData(o.datasetName, o.dataDir)
	if err != nil {
		return err
	}
	if o.trainSamples > 0 {
		if train, err = train.Take(o.trainSamples); err != nil {
			return err
		}
	}
	if o.p.Rounds == 0 && o.p.Cohort > 0 && o.p.Batch > 0 {
		o.p.Rounds = len(train.Samples) / (o.p.Cohort * o.p.Batch)
	}
	scheme, err := dataset.ParseScheme(o.partition)
	if err != nil {
		return err
	}
	cfg := sim.Config{Params: o.p, Train: train, Test: test, Partition: scheme, Seed: o.seed,
		EvalEvery: o.evalEvery, EvalSamples: o.evalSamples, Delta: o.reportDelta}
	if !o.quiet {
		cfg.Progress = stderr
	}
	res, err := sim.Run(ctx, cfg)
	if err != nil && len(res.Records) == 0 {
		return err
	}
	if o.out != "" {
		if werr := writeOutputs(o, res); werr != nil {
			return errors.Join(err, werr)
		}
	}
	if err != nil {
		return fmt.Errorf("stopped after round %d (partial results written): %w", res.Rounds, err)
	}
	last := res.Records[len(res.Records)-1]
	fmt.Fprintf(stdout, "algorithm=%s model=%s M=%d m=%d T=%d b=%d S=%.4g eta=%g compressor=%q\n",
		o.p.Algorithm, o.p.Model, o.p.M, o.p.Cohort, o.p.Rounds, o.p.Batch, o.p.S(), o.p.Eta, o.p.Compressor)
	fmt.Fprintf(stdout, "rounds run %d, test accuracy %.4f, test loss %.4f, uplink %d bytes, downlink %d bytes, declined %d, %.1fs\n",
		res.Rounds, res.FinalAccuracy, res.FinalLoss, last.CumUplinkBytes, last.CumDownlinkBytes, res.Declined, res.Elapsed.Seconds())
	if f, err := plan.SessionFigures(o.p, reportDelta(o)); err == nil && f.Private {
		fmt.Fprintf(stdout, "session figures per device (worst case): %s\n", f.Text())
	}
	if last.MaxRho > 0 {
		fmt.Fprintf(stdout, "privacy spent per device (worst device): zCDP rho = %s, i.e. (epsilon = %s, delta = %s)-DP\n",
			plan.FormatRho(last.MaxRho), plan.FormatEpsilon(last.MaxEpsilon), plan.FormatDelta(reportDelta(o)))
	} else {
		fmt.Fprintln(stdout, "privacy: none (non-private or trusted-server algorithm: no device-side guarantee spent)")
	}
	return nil
}

func reportDelta(o options) float64 {
	if o.reportDelta > 0 {
		return o.reportDelta
	}
	return plan.DefaultDelta
}

func writeOutputs(o options, res sim.Result) error {
	if dir := filepath.Dir(o.out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create output directory: %w", err)
		}
	}
	f, err := os.Create(o.out + ".csv")
	if err != nil {
		return fmt.Errorf("create csv: %w", err)
	}
	if err := sim.WriteCSV(f, res.Records); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close csv: %w", err)
	}
	byRound, _ := sim.AccuracyCharts(fmt.Sprintf("%s, M=%d, m=%d", o.p.Algorithm, o.p.M, o.p.Cohort),
		map[string][]sim.Record{o.p.Algorithm: res.Records}, []string{o.p.Algorithm})
	return byRound.Save(o.out + "." + o.plotExt)
}
