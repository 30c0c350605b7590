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
	"compress/gzip"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"browserfl/shared/dataset"
	"browserfl/sim"
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
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
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
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var only *regexp.Regexp
	if o.only != "" {
		var err error
		if only, err = regexp.Compile(o.only); err != nil {
			return fmt.Errorf("-only: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
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
		var table strings.Builder
		err := tune(ctx, o, train, o.cache, &table, stderr)
		fmt.Fprint(stdout, table.String())
		if werr := os.WriteFile(filepath.Join(dir, "tuning.md"), []byte(table.String()), 0o644); werr != nil {
			return errors.Join(err, fmt.Errorf("write tuning table: %w", werr))
		}
		if err != nil {
			return err
		}
	}
	// The privacy-utility table's batch sizes and step sizes: chosen on
	// the validation split too, before its reported runs.
	var sweep strings.Builder
	choices, err := puTune(ctx, o, train, o.cache, only, &sweep, stderr)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "pu-tuning.md"), []byte(sweep.String()), 0o644); err != nil {
		return fmt.Errorf("write sweep table: %w", err)
	}
	groups := experiments(choices)
	results := map[string]outcome{}
	for _, g := range groups {
		selected := only == nil || only.MatchString(g.name)
		for _, e := range g.runs {
			if !selected {
				if oc, err := readOutcome(filepath.Join(o.cache, e.id+".csv.gz")); err == nil {
					results[e.id] = oc
				} else if !errors.Is(err, os.ErrNotExist) {
					return err
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
			oc, err := runOrRead(ctx, o, e, train, test, o.cache, stderr)
			if err != nil {
				return err
			}
			results[e.id] = oc
			fmt.Fprintf(stdout, "%-40s acc %.4f loss %.4f uplink %d B\n", e.id, oc.acc, oc.loss, oc.uplink)
		}
	}
	if err := writePlots(o.cache, dir, groups); err != nil {
		return err
	}
	report := filepath.Join(o.out, "results.md")
	f, err := os.Create(report)
	if err != nil {
		return fmt.Errorf("create report: %w", err)
	}
	if err := writeReport(f, groups, results, puReport{choices, sweep.String()}); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close report: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", report)
	return nil
}

// outcome is what the report needs from one run.
type outcome struct {
	acc, loss      float64
	uplink         int64
	maxRho, maxEps float64
	rounds         int
	recs           []sim.Record
}

func summarize(recs []sim.Record) outcome {
	oc := outcome{acc: math.NaN(), loss: math.NaN(), recs: recs}
	for _, r := range recs {
		if !math.IsNaN(r.Accuracy) {
			oc.acc, oc.loss = r.Accuracy, r.Loss
		}
	}
	if n := len(recs); n > 0 {
		last := recs[n-1]
		oc.uplink, oc.maxRho, oc.maxEps, oc.rounds = last.CumUplinkBytes, last.MaxRho, last.MaxEpsilon, last.Round
	}
	return oc
}

// writeRun writes a run's per-round CSV, gzipped (the M = 1 runs have
// 60,000 rounds). It writes a temporary file and renames it, so a file on
// disk is always a finished run.
func writeRun(path string, recs []sim.Record) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	zw := gzip.NewWriter(f)
	if err := sim.WriteCSV(zw, recs); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return fmt.Errorf("compress %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	return os.Rename(tmp, path)
}

// readOutcome reads a run's CSV back.
func readOutcome(path string) (outcome, error) {
	f, err := os.Open(path)
	if err != nil {
		return outcome{}, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return outcome{}, fmt.Errorf("read %s: %w", path, err)
	}
	rows, err := csv.NewReader(zr).ReadAll()
	if err != nil {
		return outcome{}, fmt.Errorf("read %s: %w", path, err)
	}
	if len(rows) < 2 {
		return outcome{}, fmt.Errorf("read %s: no rounds", path)
	}
	var recs []sim.Record
	for i, row := range rows[1:] {
		if len(row) != 10 {
			return outcome{}, fmt.Errorf("read %s: row %d has %d fields, want 10", path, i+2, len(row))
		}
		var r sim.Record
		var errs []error
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			errs = append(errs, err)
			return v
		}
		r.Round = int(num(row[0]))
		r.Accuracy, r.Loss = num(row[1]), num(row[2])
		r.UplinkBytes, r.DownlinkBytes = int64(num(row[3])), int64(num(row[4]))
		r.CumUplinkBytes, r.CumDownlinkBytes = int64(num(row[5])), int64(num(row[6]))
		r.Participants = int(num(row[7]))
		r.MaxRho, r.MaxEpsilon = num(row[8]), num(row[9])
		if err := errors.Join(errs...); err != nil {
			return outcome{}, fmt.Errorf("read %s: row %d: %w", path, i+2, err)
		}
		recs = append(recs, r)
	}
	return summarize(recs), nil
}

// writePlots draws each group's runs cached under cache into dir.
func writePlots(cache, dir string, groups []group) error {
	for _, g := range groups {
		if g.plot == "" {
			continue
		}
		runs := map[string][]sim.Record{}
		var order []string
		for _, e := range g.runs {
			oc, err := readOutcome(filepath.Join(cache, e.id+".csv.gz"))
			if err != nil {
				continue
			}
			runs[e.label] = oc.recs
			order = append(order, e.label)
		}
		if len(order) == 0 {
			continue
		}
		byRound, byBytes := sim.AccuracyCharts(g.title, runs, order)
		if err := byRound.Save(filepath.Join(dir, g.plot+"-rounds.svg")); err != nil {
			return err
		}
		if err := byBytes.Save(filepath.Join(dir, g.plot+"-bytes.svg")); err != nil {
			return err
		}
	}
	return nil
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
