package sim

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
)

// TestPoolEach checks that every job runs exactly once, that worker
// indices stay in [0, n), and that one worker runs everything on the
// caller's goroutine in index order.
func TestPoolEach(t *testing.T) {
	for _, c := range []struct{ n, count int }{{1, 0}, {1, 7}, {2, 1}, {2, 50}, {4, 3}, {8, 1000}} {
		var runs = make([]atomic.Int32, c.count)
		var bad atomic.Bool
		order := []int{}
		pool{n: c.n}.each(c.count, func(w, k int) {
			if w < 0 || w >= c.n {
				bad.Store(true)
			}
			runs[k].Add(1)
			if c.n == 1 {
				order = append(order, k) // no goroutines: no race
			}
		})
		if bad.Load() {
			t.Errorf("n=%d count=%d: worker index out of range", c.n, c.count)
		}
		for k := range runs {
			if r := runs[k].Load(); r != 1 {
				t.Errorf("n=%d count=%d: job %d ran %d times", c.n, c.count, k, r)
			}
		}
		for i, k := range order {
			if i != k {
				t.Fatalf("n=1: job %d ran in position %d", k, i)
			}
		}
	}
}

// TestEvaluatorMatchesEvaluate checks the parallel evaluation against
// model.Evaluate on a test set of several chunks (and a partial last
// one): the same accuracy exactly, the same loss up to the rounding of
// the split sum, and the very same bits for any number of workers.
func TestEvaluatorMatchesEvaluate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	set := blobs(3*evalChunk+123, 8)
	m := model.NewLogReg(set.Features, set.Classes)
	w := make([]float64, m.Dim())
	for i := range w {
		w[i] = r.NormFloat64() // a poor model: accuracy well inside (0, 1)
	}
	wantAcc, wantLoss := model.Evaluate(m, w, set.Samples)
	var acc1, loss1 float64
	for _, n := range []int{1, 2, 3, 8} {
		acc, loss := newEvaluator(pool{n: n}, m, set.Samples).evaluate(w)
		if acc != wantAcc || math.Abs(loss-wantLoss) > 1e-12*math.Abs(wantLoss) {
			t.Errorf("workers=%d: (%v, %v), model.Evaluate gives (%v, %v)", n, acc, loss, wantAcc, wantLoss)
		}
		if n == 1 {
			acc1, loss1 = acc, loss
		} else if acc != acc1 || loss != loss1 {
			t.Errorf("workers=%d: (%v, %v), one worker gives (%v, %v)", n, acc, loss, acc1, loss1)
		}
	}
	if a, l := newEvaluator(pool{n: 2}, m, []dataset.Sample{}).evaluate(w); !math.IsNaN(a) || !math.IsNaN(l) {
		t.Errorf("empty test set: (%v, %v), want NaN", a, l)
	}
	if wantAcc < 0.05 || wantAcc > 0.95 {
		t.Fatalf("accuracy %v: the test needs a model that is neither always right nor always wrong", wantAcc)
	}
}
