package mechanism

import (
	"fmt"
	"runtime"
	"testing"

	"browserfl/internal/cputime"
)

// BenchmarkSamplersCPU times one noise vector of d = 7,850, alternating
// every iteration in one process, in the benchmark thread's CPU time
// (cputime.Now; monotonic wall time off Linux): the exact discrete Gaussian as
// before issue 12 (refStream: ChaCha20 and the bit-at-a-time trials), the
// product's exact discrete Gaussian, and the continuous ziggurat on the
// product's stream (the trusted server's noise; not safe for device
// releases, see discrete.go).
func BenchmarkSamplersCPU(b *testing.B) {
	for _, sigma := range []int64{1000, 60000} {
		b.Run(fmt.Sprintf("sigma=%d", sigma), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			v := make([]float64, benchDim)
			z := make([]int64, benchDim)
			var told, tnew, tzig int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				seed := seedOf(byte(i))
				t0 := cputime.Now()
				newRefStream(seed, PurposeNoise).fill(z, sigma)
				t1 := cputime.Now()
				DiscreteNoiseVector(z, seed, sigma, nil)
				t2 := cputime.Now()
				NoiseVector(v, seed, float64(sigma), nil)
				t3 := cputime.Now()
				told += t1 - t0
				tnew += t2 - t1
				tzig += t3 - t2
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(told)/n, "old-discrete-ns")
			b.ReportMetric(float64(tnew)/n, "discrete-ns")
			b.ReportMetric(float64(tzig)/n, "ziggurat-ns")
			b.ReportMetric(float64(told)/float64(tnew), "speedup")
		})
	}
}
