package privacy

import (
	"fmt"
	"math"
)

// MaxShiftedSteps bounds K*E in ShiftedCyclicCost (the cost is
// O(K * K * E)).
const MaxShiftedSteps = 1 << 16

// ShiftedCyclicCost is the privacy-amplification-by-iteration bound for
// the last iterate of E cyclic passes over K step batches, for a record
// in the worst-placed batch. It returns the smallest known total squared
// shift
//
//	min sum_j a_j^2   over the shift schedules a of the proof,
//
// maximised over the record's batch i in 1..K, with a shift of use (the
// distance one step that uses the record can add between the two runs)
// at each of the record's E uses and slack (the most a step that does
// not use it can add: the grid rounding) at every step from its first
// use to the last step. With Gaussian noise of standard deviation s per
// step (in the same units), the last iterate is sqrt(cost)/s-GDP and
// cost/(2 s^2)-zCDP (docs/privacy.md 4b gives the proof; it needs every
// step map to be nonexpansive up to that slack).
//
// The schedule is the taut string: with S(j) the shift created up to step
// j, a feasible schedule spends at most S(j) by step j and all of it by
// the last step; the cheapest one follows the lower convex hull of the
// points (j, S(j)). Without slack and with E passes the cost is
// use^2 ((E-1)/K + 1/(K-i+1)), largest for i = K: use^2 (1 + (E-1)/K),
// against E use^2 when every step is charged.
func ShiftedCyclicCost(k, e int, use, slack float64) (float64, error) {
	switch {
	case k < 1 || e < 1:
		return 0, fmt.Errorf("privacy: shifted cost: K = %d, E = %d, want both >= 1", k, e)
	case k > MaxShiftedSteps/e:
		return 0, fmt.Errorf("privacy: shifted cost: K E = %d x %d steps, at most %d", k, e, MaxShiftedSteps)
	case !(use > 0) || math.IsInf(use, 0):
		return 0, fmt.Errorf("privacy: shifted cost: use shift %v, want finite > 0", use)
	case !(slack >= 0) || math.IsInf(slack, 0):
		return 0, fmt.Errorf("privacy: shifted cost: slack %v, want finite >= 0", slack)
	}
	worst := 0.0
	for i := 1; i <= k; i++ {
		worst = max(worst, tautCost(k, e, i, use, slack))
	}
	return worst, nil
}

// tautCost is the cost of the lower convex hull of the cumulative shift
// S(j), j = i-1 .. K E, for a record in batch i.
func tautCost(k, e, i int, use, slack float64) float64 {
	T := k * e
	// Points (j, S(j)) from the last step before the first use.
	xs := make([]float64, 0, T-i+2)
	ys := make([]float64, 0, T-i+2)
	s := 0.0
	xs, ys = append(xs, float64(i-1)), append(ys, 0)
	for j := i; j <= T; j++ {
		s += slack
		if (j-i)%k == 0 {
			s += use
		}
		// Lower hull (monotone chain): drop the last point while it
		// lies on or above the segment from the one before it to (j, s).
		x := float64(j)
		for n := len(xs); n >= 2; n = len(xs) {
			x1, y1, x2, y2 := xs[n-2], ys[n-2], xs[n-1], ys[n-1]
			if (y2-y1)*(x-x1) >= (s-y1)*(x2-x1) {
				xs, ys = xs[:n-1], ys[:n-1]
				continue
			}
			break
		}
		xs, ys = append(xs, x), append(ys, s)
	}
	cost := 0.0
	for n := 1; n < len(xs); n++ {
		dx, dy := xs[n]-xs[n-1], ys[n]-ys[n-1]
		cost += dy * dy / dx // dx steps of dy/dx each
	}
	return cost
}
