package main

import (
	"math"
	"strings"
	"testing"

	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
)

// TestPrivacyUtilityRuns: every run of the table (and of its sweeps) is
// the Table-1 setting at one pass with the partition's release cap, ids
// are distinct, and each private run's stated epsilon (plan.SessionFigures)
// is its target: not above it (the table would overstate privacy) and not
// far below it (the calibration would waste budget and the cell would
// not be the epsilon its column names).
func TestPrivacyUtilityRuns(t *testing.T) {
	choices := map[puKey]puConf{}
	var sweeps []exp
	for _, k := range puSweepKeys() {
		g := puGrid(k)
		choices[k] = g[len(g)-1]
		for _, c := range g {
			sweeps = append(sweeps, puExp(k, c, 50000, 1, "put"))
		}
	}
	ids := map[string]bool{}
	var runs []exp
	for _, g := range privacyUtilityGroups(choices) {
		runs = append(runs, g.runs...)
	}
	runs = append(runs, sweeps...)
	for _, e := range runs {
		if ids[e.id] {
			t.Errorf("duplicate run %s", e.id)
		}
		ids[e.id] = true
		p := e.p
		n := nTrain
		if strings.HasPrefix(e.id, "put-") {
			n = 50000
		}
		if p.M != 100 || p.Cohort != 50 || p.Rounds*p.Cohort*p.Batch != n || p.MaxReleases != n/p.M/p.Batch {
			t.Errorf("%s: not one pass of the Table-1 setting: %+v", e.id, p)
		}
		if err := algo.Validate(p); err != nil {
			t.Errorf("%s: %v", e.id, err)
		}
		f, err := plan.SessionFigures(p, plan.DefaultDelta)
		if err != nil {
			t.Fatalf("%s: %v", e.id, err)
		}
		if !f.Private {
			if p.Epsilon != 0 {
				t.Errorf("%s: epsilon target on a non-private run", e.id)
			}
			continue
		}
		if f.Epsilon > p.Epsilon*(1+1e-9) || f.Epsilon < 0.98*p.Epsilon {
			t.Errorf("%s: stated epsilon %v for target %v at delta %v", e.id, f.Epsilon, p.Epsilon, plan.DefaultDelta)
		}
	}
	if len(runs) < 3*3*4+2*3 {
		t.Errorf("only %d runs", len(runs))
	}
}

// TestMeanSD checks the cells: mean ± sample sd over the seeds on disk,
// and which seeds are missing.
func TestMeanSD(t *testing.T) {
	es := []exp{{id: "a"}, {id: "b"}, {id: "c"}}
	cases := []struct {
		res  map[string]outcome
		want string
	}{
		{map[string]outcome{"a": {acc: 0.70}, "b": {acc: 0.72}, "c": {acc: 0.74}}, "72.0 ± 2.0%"},
		{map[string]outcome{"a": {acc: 0.70}, "c": {acc: 0.74}}, "72.0 ± 2.8% (2 seeds: 70.0 / 74.0)"},
		{map[string]outcome{"b": {acc: 0.7}}, "70.0% (1 seed)"},
		{map[string]outcome{"b": {acc: math.NaN()}}, "not run"},
		{nil, "not run"},
	}
	for _, c := range cases {
		if got := meanSD(es, &results{m: c.res}); got != c.want {
			t.Errorf("meanSD(%v) = %q, want %q", c.res, got, c.want)
		}
	}
}
