package mechanism

import (
	"fmt"
	"testing"

	"browserfl/internal/cputime"
)

// demoSigma is the discrete sigma (grid units) of the demo session's first
// nc participation: cmd/coordinator's default session (nc, logreg, b = 32,
// S = 1, rho_p = 1.5, T = 200; M = 30, or M = 10 as a ten-device lesson
// sizes it) gives sigma_Z = 211,997 from optim's ncSigmaZ(1) (as computed
// on 2026-11-29).
const demoSigma = 211997

// BenchmarkSamplersCPU times one noise vector of d = 7,850 from a fresh
// stream, interleaved in one process in the benchmark thread's CPU time
// (cputime.Interleave): the product's exact discrete Gaussian (the block
// sampler) and the continuous ziggurat on the same stream (the trusted
// server's noise, kept as the speed baseline; not safe for device
// releases, see discrete.go). "exact/ziggurat" is the ratio make bench
// prints; the first sub-benchmark is the demo's first sigma.
func BenchmarkSamplersCPU(b *testing.B) {
	for _, sigma := range []int64{demoSigma, 1000, 60000, MaxDiscreteSigma} {
		b.Run(fmt.Sprintf("sigma=%d", sigma), func(b *testing.B) {
			v := make([]float64, benchDim)
			z := make([]int64, benchDim)
			s := NewStream(seedOf(1), PurposeNoise)
			var i int
			ns := cputime.Interleave(b,
				func() { DiscreteNoiseVector(z, seedOf(byte(i)), sigma, s) },
				func() { NoiseVector(v, seedOf(byte(i)), float64(sigma), s); i++ })
			b.ReportMetric(ns[0]/1e3, "exact-us")
			b.ReportMetric(ns[1]/1e3, "ziggurat-us")
			b.ReportMetric(ns[0]/ns[1], "exact/ziggurat")
		})
	}
}
