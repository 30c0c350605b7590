package coordinator

import (
	"browserfl/coordinator/wsconn"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDeviceOrder: the sorted device order the cohort rule scans stays
// equal to the device table, sorted by id, through joins and evictions in
// any order, and eligibleLocked returns exactly the eligible ids, sorted
// (the order optim.SampleCohort is specified over).
func TestDeviceOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))

	c := &Coordinator{front: &wsconn.Front{Lim: wsconn.Limits{MaxMisses: 2}}, devices: map[string]*device{}}
	for step := 0; step < 2000; step++ {
		id := fmt.Sprintf("dev-%03d", rng.IntN(300))
		if d := c.devices[id]; d == nil {
			d = &device{id: id, standing: standingOf(rng.IntN(3), false, 0)}
			if rng.IntN(4) > 0 {
				d.conn = &wsconn.Conn{}
			}
			c.addDeviceLocked(d)
		} else if rng.IntN(2) == 0 {
			c.removeDeviceLocked(id)
		}
		if step%97 != 0 {
			continue
		}
		var want, wantEligible []string
		for id, d := range c.devices {
			want = append(want, id)
			if d.conn != nil && d.standing.Misses() < 2 {
				wantEligible = append(wantEligible, id)
			}
		}
		slices.Sort(want)
		slices.Sort(wantEligible)
		got := make([]string, len(c.order))
		for i, d := range c.order {
			got[i] = d.id
			if c.devices[d.id] != d {
				t.Fatalf("step %d: order holds %s, not the table's device", step, d.id)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: order %v, want %v", step, got, want)
		}
		if e := c.eligibleLocked(); !slices.Equal(e, wantEligible) || c.countEligibleLocked() != len(e) {
			t.Fatalf("step %d: eligible %v (count %d), want %v", step, e, c.countEligibleLocked(), wantEligible)
		}
	}
	c.removeDeviceLocked("not-there") // no-op
}

// TestEvalDue: evaluations after rounds 1, 2, 3 and 5, then on the
// schedule, at the last round and at an early end; never with no schedule.
func TestEvalDue(t *testing.T) {
	var got []int
	for r := 1; r <= 27; r++ {
		if evalDue(r, 10, 27, false) {
			got = append(got, r)
		}
	}
	if want := []int{1, 2, 3, 5, 10, 20, 27}; !slices.Equal(got, want) {
		t.Errorf("evaluated rounds %v, want %v", got, want)
	}
	for _, tc := range []struct {
		t, every, rounds int
		ended, want      bool
	}{
		{4, 5, 100, false, false},
		{4, 5, 100, true, true},
		{1, 0, 100, false, false},
		{100, 0, 100, true, false},
		{6, 1, 100, false, true},
	} {
		if got := evalDue(tc.t, tc.every, tc.rounds, tc.ended); got != tc.want {
			t.Errorf("evalDue(%d, %d, %d, %v) = %v, want %v", tc.t, tc.every, tc.rounds, tc.ended, got, tc.want)
		}
	}
}
