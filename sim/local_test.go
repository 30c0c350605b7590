package sim

import (
	"context"
	"slices"
	"testing"
)

// TestLocalAlgorithm runs "local" (K hidden local steps per round) in the
// simulator: the run is a function of its seed, it learns the separable
// blobs, no device spends more than its zCDP budget, and no sample is used
// twice (single pass: 600 samples, b = 4 per participation).
func TestLocalAlgorithm(t *testing.T) {
	run := func(seed uint64, workers int) Result {
		c := config("local", seed)
		c.Params.Rho = 20
		c.Params.Batch, c.Params.LocalSteps = 4, 2
		c.Params.Eta = 0.5
		c.Params.Rounds = 40
		c.Workers = workers
		res, err := Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(5, 1), run(5, 3)
	if !slices.Equal(a.Model, b.Model) {
		t.Fatal("same seed, different models")
	}
	if slices.Equal(a.Model, run(6, 2).Model) {
		t.Fatal("different seeds gave the same model")
	}
	if a.FinalAccuracy < 0.9 {
		t.Errorf("accuracy %.3f, want >= 0.9 (chance is 1/3)", a.FinalAccuracy)
	}
	budget := 20.0 * 20 / 2
	var used int
	for _, r := range a.Records {
		if !(r.MaxRho > 0 && r.MaxRho <= budget*(1+1e-12)) {
			t.Fatalf("round %d: max device rho %v, want in (0, %v]", r.Round, r.MaxRho, budget)
		}
		used += r.Participants * 4
	}
	if used > 600 || a.Rounds >= 40 {
		t.Errorf("%d samples used in %d rounds: 600 samples at 20 per round last 30 full rounds, never 40", used, a.Rounds)
	}
}
