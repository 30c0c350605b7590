package plan

import (
	"math"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/privacy"
)

// lastIterateSession is local training with K = E = 25 passes over a
// device's 600-sample round, certified for the last-iterate charge
// (docs/privacy.md 4b), at epsilon 8 (delta 1e-5).
func lastIterateSession() optim.Params {
	return optim.Params{Algorithm: "local", Model: "logreg-unit", Features: 784, Classes: 10,
		M: 100, Cohort: 10, Rounds: 100, Batch: 600, LocalSteps: 25, LocalEpochs: 25,
		Clip: 2, Eta: 1, Epsilon: 8, Delta: 1e-5}
}

// TestLastIterateSessionReadAsGDP: the figures of a session charged by
// the last-iterate bound, and the owner's budget comparison, read its
// ledger with Gaussian DP plus the actual TV term of its K E steps
// (optim.LocalTV), never through the zCDP (CKS) conversion, at the owner
// deltas 1e-5 and 1e-10. At 1e-10 the CKS figure (12.07) is below the
// ordinary reading with the slack bound, so reading through CKS would show it; the
// proven figure is 11.5749 (11.58 as shown). Deterministic.
func TestLastIterateSessionReadAsGDP(t *testing.T) {
	p := lastIterateSession()
	tv, err := optim.LocalTV(p, 10*785)
	if err != nil || !(tv > 0) {
		t.Fatalf("LocalTV = %v, %v", tv, err)
	}
	for _, delta := range []float64{1e-5, 1e-10} {
		f, err := SessionFigures(p, delta)
		if err != nil {
			t.Fatal(err)
		}
		if !f.WorstSpent.LastIterate || f.WorstSpent.TV != tv || f.WorstSpent.Rho != f.WorstRho {
			t.Fatalf("delta %g: worst-case ledger %+v, want last-iterate with TV %v", delta, f.WorstSpent, tv)
		}
		if tv > privacy.DiscretisationSlack*f.WorstRho {
			t.Fatalf("TV %v over what a device accepts", tv)
		}
		want := referenceGDPPlusTV(t, f.WorstRho, tv, delta)
		cks, _ := privacy.ZCDPToEpsilon(f.WorstRho, delta)
		ordinary, _ := privacy.LedgerEpsilon(f.WorstRho, delta)
		if math.Abs(f.Epsilon-want) > 1e-9*want || f.Epsilon == cks || f.Epsilon == ordinary {
			t.Errorf("delta %g: epsilon %.12g, want GDP + TV %.12g (CKS %.12g, ordinary reading %.12g)", delta, f.Epsilon, want, cks, ordinary)
		}
		b := Budget{Epsilon: 20, Delta: delta}
		pr, err := b.Progress(p, privacy.Spent{}, privacy.Spent{}, 0)
		if err != nil || pr.Most != f.Epsilon {
			t.Errorf("delta %g: Progress.Most %v (%v), want %v", delta, pr.Most, err, f.Epsilon)
		}
		// Refused exactly when the proven figure is over the budget.
		under := Budget{Epsilon: math.Nextafter(f.Epsilon, 0), Delta: delta}
		if Check(p, under, privacy.Spent{}) == nil || Check(p, Budget{Epsilon: f.Epsilon, Delta: delta}, privacy.Spent{}) != nil {
			t.Errorf("delta %g: Check does not compare the proven figure %v", delta, f.Epsilon)
		}
	}
	if f, err := SessionFigures(p, 1e-10); err == nil && math.Abs(f.Epsilon-11.5749) > 1e-4 {
		t.Errorf("K = E = 25 at 1e-10: epsilon %v, want 11.5749 (docs/privacy.md 4b)", f.Epsilon)
	}
	// Without the model's shape the planner takes the most a device
	// accepts (the slack bound): never below the actual term.
	q := p
	q.Features, q.Classes = 0, 0
	g, err := SessionFigures(q, 1e-5)
	if err != nil || !g.WorstSpent.LastIterate || !(g.WorstSpent.TV >= privacy.DiscretisationSlack*g.WorstRho) {
		t.Errorf("no model shape: %+v (%v), want the slack bound", g.WorstSpent, err)
	}
}

// referenceGDPPlusTV is the smallest epsilon (to 1e-12) with
// delta_GDP(sqrt(2 rho), epsilon) + (1 + e^epsilon) tv <= delta, from
// privacy.GDPToDelta alone.
func referenceGDPPlusTV(t *testing.T, rho, tv, delta float64) float64 {
	t.Helper()
	f := func(eps float64) float64 {
		d, err := privacy.GDPToDelta(math.Sqrt(2*rho), eps)
		if err != nil {
			t.Fatal(err)
		}
		return d + (1+math.Exp(eps))*tv
	}
	lo, hi := 0.0, 0.0
	for f(hi) > delta {
		lo, hi = hi, hi+1e-3
		if hi > 100 {
			t.Fatalf("rho %v tv %v delta %v: no epsilon below 100", rho, tv, delta)
		}
	}
	for hi-lo > 1e-12 {
		if mid := (lo + hi) / 2; f(mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
