package main

import (
	"bytes"
	"math"
	"path/filepath"
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
	if err := writeReport(&b, groups, res, puReport{}, ""); err != nil {
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

// TestReportKeepsSectionsNotRun: rerunning one group (-only) rewrites the
// sections whose runs are on disk and keeps the others' text from the
// report on disk, markers and all; sections that read no runs are
// written anew; a cell whose run is now on disk replaces its old text.
func TestReportKeepsSectionsNotRun(t *testing.T) {
	groups := experiments(nil)
	first := map[string]outcome{
		ncRun(ourConsts, "nc", 8, 50).id: {acc: 0.797, maxRho: 27.6, maxEps: 61.5},
		compRun("").id:                   {acc: 0.797, uplink: 1000},
	}
	var b bytes.Buffer
	if err := writeReport(&b, groups, first, puReport{}, ""); err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(b.String(), reportHeader, "an old header\n", 1)
	// The second run has only the compression group on disk, with
	// another figure.
	second := map[string]outcome{compRun("").id: {acc: 0.5, uplink: 1000}}
	b.Reset()
	if err := writeReport(&b, groups, second, puReport{}, old); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	secs, err := parseSections(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(secs["nc-tables-clip1"], "| 8 | 79.7% |") {
		t.Errorf("the Table-1 section, not on disk now, was not kept:\n%s", secs["nc-tables-clip1"])
	}
	if !strings.Contains(secs["compress"], "| dense float32 | 0.0 MB | 1.0x | 50.0% | +0.0 |") || strings.Contains(secs["compress"], "79.7%") {
		t.Errorf("the compression section, on disk now, was not rewritten:\n%s", secs["compress"])
	}
	if secs["header"] != reportHeader {
		t.Errorf("the header, which reads no run, was kept from the old report")
	}
	for _, name := range []string{"header", "nc-tables-paper", "fp-tables-clip1", "soteria", "compress", "privacy-utility", "privacy-utility-scatter", "pu-sweeps", "tasks", "notes"} {
		if _, ok := secs[name]; !ok {
			t.Errorf("section %s missing", name)
		}
	}
	// With nothing at all on disk and no old report, every cell says so.
	b.Reset()
	if err := writeReport(&b, groups, nil, puReport{}, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "79.7%") {
		t.Error("a figure without a run")
	}
}

// TestParseSections refuses a report whose markers do not pair up.
func TestParseSections(t *testing.T) {
	for _, bad := range []string{
		"<!-- flresults section a -->\nx<!-- flresults end b -->\n",
		"<!-- flresults section a -->\nx<!-- flresults end a -->\n<!-- flresults section a -->\ny<!-- flresults end a -->\n",
	} {
		if _, err := parseSections(bad); err == nil {
			t.Errorf("parseSections(%q) accepted it", bad)
		}
	}
	got, err := parseSections("<!-- flresults section a-1 -->\nx\n<!-- flresults end a-1 -->\n")
	if err != nil || got["a-1"] != "x\n" {
		t.Errorf("parseSections = %v, %v", got, err)
	}
}
