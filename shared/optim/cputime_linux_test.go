//go:build linux

package optim

import (
	"browserfl/internal/cputime"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
	"browserfl/shared/session"
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkSamplersInterleaved compares, in one process and alternating
// every iteration, the "nc" device step with the discrete Gaussian release
// (the product) against the same step with the continuous ziggurat noise
// it replaced (emulated as the noise-free "mu2" device step, which runs the
// same estimator, clipping and encoding, plus a ziggurat vector and the
// noise-cancellation add). It also times the two noise vectors alone.
// Times are the benchmark thread's CPU time (not wall time, which the
// other jobs on a shared machine inflate); see docs/performance.md.
func BenchmarkSamplersInterleaved(b *testing.B) {
	for _, bs := range []int{1, 32} {
		b.Run(fmt.Sprintf("b=%d", bs), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			m, _ := model.New("logreg", 784, 10)
			d := m.Dim()
			pNew := table1Params("nc", bs)
			pNew.Rounds = session.MaxRounds
			pOld := pNew
			pOld.Algorithm, pOld.Rho, pOld.Clip = "mu2", 0, 118.1
			dvNew, err := NewDevice(pNew, m.Clone(), mechanism.NewStream(testSeed(1), 0))
			if err != nil {
				b.Fatal(err)
			}
			dvOld, err := NewDevice(pOld, m.Clone(), mechanism.NewStream(testSeed(1), 0))
			if err != nil {
				b.Fatal(err)
			}
			rng := mechanism.NewStream(testSeed(2), 0)
			data := mnistLike(rng, bs)
			x := make([]float64, d)
			xp := make([]float64, d)
			rng.FillNormal(x, 0.01)
			rng.FillNormal(xp, 0.01)
			y, yPrev, v := make([]float64, d), make([]float64, d), make([]float64, d)
			yz := make([]int64, d)
			noise := mechanism.NewStream(testSeed(3), mechanism.PurposeNoise)
			sigma := algo.NCSigma(pNew, 1)
			sigmaZ := dvNew.(*device).freshOrNC(1)
			var tOld, tNew, tZig, tDisc int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := cputime.Thread()
				if _, err := dvOld.Prepare(Round{T: i + 1, X: x, XPrev: xp}, data); err != nil {
					b.Fatal(err)
				}
				noise.FillNormal(y, sigma)
				for k := range v {
					v[k] += y[k] - yPrev[k]
				}
				dvOld.Commit(i + 1)
				t1 := cputime.Thread()
				if _, err := dvNew.Prepare(Round{T: i + 1, X: x, XPrev: xp}, data); err != nil {
					b.Fatal(err)
				}
				dvNew.Commit(i + 1)
				t2 := cputime.Thread()
				noise.FillNormal(y, sigma)
				t3 := cputime.Thread()
				noise.FillDiscreteGaussian(yz, sigmaZ)
				t4 := cputime.Thread()
				tOld += t1 - t0
				tNew += t2 - t1
				tZig += t3 - t2
				tDisc += t4 - t3
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(tOld)/n, "old-step-cpu-ns")
			b.ReportMetric(float64(tNew)/n, "new-step-cpu-ns")
			b.ReportMetric(float64(tNew)/float64(tOld), "step-ratio")
			b.ReportMetric(float64(tZig)/n, "ziggurat-vec-cpu-ns")
			b.ReportMetric(float64(tDisc)/n, "discrete-vec-cpu-ns")
		})
	}
}
