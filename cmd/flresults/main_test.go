package main

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"browserfl/sim"
)

// TestRunFileRoundTrip checks that a run written to disk reads back to the
// same outcome (the cache the report is built from).
func TestRunFileRoundTrip(t *testing.T) {
	recs := []sim.Record{
		{Round: 1, Accuracy: math.NaN(), Loss: math.NaN(), UplinkBytes: 10, CumUplinkBytes: 10, Participants: 5, MaxRho: 0.5, MaxEpsilon: 3},
		{Round: 2, Accuracy: 0.7, Loss: 0.9, UplinkBytes: 12, CumUplinkBytes: 22, Participants: 5, MaxRho: 1, MaxEpsilon: 4.5},
	}
	path := filepath.Join(t.TempDir(), "run.csv.gz")
	if err := writeRun(path, recs); err != nil {
		t.Fatal(err)
	}
	oc, err := readOutcome(path)
	if err != nil {
		t.Fatal(err)
	}
	if oc.acc != 0.7 || oc.loss != 0.9 || oc.uplink != 22 || oc.maxRho != 1 || oc.maxEps != 4.5 || oc.rounds != 2 || len(oc.recs) != 2 {
		t.Fatalf("outcome %+v", oc)
	}
	if _, err := readOutcome(filepath.Join(t.TempDir(), "missing.csv")); err == nil {
		t.Fatal("missing file read without error")
	}
}

// TestReport checks that the report places each run's figure in its cell
// beside the paper's and marks runs not yet done.
func TestReport(t *testing.T) {
	groups := experiments(nil)
	res := map[string]outcome{
		ncRun(ourConsts, "nc", 8, 50).id:       {acc: 0.797, loss: 0.62, uplink: 1878019000, maxRho: 27.6, maxEps: 61.5},
		ncRun(ourConsts, "noisysgd", 8, 50).id: {acc: 0.741, loss: 0.76, uplink: 1878019000},
		compRun("").id:                         {acc: 0.797, uplink: 1000},
		compRun("ef+qinf:3bit").id:             {acc: 0.793, uplink: 94},
	}
	var b bytes.Buffer
	if _, err := writeReport(&b, groups, res, puReport{}, ""); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{
		"| 8 | 79.7% | 63.7% | 74.1% | 58.9% | 61.5 (rho 27.6) |\n", // Table 1 row, ours beside the paper's
		"| ef+qinf:3bit | 0.0 MB | 10.6x | 79.3% | -0.4 |",          // compression row
		"not run", // cells without a run
		"Fashion-MNIST",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestTuningsCoverTheirChoice: every step size the reported runs use is
// one of the values its validation sweep tries (otherwise the sweep could
// never confirm it), and the sweeps run at the reference setting on
// distinct files.
func TestTuningsCoverTheirChoice(t *testing.T) {
	ids := map[string]bool{}
	for _, tu := range tunings() {
		found := false
		for _, eta := range tu.grid {
			found = found || eta == tu.chosen()
			e := tu.run(eta)
			if ids[e.id] {
				t.Errorf("duplicate tuning run %s", e.id)
			}
			ids[e.id] = true
			if e.p.Rounds != sim.ReferenceRounds || e.p.Eta != eta || e.p.Rho != 8 {
				t.Errorf("%s: params %+v", e.id, e.p)
			}
		}
		if !found {
			t.Errorf("%s/%s: chosen eta %g is not in the sweep %v", tu.c.name, tu.family, tu.chosen(), tu.grid)
		}
	}
}

// groupRuns returns every run of the named groups with outcome oc.
func groupRuns(groups []group, oc outcome, names ...string) map[string]outcome {
	out := map[string]outcome{}
	for _, g := range groups {
		if slices.Contains(names, g.name) {
			for _, e := range g.runs {
				out[e.id] = oc
			}
		}
	}
	return out
}

// TestReportKeepsIncompleteSections: a section is written anew when every
// run it looks up is on disk, and otherwise kept whole from the report
// on disk (a partial rerun never replaces a finished section with "not
// run" cells); a section the old report lacks is written with what there
// is; sections that look up nothing are always written anew.
func TestReportKeepsIncompleteSections(t *testing.T) {
	groups := experiments(nil)
	first := groupRuns(groups, outcome{acc: 0.797, maxRho: 27.6, maxEps: 61.5}, "nc-table1-clip1", "nc-table2-clip1", "compress")
	var b bytes.Buffer
	if _, err := writeReport(&b, groups, first, puReport{}, ""); err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(b.String(), reportHeader, "an old header\n", 1)
	// Now: the compression group whole with other figures, one run of
	// the Table-1 section, nothing of the rest.
	second := groupRuns(groups, outcome{acc: 0.5, uplink: 1000}, "compress")
	second[ncRun(ourConsts, "nc", 8, 50).id] = outcome{acc: 0.111}
	b.Reset()
	kept, err := writeReport(&b, groups, second, puReport{}, old)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := parseSections(b.String())
	if err != nil {
		t.Fatal(err)
	}
	oldSecs, err := parseSections(old)
	if err != nil {
		t.Fatal(err)
	}
	if secs["nc-tables-clip1"] != oldSecs["nc-tables-clip1"] || strings.Contains(secs["nc-tables-clip1"], "11.1%") {
		t.Errorf("the Table-1 section, 1 of its runs on disk now, was not kept whole:\n%s", secs["nc-tables-clip1"])
	}
	if !strings.Contains(secs["compress"], "| dense float32 | 0.0 MB | 1.0x | 50.0% | +0.0 |") || strings.Contains(secs["compress"], "79.7%") {
		t.Errorf("the compression section, all on disk now, was not rewritten:\n%s", secs["compress"])
	}
	if secs["header"] != reportHeader {
		t.Errorf("the header, which reads no run, was kept from the old report")
	}
	if !slices.ContainsFunc(kept, func(k string) bool { return strings.HasPrefix(k, "nc-tables-clip1 (1 of its ") }) ||
		slices.ContainsFunc(kept, func(k string) bool { return strings.HasPrefix(k, "compress ") || strings.HasPrefix(k, "header ") }) {
		t.Errorf("kept sections %q", kept)
	}
	for _, name := range []string{"header", "nc-tables-paper", "fp-tables-clip1", "soteria", "compress", "privacy-utility", "privacy-utility-scatter", "pu-sweeps", "tasks", "notes"} {
		if _, ok := secs[name]; !ok {
			t.Errorf("section %s missing", name)
		}
	}
	// Without an old report the partial section is written, its missing
	// cells saying so.
	b.Reset()
	if _, err := writeReport(&b, groups, second, puReport{}, ""); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "| 8 | 11.1% | 63.7% | not run |") {
		t.Error("the partial Table-1 section without an old report")
	}
}

// TestReportSweepsCount: the feature section shows the sweeps' choices,
// so it is complete only with every sweep run and every test run on disk.
func TestReportSweepsCount(t *testing.T) {
	choices := map[puKey]puConf{}
	for _, k := range puSweepKeys() {
		if k.model == puScatter {
			choices[k] = puGrid(k)[0]
		}
	}
	groups := experiments(choices)
	tests := groupRuns(groups, outcome{acc: 0.8}, "privacy-utility-"+puScatter+"-tuned")
	if len(tests) != 39 {
		t.Fatalf("%d feature test runs, want 39 (13 cells: nc, trusted and shared at 4 epsilons, mu2; 3 seeds)", len(tests))
	}
	old := "<!-- flresults section privacy-utility-scatter -->\nthe old rows\n<!-- flresults end privacy-utility-scatter -->\n"
	n := sweepSize(puScatter)
	for _, c := range []struct {
		hits  int
		tests map[string]outcome
		kept  bool
	}{
		{n, tests, false},
		{n - 1, tests, true},            // one sweep run missing
		{n, map[string]outcome{}, true}, // the test runs missing
	} {
		pu := puReport{choices: choices, sweeps: map[string]sweepTable{puScatter: {text: "the sweep table\n", reads: n, hits: c.hits}}}
		var b bytes.Buffer
		if _, err := writeReport(&b, groups, c.tests, pu, old); err != nil {
			t.Fatal(err)
		}
		secs, err := parseSections(b.String())
		if err != nil {
			t.Fatal(err)
		}
		got := secs["privacy-utility-scatter"]
		if kept := got == "the old rows\n"; kept != c.kept {
			t.Errorf("%d of %d sweep runs, %d test runs: kept %v, want %v:\n%s", c.hits, n, len(c.tests), kept, c.kept, got)
		}
		if !c.kept && (!strings.Contains(got, "80.0 ± 0.0%") || !strings.Contains(got, "the sweep table")) {
			t.Errorf("the rewritten feature section:\n%s", got)
		}
	}
}

// TestParseSections refuses a report whose markers do not pair up or
// that holds text outside its sections, and reads one written before
// the sections as having none.
func TestParseSections(t *testing.T) {
	for _, bad := range []string{
		"<!-- flresults section a -->\nx<!-- flresults end b -->\n",
		"<!-- flresults section a -->\nx<!-- flresults end a -->\n<!-- flresults section a -->\ny<!-- flresults end a -->\n",
		"<!-- flresults section a -->\nx\n",                                       // no end
		"x\n<!-- flresults end a -->\n",                                           // no begin
		"<!-- flresults section a -->\nx<!-- flresults end a -->\nhand-written\n", // text outside
		"hand-written\n<!-- flresults section a -->\nx<!-- flresults end a -->\n",
		"<!-- flresults section a -->\n<!-- flresults section b -->\nx<!-- flresults end b -->\n<!-- flresults end a -->\n",
	} {
		if _, err := parseSections(bad); err == nil {
			t.Errorf("parseSections(%q) accepted it", bad)
		}
	}
	got, err := parseSections("<!-- flresults section a-1 -->\nx\n<!-- flresults end a-1 -->\n<!-- flresults section b -->\n<!-- flresults end b -->\n")
	if err != nil || got["a-1"] != "x\n" || len(got) != 2 {
		t.Errorf("parseSections = %v, %v", got, err)
	}
	if got, err := parseSections("# an old report\n"); err != nil || len(got) != 0 {
		t.Errorf("a report without markers: %v, %v", got, err)
	}
}

// TestWriteSweepTable: a sweep table's file is rewritten only when every
// run of its sweeps is on disk.
func TestWriteSweepTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, sweepFiles[puScatter])
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		t    sweepTable
		want string
	}{
		{sweepTable{text: "partial\n", reads: 10, hits: 9}, "old\n"},
		{sweepTable{text: "none\n", reads: 10}, "old\n"},
		{sweepTable{text: "new\n", reads: 10, hits: 10}, "new\n"},
	} {
		if err := writeSweepTable(dir, puScatter, c.t, io.Discard); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != c.want {
			t.Errorf("%+v: file %q, want %q", c.t, got, c.want)
		}
	}
}
