package plan

import (
	"math"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/privacy"
)

// certifiedSession is local training with K = E = 25 passes over a
// device's 600-sample round, certified for output perturbation
// (docs/privacy.md 4b), at epsilon 8 (delta 1e-5).
func certifiedSession() optim.Params {
	return optim.Params{Algorithm: "local", Model: "logreg-unit", Features: 784, Classes: 10,
		M: 100, Cohort: 10, Rounds: 100, Batch: 600, LocalSteps: 25, LocalEpochs: 25,
		Clip: 2, Eta: 1, Epsilon: 8, Delta: 1e-5}
}

// TestOutputPerturbationSessionIsOrdinary: a certified session of
// "local" is charged by output perturbation, an ordinary zCDP charge of
// the whole budget, read like every other ordinary ledger
// (privacy.LedgerEpsilon), never as a last-iterate one; its noise is one
// vector calibrated to E Delta (1 + slack) (the planner's figure is the
// device's: algo.FreshSigma). Deterministic.
func TestOutputPerturbationSessionIsOrdinary(t *testing.T) {
	p := certifiedSession()
	if !algo.LocalOutputPerturbation(p) {
		t.Fatal("the certified session is not under output perturbation")
	}
	budget, _ := algo.ZCDPBudget(p)
	for _, delta := range []float64{1e-5, 1e-10} {
		f, err := SessionFigures(p, delta)
		if err != nil {
			t.Fatal(err)
		}
		if f.WorstSpent.LastIterate || math.Abs(f.WorstRho-budget) > 1e-9*budget {
			t.Fatalf("delta %g: worst-case ledger %+v, want an ordinary charge of the budget %v", delta, f.WorstSpent, budget)
		}
		want, _ := privacy.LedgerEpsilon(f.WorstRho, delta)
		if math.Abs(f.Epsilon-want) > 1e-9*want {
			t.Errorf("delta %g: epsilon %.12g, want the ordinary reading %.12g", delta, f.Epsilon, want)
		}
	}
	r, err := Compute(p, 1e-5)
	if err != nil || len(r.Noise) != 1 {
		t.Fatalf("Compute: %v, %+v", err, r.Noise)
	}
	// One vector: sigma = E Delta (1 + 1e-4) / sqrt(2 budget), Delta =
	// 2S/(b/K) = 4/24 (docs/privacy.md 4b).
	delta := 2 * p.Clip / float64(p.Batch/p.LocalSteps)
	want := float64(p.LocalEpochs) * delta * (1 + 1e-4) / math.Sqrt(2*budget)
	if s := r.Noise[0].Sigma; math.Abs(s-want) > 1e-9*want {
		t.Errorf("planned sigma %v, want E Delta (1 + 1e-4) / sqrt(2 rho) = %v", s, want)
	}
}
