package sim

import (
	"math"
	"sync"
	"sync/atomic"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
)

// pool runs the jobs of a round on at most n goroutines, the caller's
// included: with n = 1 everything runs on the calling goroutine (no
// goroutine, no synchronisation), which is what makes a one-worker run
// comparable with a single-threaded loop. Jobs are handed out in index
// order from an atomic counter; each job writes only its own results, so
// the outcome never depends on n or on the schedule.
type pool struct{ n int }

// each calls f(worker, k) for k in [0, count), worker in [0, n) naming
// the goroutine (for per-goroutine scratch), and returns when all are done.
func (p pool) each(count int, f func(worker, k int)) {
	w := min(p.n, count)
	if w <= 1 {
		for k := 0; k < count; k++ {
			f(0, k)
		}
		return
	}
	var next atomic.Int64
	work := func(worker int) {
		for {
			k := int(next.Add(1) - 1)
			if k >= count {
				return
			}
			f(worker, k)
		}
	}
	var wg sync.WaitGroup
	for i := 1; i < w; i++ {
		wg.Go(func() { work(i) })
	}
	work(0)
	wg.Wait()
}

// evalChunk is the number of test samples per evaluation job. It is fixed
// (not derived from the number of workers) so that the summed loss, whose
// rounding depends on how the sum is split, is the same for any pool.
const evalChunk = 500

// evaluator computes test accuracy and mean loss in parallel: fixed
// chunks of the test set, one model clone per worker (models keep
// scratch), partial results combined in chunk order.
type evaluator struct {
	pool    pool
	models  []model.Model
	test    []dataset.Sample
	correct []int
	loss    []float64
}

func newEvaluator(p pool, proto model.Model, test []dataset.Sample) *evaluator {
	chunks := (len(test) + evalChunk - 1) / evalChunk
	e := &evaluator{pool: p, models: make([]model.Model, max(1, p.n)), test: test,
		correct: make([]int, chunks), loss: make([]float64, chunks)}
	for i := range e.models {
		e.models[i] = proto.Clone()
	}
	return e
}

// evaluate returns the accuracy and the mean loss of w on the test set
// (NaN, NaN for an empty set), the same figures as model.Evaluate up to
// the rounding of the loss sum.
func (e *evaluator) evaluate(w []float64) (accuracy, meanLoss float64) {
	if len(e.test) == 0 {
		return math.NaN(), math.NaN()
	}
	e.pool.each(len(e.correct), func(worker, k int) {
		part := e.test[k*evalChunk : min(len(e.test), (k+1)*evalChunk)]
		acc, l := model.Evaluate(e.models[worker], w, part)
		n := float64(len(part))
		e.correct[k] = int(math.Round(acc * n)) // acc = correct/n exactly rounded
		e.loss[k] = l * n
	})
	correct, sum := 0, 0.0
	for k := range e.correct {
		correct += e.correct[k]
		sum += e.loss[k]
	}
	n := float64(len(e.test))
	return float64(correct) / n, sum / n
}
