package main

import (
	"io"
	"slices"
	"testing"

	"browserfl/sim"
)

func TestParse(t *testing.T) {
	o, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.seeds != 3 || !slices.Equal(o.ks, []int{0, 1, 2, 3}) || !slices.Equal(o.kinds, sim.AttackKinds) {
		t.Errorf("defaults %+v", o)
	}
	o, err = parse([]string{"-seeds", "1", "-K", "0, 2", "-kinds", "spike,drift"}, io.Discard)
	if err != nil || o.seeds != 1 || !slices.Equal(o.ks, []int{0, 2}) || !slices.Equal(o.kinds, []string{"spike", "drift"}) {
		t.Errorf("parsed %+v, %v", o, err)
	}
	if !o.compare || o.p.SignalBound != 0 || o.partition.Kind != "iid" {
		t.Errorf("defaults: compare %v, signal bound %v, partition %v", o.compare, o.p.SignalBound, o.partition)
	}
	o, err = parse([]string{"-signal-bound", "0.25", "-partition", "shards", "-compare=false"}, io.Discard)
	if err != nil || o.p.SignalBound != 0.25 || o.partition.Kind != "shards" || o.compare {
		t.Errorf("parsed %+v, %v", o, err)
	}
	// A non-private algorithm runs without the classroom's target.
	if o, err := parse([]string{"-algorithm", "mu2"}, io.Discard); err != nil || o.p.Rho != 0 {
		t.Errorf("-algorithm mu2: rho %v, %v", o.p.Rho, err)
	}
	for _, bad := range [][]string{
		{"-seeds", "0"}, {"-K", "1,x"}, {"-K", "11"}, {"-K", "-1"}, {"-kinds", "spike,nope"}, {"extra"}, {"-nope"},
		{"-signal-bound", "-0.1"}, {"-signal-bound", "NaN"}, {"-signal-bound", "+Inf"}, {"-partition", "zipf"},
		{"-attack-cap", "-1"}, {"-attack-cap", "NaN"}, {"-algorithm", "bogus"}, {"-T", "0"},
	} {
		if _, err := parse(bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestMissingData fails with the loader's error, not a panic.
func TestMissingData(t *testing.T) {
	if err := run(t.Context(), []string{"-data-dir", t.TempDir(), "-seeds", "1", "-K", "0"}, io.Discard, io.Discard); err == nil {
		t.Error("a missing dataset was not reported")
	}
}
