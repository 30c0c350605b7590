package plan

import (
	"math"
	"testing"

	"browserfl/shared/optim"
)

// TestLocalFigures: the planner states for "local" what its devices
// charge: one hidden step's cost at the per-step sensitivity 2S/(b/K)
// (recomputed here), which is the whole budget, and the same epsilon as
// the target.
func TestLocalFigures(t *testing.T) {
	p := optim.Params{Algorithm: "local", M: 100, Cohort: 50, Rounds: 10, Batch: 50, LocalSteps: 5,
		Clip: 1, Eta: 1, Epsilon: 8, Delta: 1e-5}
	r, err := Compute(p, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	sens := 2 * p.Clip / float64(p.Batch/p.LocalSteps)
	sigma := r.Noise[0].Sigma
	if got := sens * sens / (2 * sigma * sigma); math.Abs(got-r.WorstRho) > 1e-9*got || math.Abs(r.WorstRho-r.BudgetRho) > 1e-9*got {
		t.Errorf("one step costs %v, worst case %v, budget %v: want all equal", got, r.WorstRho, r.BudgetRho)
	}
	f, err := SessionFigures(p, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Private || f.Trusted || math.Abs(f.Epsilon-8) > 1e-6 {
		t.Errorf("figures %+v, want private, untrusted, epsilon 8", f)
	}
}
