package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"strconv"
	"strings"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/sim"
)

// TestSpentLineEveryMode: the summary's privacy line says what holds in
// each mode: with the devices' noise the worst device's figure; in the
// trusted mode none against the server and the figure against everyone
// else; for a non-private reference none; and a certified "local"
// session's (output perturbation) is an ordinary zCDP figure.
func TestSpentLineEveryMode(t *testing.T) {
	eps, delta := plan.DefaultLessonTarget()
	lesson := optim.Params{Algorithm: "nc", Model: "logreg", M: 30, Cohort: 10, Rounds: 200, Batch: 32, Clip: 1, Eta: 0.02, Epsilon: eps, Delta: delta}
	trusted := lesson
	trusted.Algorithm = "trusted"
	ref := lesson
	ref.Algorithm, ref.Epsilon, ref.Delta = "mu2", 0, 0
	li := optim.Params{Algorithm: "local", Model: "logreg-unit", Features: 784, Classes: 10,
		M: 100, Cohort: 10, Rounds: 100, Batch: 600, LocalSteps: 25, LocalEpochs: 25, Clip: 2, Eta: 1, Epsilon: 8, Delta: 1e-5}
	for _, c := range []struct {
		name     string
		p        optim.Params
		rec      sim.Record
		want     []string
		not      []string
		protects string
	}{
		{"nc", lesson, sim.Record{MaxRho: 1.3, MaxEpsilon: 7.7}, []string{"worst device): zCDP rho = 1.3", "epsilon = 7.7"}, []string{"server", "none"}, plan.ProtectionDevice},
		{"trusted", trusted, sim.Record{MaxRho: 1.36487, MaxEpsilon: 7.92}, []string{"against the server: none", "against everyone else", "epsilon = 7.92"}, []string{"zCDP"}, plan.ProtectionServer},
		{"mu2", ref, sim.Record{}, []string{"privacy: none", "non-private"}, []string{"epsilon", "trusted"}, plan.ProtectionNone},
		{"local, output perturbation", li, sim.Record{MaxRho: 1.4, MaxEpsilon: 8}, []string{"worst device): zCDP rho = 1.4"}, []string{"Gaussian DP"}, plan.ProtectionDevice},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := plan.SessionFigures(c.p, 0)
			if err != nil {
				t.Fatal(err)
			}
			if f.Protection() != c.protects {
				t.Fatalf("protection %q, want %q", f.Protection(), c.protects)
			}
			line := spentLine(f, nil, c.rec, 1e-5)
			for _, w := range c.want {
				if !strings.Contains(line, w) {
					t.Errorf("%q lacks %q", line, w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(line, w) {
					t.Errorf("%q says %q", line, w)
				}
			}
		})
	}
}

// TestSharedRunFigures: a short shared-noise run's summary states both
// figures of the session (plan.SessionFigures: the promise with the
// colluders it assumes, the floor) and the worst device's spending by
// both.
func TestSharedRunFigures(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"-algorithm", "shared", "-epsilon", "8", "-delta", "1e-5", "-train-samples", "2000", "-M", "10", "-m", "10", "-b", "4",
		"-T", "5", "-eta", "0.001", "-eval-samples", "200", "-colluders", "2", "-q", "-out", dir + "/run"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	p := optim.Params{Algorithm: "shared", Model: "logreg", Features: 784, Classes: 10, M: 10, Cohort: 10, Rounds: 5, Batch: 4, Clip: 1, Eta: 0.001,
		Epsilon: 8, Delta: 1e-5, Colluders: 2}
	f, err := plan.SessionFigures(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"promise epsilon = " + f.PromiseText() + " (the server sees only sums of at least 7 updates, at most 2 of them its own)",
		"floor epsilon = " + f.FloorText() + " (every other device fake)", "if the other devices are real (the promise)",
		"from its own noise alone (the floor), epsilon = " + f.FloorText()} {
		if !strings.Contains(s, want) {
			t.Errorf("the summary lacks %q:\n%s", want, s)
		}
	}
}

// TestTrustedRunFigures: a short trusted run's CSV and summary carry the
// figure against everyone but the server, growing with the rounds
// published and, after the last, the session's own (plan.SessionFigures),
// never 0.
func TestTrustedRunFigures(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"-algorithm", "trusted", "-epsilon", "4", "-delta", "1e-5", "-train-samples", "2000", "-M", "10", "-m", "5", "-b", "4",
		"-T", "20", "-eta", "0.001", "-eval-samples", "200", "-q", "-out", dir + "/run"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	s := out.String()
	for _, want := range []string{"against everyone but the server", "privacy against the server: none", "against everyone else", "epsilon = 4.00"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "privacy: none") {
		t.Errorf("summary says no privacy at all:\n%s", s)
	}
	fh, err := os.Open(dir + "/run.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil || len(rows) != 21 {
		t.Fatalf("csv: %d rows, %v", len(rows), err)
	}
	col := -1
	for i, h := range rows[0] {
		if h == "max_device_epsilon" {
			col = i
		}
	}
	prev := 0.0
	for _, r := range rows[1:] {
		e, err := strconv.ParseFloat(r[col], 64)
		if err != nil || !(e > prev) {
			t.Fatalf("round %s: max_device_epsilon %q, want above the round before (%v)", r[0], r[col], prev)
		}
		prev = e
	}
	if got := plan.FormatEpsilon(prev); got != "4.00" {
		t.Errorf("after the last round: epsilon %v (%s), want the session's 4.00", prev, got)
	}
}
