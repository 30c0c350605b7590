// Command flresults reruns the reproduction experiments of docs/results.md
// through the simulator (the same server and device halves the product
// runs) and rewrites that report: the noise-cancellation paper's Tables 1-2,
// the full-participation paper's Tables 1-2, the SoteriaFL accuracy-vs-bits
// comparison, and our study of compressing noise-cancelled messages.
//
//	go run ./cmd/flresults                 # everything (hours on 2 cores from an empty cache)
//	go run ./cmd/flresults -only nc-table1 # one group
//	go run ./cmd/flresults -only tune      # only the step-size sweeps
//	go run ./cmd/flresults -only 'pu-tune|privacy-utility' # the privacy-utility table
//
// Step sizes are chosen on a validation split carved from the training
// set (dataset.ValidationSplit), never on the test set: the sweeps run
// first and the command stops if their choice is not the one the
// reported runs use (sim.Tuned, sim.TunedPaper). Each reported cell is
// trained on the whole training set and its figure is one evaluation of
// the final model on the test set.
//
// Every run's per-round CSV is cached under .cache/results/ (git-ignored;
// -cache) and reused on the next invocation unless -fresh is given, so an
// interrupted run resumes. docs/results/ keeps what the report shows: the
// plots and the sweep tables.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"browserfl/shared/dataset"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "flresults:", err)
		os.Exit(1)
	}
}

type options struct {
	out, cache, only, dataDir string
	fresh, quiet              bool
	seed                      uint64
	// feats computes the features of the runs over features (exp.features).
	feats *featureSets
}

// parseFlags parses args; only is -only's regexp (nil: every group).
func parseFlags(args []string, stderr io.Writer) (o options, only *regexp.Regexp, err error) {
	fs := flag.NewFlagSet("flresults", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.out, "out", "docs", "directory of results.md (its plots and tables go to OUT/results/)")
	fs.StringVar(&o.cache, "cache", filepath.Join(".cache", "results"), "directory of the per-run CSV cache (git-ignored)")
	fs.StringVar(&o.only, "only", "", "run only the groups whose name matches this regexp (the report still lists every group with results on disk)")
	fs.StringVar(&o.dataDir, "data-dir", dataset.DefaultFashionMNISTDir, "Fashion-MNIST directory")
	fs.BoolVar(&o.fresh, "fresh", false, "rerun experiments whose CSV already exists")
	fs.BoolVar(&o.quiet, "q", false, "no progress bars")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of every run")
	if err := fs.Parse(args); err != nil {
		return o, nil, err
	}
	if fs.NArg() > 0 {
		return o, nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.only != "" {
		if only, err = regexp.Compile(o.only); err != nil {
			return o, nil, fmt.Errorf("-only: %w", err)
		}
	}
	return o, only, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, only, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.feats = newFeatureSets(stderr, o.quiet)
	train, test, err := dataset.LoadFashionMNIST(o.dataDir)
	if err != nil {
		return err
	}
	dir := filepath.Join(o.out, "results")
	for _, d := range []string{dir, o.cache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	// Step sizes first: chosen on the validation split, and checked
	// against the ones the reported runs use before any of them starts.
	if only == nil || only.MatchString("tune") {
		if err := tuneTable(ctx, o, train, dir, stdout, stderr); err != nil {
			return err
		}
	}
	// The privacy-utility table's batch sizes and step sizes: chosen on
	// the validation split too, before its reported runs. A family's
	// sweep table is rewritten only when all of its runs are on disk.
	choices, sweeps, err := puTune(ctx, o, train, o.cache, only, stderr)
	if err != nil {
		return err
	}
	for _, fam := range []string{"pixels", puScatter} {
		if err := writeSweepTable(dir, fam, sweeps[fam], stderr); err != nil {
			return err
		}
	}
	groups := experiments(choices)
	results, err := runGroups(ctx, o, groups, only, train, test, o.cache, stdout, stderr)
	if err != nil {
		return err
	}
	if err := writePlots(o.cache, dir, groups); err != nil {
		return err
	}
	report := filepath.Join(o.out, "results.md")
	if err := writeReportFile(report, groups, results, puReport{choices, sweeps, ""}, stderr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", report)
	return nil
}

// tuneTable runs the step-size sweeps (their runs cached under o.cache)
// and writes their table to stdout and dir/tuning.md (also when a sweep's
// choice disagrees).
func tuneTable(ctx context.Context, o options, train dataset.Set, dir string, stdout, stderr io.Writer) error {
	var table strings.Builder
	err := tune(ctx, o, train, o.cache, &table, stderr)
	fmt.Fprint(stdout, table.String())
	if werr := os.WriteFile(filepath.Join(dir, "tuning.md"), []byte(table.String()), 0o644); werr != nil {
		return errors.Join(err, fmt.Errorf("write tuning table: %w", werr))
	}
	return err
}

// runGroups runs (or reads from the cache dir) every experiment of the
// groups only selects, and reads the others' results that are cached.
func runGroups(ctx context.Context, o options, groups []group, only *regexp.Regexp, train, test dataset.Set, dir string, stdout, stderr io.Writer) (map[string]outcome, error) {
	results := map[string]outcome{}
	for _, g := range groups {
		selected := only == nil || only.MatchString(g.name)
		for _, e := range g.runs {
			if !selected {
				if oc, err := readOutcome(filepath.Join(dir, e.id+".csv.gz")); err == nil {
					results[e.id] = oc
				} else if !errors.Is(err, os.ErrNotExist) {
					return nil, err
				}
				continue
			}
			if !o.quiet {
				fmt.Fprintf(stderr, "%s: ", g.name)
			}
			// The reported cell: trained on the whole training set, its
			// figure is the last evaluation on the test set (the curves'
			// intermediate points are for the plots; nothing is chosen
			// on them).
			oc, err := runOrRead(ctx, o, e, train, test, dir, stderr)
			if err != nil {
				return nil, err
			}
			results[e.id] = oc
			fmt.Fprintf(stdout, "%-40s acc %.4f loss %.4f uplink %d B\n", e.id, oc.acc, oc.loss, oc.uplink)
		}
	}
	return results, nil
}
