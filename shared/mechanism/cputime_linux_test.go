//go:build linux

package mechanism

import (
	"browserfl/internal/cputime"
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkSamplersCPU times one noise vector of d = 7,850 from each of
// the three samplers, alternating every iteration in one process, in the
// benchmark thread's CPU time, and counts the keystream bytes each
// consumes: the ziggurat (continuous, the old device noise), Karney's
// exact discrete Gaussian (the product) and CKS Algorithm 3 (the test
// reference).
func BenchmarkSamplersCPU(b *testing.B) {
	for _, sigma := range []int64{1000, 60000} {
		b.Run(fmt.Sprintf("sigma=%d", sigma), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			v := make([]float64, benchDim)
			z := make([]int64, benchDim)
			var tz, tk, tc int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s1 := NewStream(seedOf(byte(i)), PurposeNoise)
				s2 := NewStream(seedOf(byte(i)), PurposeNoise)
				s3 := NewStream(seedOf(byte(i)), PurposeNoise)
				t0 := cputime.Thread()
				s1.FillNormal(v, float64(sigma))
				t1 := cputime.Thread()
				s2.FillDiscreteGaussian(z, sigma)
				t2 := cputime.Thread()
				for k := range z {
					z[k] = s3.discreteGaussianCKS(sigma)
				}
				t3 := cputime.Thread()
				tz += t1 - t0
				tk += t2 - t1
				tc += t3 - t2
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(tz)/n, "ziggurat-cpu-ns")
			b.ReportMetric(float64(tk)/n, "karney-cpu-ns")
			b.ReportMetric(float64(tc)/n, "cks-cpu-ns")
		})
	}
}
