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
	if err := writeReport(&b, groups, res, puReport{}); err != nil {
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
