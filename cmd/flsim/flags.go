package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"browserfl/internal/sessionflag"
	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
	"browserfl/shared/session"
	"browserfl/shared/task"
	"browserfl/sim"
)

// options are the parsed flags.
type options struct {
	p                    optim.Params
	datasetName, dataDir string
	taskName             string
	taskFile, rows, test string           // -task-file, -rows, -test-rows
	def                  *task.Definition // -task-file's task, read by parseFlags
	// rowTask is -task's built-in row task (nil for pictures), whose
	// Eta (for the mu^2 family with -eta auto) and Clip (unless -clip
	// is given) are the defaults, as the coordinator's.
	rowTask                *task.Builtin
	given                  []string // the flags on the command line
	features               string
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
		fmt.Fprintf(stderr, "usage: flsim [flags]\n\nAlgorithms: %s\n\nFlags:\n", strings.Join(algo.Names(), ", "))
		fs.PrintDefaults()
	}
	defineFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q (every option is a flag; see -h)", fs.Args())
	}
	if err := o.readTaskFile(fs); err != nil {
		return o, err
	}
	fs.Visit(func(f *flag.Flag) { o.given = append(o.given, f.Name) })
	err := o.check()
	return o, err
}

// defineFlags defines the flags into o: the session's (internal/sessionflag),
// with flsim's defaults, then its own.
func defineFlags(fs *flag.FlagSet, o *options) {
	o.p = optim.Params{Algorithm: "nc", Model: "logreg", M: 100, Cohort: 50, Batch: 1, MaxReleases: -1, Clip: 1}
	sessionflag.Register(fs, &o.p, "algorithm", "model", "M", "m", "b", "rho", "G", "L", "D",
		"compressor", "signal-bound", "threshold", "colluders", "local-steps", "local-epochs")
	sessionflag.RegisterFlags(fs, &o.p,
		sessionflag.Flag{Name: "T", Note: "0 = one pass: n / (m b)"},
		sessionflag.Flag{Name: "max-releases", Note: "-1 = for single-pass algorithms, what the largest device's shard holds"},
		sessionflag.Flag{Name: "epsilon", Note: fmt.Sprintf("default for private algorithms without -rho: %g at delta %s, the page's default budget", plan.DefaultBudgetEpsilon, plan.FormatDelta(plan.DefaultDelta))},
		sessionflag.Flag{Name: "clip", Note: "default 1, or the -task row task's; a row task's run takes its lesson's M, m, T and b too unless given"},
		sessionflag.Flag{Name: "local-size", Note: "0 = n / M"},
		sessionflag.Flag{Name: "delta", Note: fmt.Sprintf("default with -epsilon: %s, the page's", plan.FormatDelta(plan.DefaultDelta))})
	fs.StringVar(&o.datasetName, "dataset", "fashion-mnist", "dataset: fashion-mnist or mnist")
	fs.StringVar(&o.dataDir, "data-dir", "", "dataset directory (default: /usr/share/datasets/fashion-mnist, or data/mnist, or the task's)")
	// -features is flsim's own, not the session's transform: flsim
	// computes the features of its data itself before the run
	// (scatterBoth), and its devices train on them as given.
	fs.StringVar(&o.features, "features", "", "compute features of each image before training: scatter (the scattering transform, J = 2, L = 8, per-image normalisation; docs/features.md)")
	fs.StringVar(&o.taskName, "task", "", "the task instead of -dataset: "+strings.Join(task.Names(), ", ")+" (docs/tasks.md)")
	fs.StringVar(&o.taskFile, "task-file", "", "a task definition (browserfl.task/v1 JSON, docs/tasks.md) instead of -dataset, read as the coordinator reads it: its model and its privacy target, if it states one; with -rows and -test-rows")
	fs.StringVar(&o.rows, "rows", "", "with -task-file: a CSV file of the task's training rows (the students' CSV format, docs/tasks.md), dealt to the devices by -partition")
	fs.StringVar(&o.test, "test-rows", "", "with -task-file: a CSV file of the task's test rows")
	fs.StringVar(&o.partition, "partition", "iid", "partition over devices: iid, shards[:K], dirichlet:ALPHA")
	fs.IntVar(&o.trainSamples, "train-samples", 0, "use only the first n training samples (0 = all)")
	fs.BoolVar(&o.paperConstants, "paper-constants", false, "use the papers' G = sqrt(2*785), L = 785/2, D = 0.1 (S = 118.1); overrides -clip, -G, -L, -D")
	// -eta is flsim's own, not the session's: it takes auto and theorem
	// beside a number (check parses a number into o.p.Eta; stepSize
	// computes the others once the data are loaded).
	fs.StringVar(&o.eta, "eta", "auto", "step size: auto (chosen on the validation split: sim.Tuned, or for nc, shared, trusted and mu2 the -task row task's), theorem (Theorem 5.2's, algo.NCTheoremEta; needs -D or -paper-constants), or a number")
	fs.BoolVar(&o.validate, "validate", false, "train on the training part of the validation split and evaluate on its validation part (the test set is not read)")
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
	fs.BoolVar(&o.normOnly, "norm-only", false, "the server applies only the L2 norm bound to each update (without the server's other tests), to measure what the others buy")
}

// check checks o and completes it: the papers' constants, the step size
// given as a number, and the page's default budget as the privacy target
// of a private algorithm without one.
func (o *options) check() error {
	if o.paperConstants {
		o.p.Clip, o.p.G, o.p.L, o.p.Diameter = 0, math.Sqrt(2*785), 785.0/2, 0.1
	}
	switch o.plotExt {
	case "svg", "png", "pdf":
	default:
		return fmt.Errorf("-plot %q: want svg, png or pdf", o.plotExt)
	}
	if !(o.reportDelta > 0 && o.reportDelta < 1) {
		return fmt.Errorf("-report-delta %v: want 0 < delta < 1", o.reportDelta)
	}
	switch o.datasetName {
	case "fashion-mnist", "mnist":
	default:
		return fmt.Errorf("-dataset %q: want fashion-mnist or mnist", o.datasetName)
	}
	rowTask := false
	if o.taskName != "" {
		named, err := task.Lookup(o.taskName)
		if err != nil {
			return fmt.Errorf("-task: %w", err)
		}
		rowTask = named.Rows != nil
		if rowTask {
			o.rowTask = named.Rows
			o.lessonShape()
		}
	}
	switch {
	case o.features == "":
	case o.features != plan.FeaturesScatter:
		return fmt.Errorf("-features %q: want %s or nothing", o.features, plan.FeaturesScatter)
	case rowTask:
		return errors.New("-features scatter works on the picture tasks, not on rows")
	}
	if o.trainSamples < 0 || o.evalSamples < 0 || o.evalEvery < 0 {
		return errors.New("-train-samples, -eval-samples and -eval-every must be >= 0")
	}
	if o.attack == "" {
		o.attackers = 0
	} else if o.attackers < 1 {
		return fmt.Errorf("-attackers %d: want >= 1 with -attack", o.attackers)
	}
	if o.attackCap < 0 || math.IsNaN(o.attackCap) {
		return fmt.Errorf("-attack-cap %v: want >= 0", o.attackCap)
	}
	if o.workers < 1 {
		return fmt.Errorf("-workers %d: want >= 1", o.workers)
	}
	if o.p.MaxReleases < -1 {
		return fmt.Errorf("-max-releases %d: want -1 (from the data), 0 (= T) or a count", o.p.MaxReleases)
	}
	if _, err := algo.Lookup(o.p.Algorithm); err != nil {
		return err
	}
	switch o.eta {
	case "auto", "theorem":
	default:
		v, err := strconv.ParseFloat(o.eta, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("-eta %q: want auto, theorem or a finite number > 0", o.eta)
		}
		o.p.Eta = v
	}
	if algo.Private(o.p) && o.p.Rho == 0 && o.p.Epsilon == 0 {
		o.p.Epsilon = plan.DefaultBudgetEpsilon
	}
	if o.p.Epsilon > 0 && o.p.Delta == 0 {
		o.p.Delta = plan.DefaultDelta
	}
	// Every check that does not need the data, before it loads (tens of
	// seconds for Fashion-MNIST); sim.Run checks the whole again.
	var err error
	if o.scheme, err = dataset.ParseScheme(o.partition); err != nil {
		return err
	}
	if o.eta == "theorem" {
		if err := theoremEtaUsable(o.p); err != nil {
			return err
		}
	}
	return algo.Validate(withoutData(*o))
}

// withoutData is o's parameters with a stand-in that passes
// algo.Validate for each field the data decides (T = 0, -eta auto
// or theorem, -max-releases -1, the SVRG/SAGA local size n / M), so the
// flags are checked before the data loads.
func withoutData(o options) optim.Params {
	p := o.p
	if p.Rounds == 0 {
		p.Rounds = session.MaxRounds
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
	if !algo.Private(p) || !(p.Diameter > 0) {
		return errors.New("-eta theorem: Theorem 5.2's step size needs a private algorithm and a diameter (-D or -paper-constants)")
	}
	return nil
}

// lessonShape gives a run of a built-in row task the setting its step
// size and clipping bound were chosen at (task.Builtin's Eta and Clip:
// the live lesson of task.TunedDevices devices, all in every round, for
// task.TunedRounds rounds of task.TunedBatch rows) wherever the command
// line does not set them.
func (o *options) lessonShape() {
	given := func(name string) bool { return slices.Contains(o.given, name) }
	if !given("M") && !given("m") {
		o.p.M, o.p.Cohort = task.TunedDevices, task.TunedDevices
	}
	if !given("T") && !given("b") {
		o.p.Rounds, o.p.Batch = task.TunedRounds, task.TunedBatch
	}
	if !given("clip") && !o.paperConstants {
		o.p.Clip = o.rowTask.Clip
	}
}
