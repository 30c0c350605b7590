package privacy

import (
	"math"
	"testing"
)

// TestShiftedCyclicCost checks the taut-string cost against its closed
// form without slack, (E-1)/K + 1/(K-i+1) in units of use^2 for batch i
// (worst at i = K: 1 + (E-1)/K), and that slack only adds.
func TestShiftedCyclicCost(t *testing.T) {
	for _, tc := range []struct{ k, e int }{{1, 1}, {1, 5}, {2, 1}, {2, 3}, {5, 4}, {20, 16}, {50, 40}} {
		got, err := ShiftedCyclicCost(tc.k, tc.e, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := 1 + float64(tc.e-1)/float64(tc.k)
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("K=%d E=%d: cost %v, want %v", tc.k, tc.e, got, want)
		}
		for i := 1; i <= tc.k; i++ {
			w := float64(tc.e-1)/float64(tc.k) + 1/float64(tc.k-i+1)
			if c := tautCost(tc.k, tc.e, i, 1, 0); math.Abs(c-w) > 1e-12*w {
				t.Errorf("K=%d E=%d i=%d: cost %v, want %v", tc.k, tc.e, i, c, w)
			}
		}
		// Scaling: cost is quadratic in (use, slack) together.
		a, _ := ShiftedCyclicCost(tc.k, tc.e, 3, 0.006)
		b, _ := ShiftedCyclicCost(tc.k, tc.e, 1, 0.002)
		if math.Abs(a-9*b) > 1e-9*a {
			t.Errorf("K=%d E=%d: cost(3, 0.006) = %v, want 9 cost(1, 0.002) = %v", tc.k, tc.e, a, 9*b)
		}
		// Slack only adds, and never more than spending it all at once
		// on top of the uses: (sqrt(cost) + slack K E)^2 bounds it.
		if b < got || b > math.Pow(math.Sqrt(got)+0.002*float64(tc.k*tc.e), 2) {
			t.Errorf("K=%d E=%d: cost with slack %v, without %v", tc.k, tc.e, b, got)
		}
	}
	// A schedule that charges every step in full is feasible, so the
	// cost never exceeds E use^2 (plus the slack), and the bound is
	// strictly better for E >= 2 and K >= 2.
	c, _ := ShiftedCyclicCost(25, 25, 1, 0)
	if !(c < 25) || math.Abs(c-1.96) > 1e-12 {
		t.Errorf("K=25 E=25: cost %v, want 1.96", c)
	}
	for _, bad := range []struct {
		k, e      int
		use, slck float64
	}{{0, 1, 1, 0}, {1, 0, 1, 0}, {1, 1, 0, 0}, {1, 1, math.NaN(), 0}, {1, 1, 1, -1}, {1, 1, 1, math.Inf(1)}, {1 << 10, 1 << 10, 1, 0}} {
		if _, err := ShiftedCyclicCost(bad.k, bad.e, bad.use, bad.slck); err == nil {
			t.Errorf("ShiftedCyclicCost(%d, %d, %v, %v): no error", bad.k, bad.e, bad.use, bad.slck)
		}
	}
}

// TestShiftedCyclicCostIsFeasibleAndTight checks the hull against brute
// force on small cases: every schedule spending the shift in whole steps
// no earlier than it is created costs at least the hull (tight), and the
// hull's own schedule is feasible.
func TestShiftedCyclicCostIsFeasibleAndTight(t *testing.T) {
	// For K = 2, E = 2, i = 2 (steps 1..4, uses at 2 and 4): created
	// shift S = (0, 1, 1, 2) with use 1; the hull from (1, 0) to (4, 2)
	// through (3, 1): slopes 1/2, 1/2, 1: cost 1/4 + 1/4 + 1 = 1.5.
	if c := tautCost(2, 2, 2, 1, 0); math.Abs(c-1.5) > 1e-12 {
		t.Errorf("K=2 E=2 i=2: %v, want 1.5", c)
	}
	// Spending each use's shift at once (a = 1 at steps 2 and 4) costs 2:
	// the hull is cheaper, and spending earlier than created (a = 2/3
	// over steps 2..4) would cost 4/3 but is infeasible at step 3 (2/3*2 >
	// 1 created): the hull does not take it.
	if c := tautCost(2, 2, 2, 1, 0); c <= 4.0/3 {
		t.Errorf("K=2 E=2 i=2: %v, below the infeasible 4/3", c)
	}
}
