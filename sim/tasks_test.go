package sim_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/task"
	"browserfl/sim"
)

// taskData loads a built-in task's data as `make setup` leaves it
// (relative paths from the repository root). It is skipped only when the
// data is absent and BFL_REQUIRE_DATA is not set; make test sets it, so
// there the test cannot be skipped.
func taskData(t *testing.T, name string) (train, test dataset.Set) {
	t.Helper()
	b, err := task.LookupBuiltin(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := b.DefaultDir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir)
	}
	train, test, err = b.Load(dir)
	if errors.Is(err, os.ErrNotExist) && os.Getenv("BFL_REQUIRE_DATA") == "" {
		t.Skipf("skipped: %v (make test requires it)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return train, test
}

// TestTasks runs each built-in task's classroom session (nc, M = m = 10,
// b = 32, single pass, epsilon 8 at delta 1e-5 per device) in the
// simulator and requires its final test accuracy to clear a stated floor
// on three seeds. The floors sit about 5 points under what the seeds
// reach (tabular 72.8-74.8%, text 79.7-80.3%; docs/tasks.md) and 43-55
// points above chance (25% and 20%), so a task whose encoding, labels or
// data loading broke fails, while a seed's noise does not (the spread
// over seeds is at most 2 points).
func TestTasks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		eta   float64
		floor float64
	}{
		{"tabular", 1, 0.68},
		{"text", 0.5, 0.75},
	} {
		t.Run(tc.name, func(t *testing.T) {
			train, test := taskData(t, tc.name)
			p := optim.Params{Algorithm: "nc", Model: "logreg", M: 10, Cohort: 10, Batch: 32, Clip: 1,
				Eta: tc.eta, Epsilon: 8, Delta: 1e-5}
			p.Rounds = train.Len() / (p.M * p.Batch)
			for seed := uint64(1); seed <= 3; seed++ {
				res, err := sim.Run(context.Background(), sim.Config{Params: p, Train: train, Test: test,
					Partition: dataset.Scheme{Kind: dataset.SchemeIID}, Seed: seed, EvalEvery: 1000, Workers: 2})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s seed %d: %d rounds, test accuracy %.4f", tc.name, seed, res.Rounds, res.FinalAccuracy)
				if !(res.FinalAccuracy >= tc.floor) {
					t.Errorf("%s seed %d: test accuracy %.4f, want >= %.2f", tc.name, seed, res.FinalAccuracy, tc.floor)
				}
			}
		})
	}
}
