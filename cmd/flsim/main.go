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
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
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
	scheme                 dataset.Scheme // -partition, parsed
	trainSamples           int
	seed                   uint64
	evalEvery, evalSamples int
	workers                int
	reportDelta            float64
	out                    string
	plotExt                string
	quiet, paperConstants  bool
	validate               bool
	eta                    string
	attack                 string
	attackers              int
	normOnly               bool
	attackCap              float64
	naiveAttack            bool
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
	fs.IntVar(&o.p.MaxReleases, "max-releases", -1, "the most releases one device makes (0 = T; -1 = for single-pass algorithms, what the largest device's shard holds)")
	fs.Float64Var(&o.p.Rho, "rho", 0, "privacy target: the papers' rho_p (each device rho_p^2/2-zCDP)")
	fs.Float64Var(&o.p.Epsilon, "epsilon", 0, fmt.Sprintf("privacy target: epsilon per device (with -delta; default for private algorithms without -rho: %g at delta %s, the page's default budget)", plan.DefaultBudgetEpsilon, plan.FormatDelta(plan.DefaultDelta)))
	fs.Float64Var(&o.p.Delta, "delta", 0, "privacy target: delta per device (with -epsilon)")
	fs.Float64Var(&o.p.Clip, "clip", 1, "per-sample L2 clipping bound S (0 = G + 2LD)")
	fs.Float64Var(&o.p.G, "G", 0, "Lipschitz constant G (used when -clip 0)")
	fs.Float64Var(&o.p.L, "L", 0, "smoothness constant L (used when -clip 0)")
	fs.Float64Var(&o.p.Diameter, "D", 0, "diameter of the feasible ball (0 = unconstrained)")
	fs.BoolVar(&o.paperConstants, "paper-constants", false, "use the papers' G = sqrt(2*785), L = 785/2, D = 0.1 (S = 118.1); overrides -clip, -G, -L, -D")
	fs.StringVar(&o.eta, "eta", "auto", "step size: auto (chosen on the validation split, sim.Tuned), theorem (Theorem 5.2's, optim.NCTheoremEta; needs -D or -paper-constants), or a number")
	fs.BoolVar(&o.validate, "validate", false, "train on the training part of the validation split and evaluate on its validation part (the test set is not read)")
	fs.StringVar(&o.p.Compressor, "compressor", "", "uplink compressor: none, randk:FRAC, topk:FRAC, quant:BITSbit, ef+..., (default dense float32)")
	fs.IntVar(&o.p.LocalSize, "local-size", 0, "SVRG/SAGA local dataset size (0 = n / M)")
	fs.IntVar(&o.p.LocalSteps, "local-steps", 0, "local: hidden local steps K per round, each on b/K of the round's b samples (0 = b)")
	fs.IntVar(&o.p.LocalEpochs, "local-epochs", 0, "local: passes E over the round's K step batches (E K hidden steps; 0 = 1); E > 1 is charged by the last-iterate bound when the model certifies it (logreg-unit, clip >= 2, eta <= 2, no -D), else E steps")
	fs.Uint64Var(&o.seed, "seed", 1, "run seed (partition, cohorts, noise streams)")
	fs.IntVar(&o.evalEvery, "eval-every", 0, "evaluate every K rounds for the CSV curve (0 = once, at the end); on the validation part with -validate, else on the test set")
	fs.IntVar(&o.evalSamples, "eval-samples", 0, "evaluate on the first n test samples (0 = all)")
	fs.Float64Var(&o.reportDelta, "report-delta", plan.DefaultDelta, "the owner's delta, at which each device's epsilon is reported (as on the page; -delta only describes the target)")
	fs.StringVar(&o.out, "out", "", "output prefix: writes PREFIX.csv and PREFIX.svg (default: no files)")
	fs.StringVar(&o.plotExt, "plot", "svg", "plot format: svg, png or pdf")
	fs.IntVar(&o.workers, "workers", runtime.GOMAXPROCS(0), "device steps and evaluations run on this many goroutines (results do not depend on it)")
	fs.BoolVar(&o.quiet, "q", false, "no progress bar")
	fs.StringVar(&o.attack, "attack", "", "hostile devices send this instead of their update, as strong as the server's tests allow: "+strings.Join(sim.AttackKinds, ", ")+" (docs/security.md)")
	fs.IntVar(&o.attackers, "attackers", 1, "with -attack: how many devices are hostile")
	fs.Float64Var(&o.attackCap, "attack-cap", 0, "with -attack: each hostile message's norm is at most this (0 = as large as the tests allow)")
	fs.BoolVar(&o.naiveAttack, "naive-attack", false, "with -attack: hostile devices assume the server applies only the norm bound (the other tests then refuse them)")
	fs.BoolVar(&o.normOnly, "norm-only", false, "the server applies only the L2 norm bound to each update (the tests before issue 23), to measure what the others buy")
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
	if o.trainSamples < 0 || o.evalSamples < 0 || o.evalEvery < 0 {
		return o, errors.New("-train-samples, -eval-samples and -eval-every must be >= 0")
	}
	if o.attack == "" {
		o.attackers = 0
	} else if o.attackers < 1 {
		return o, fmt.Errorf("-attackers %d: want >= 1 with -attack", o.attackers)
	}
	if o.attackCap < 0 || math.IsNaN(o.attackCap) {
		return o, fmt.Errorf("-attack-cap %v: want >= 0", o.attackCap)
	}
	if o.workers < 1 {
		return o, fmt.Errorf("-workers %d: want >= 1", o.workers)
	}
	if o.p.MaxReleases < -1 {
		return o, fmt.Errorf("-max-releases %d: want -1 (from the data), 0 (= T) or a count", o.p.MaxReleases)
	}
	if _, err := optim.Lookup(o.p.Algorithm); err != nil {
		return o, err
	}
	switch o.eta {
	case "auto", "theorem":
	default:
		v, err := strconv.ParseFloat(o.eta, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return o, fmt.Errorf("-eta %q: want auto, theorem or a finite number > 0", o.eta)
		}
		o.p.Eta = v
	}
	if o.p.Private() && o.p.Rho == 0 && o.p.Epsilon == 0 {
		o.p.Epsilon = plan.DefaultBudgetEpsilon
		if o.p.Delta == 0 {
			o.p.Delta = plan.DefaultDelta
		}
	}
	// Every check that does not need the data, before it loads (tens of
	// seconds for Fashion-MNIST); sim.Run checks the whole again.
	var err error
	if o.scheme, err = dataset.ParseScheme(o.partition); err != nil {
		return o, err
	}
	if o.eta == "theorem" {
		if err := theoremEtaUsable(o.p); err != nil {
			return o, err
		}
	}
	if err := withoutData(o).Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// withoutData is o's parameters with a stand-in that passes
// optim.Params.Validate for each field the data decides (T = 0, -eta auto
// or theorem, -max-releases -1, the SVRG/SAGA local size n / M), so the
// flags are checked before the data loads.
func withoutData(o options) optim.Params {
	p := o.p
	if p.Rounds == 0 {
		p.Rounds = math.MaxInt32
	}
	if o.eta == "auto" || o.eta == "theorem" {
		p.Eta = 1
	}
	if p.MaxReleases == -1 {
		p.MaxReleases = 0
	}
	if p.LocalSize == 0 {
		p.LocalSize = max(p.Batch, 1)
	}
	return p
}

// theoremEtaUsable says whether Theorem 5.2's step size applies to p.
func theoremEtaUsable(p optim.Params) error {
	if !p.Private() || !(p.Diameter > 0) {
		return errors.New("-eta theorem: Theorem 5.2's step size needs a private algorithm and a diameter (-D or -paper-constants)")
	}
	return nil
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
	case "theorem":
		if err := theoremEtaUsable(*p); err != nil {
			return err
		}
		p.Eta = optim.NCTheoremEta(*p, d)
	}
	return nil
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
	o.p = cfg.Params
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
	fmt.Fprintf(stdout, "algorithm=%s model=%s M=%d m=%d T=%d b=%d S=%.4g eta=%.4g (%s) max releases=%d compressor=%q\n",
		o.p.Algorithm, o.p.Model, o.p.M, o.p.Cohort, o.p.Rounds, o.p.Batch, o.p.S(), o.p.Eta, o.eta, o.p.ReleaseCap(), o.p.Compressor)
	fmt.Fprintf(stdout, "rounds run %d, %s accuracy %.4f, %s loss %.4f, uplink %d bytes, downlink %d bytes, declined %d, %.1fs\n",
		res.Rounds, evalName, res.FinalAccuracy, evalName, res.FinalLoss, last.CumUplinkBytes, last.CumDownlinkBytes, res.Declined, res.Elapsed.Seconds())
	if o.attack != "" || res.RejectedHonest > 0 || res.RejectedHostile > 0 {
		fmt.Fprintf(stdout, "attack %q by %d of %d devices: updates refused: %d hostile, %d honest\n",
			o.attack, o.attackers, o.p.M, res.RejectedHostile, res.RejectedHonest)
	}
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
