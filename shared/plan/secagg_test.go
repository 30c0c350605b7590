package plan

import (
	"math"
	"testing"

	"browserfl/shared/mechanism"
	"browserfl/shared/optim/algo"
	"browserfl/shared/wire"
)

func sharedSession(m, threshold int) wire.SessionParams {
	return wire.SessionParams{Name: "s", Algorithm: "shared", Model: "logreg", Features: 784, Classes: 10, Dim: 7850,
		M: 3 * m, Cohort: m, Rounds: 40, Batch: 20, Clip: 1, Eta: 0.1, Epsilon: 8, Delta: 1e-5, DeadlineMillis: 5000, Threshold: threshold}
}

// TestSessionSecAgg checks the secure aggregation a shared-noise session
// derives: the threshold is optim's, the grid is the devices', the ring
// holds m releases at the coordinate bound, and the bound lies above the
// noise a release carries (at least 6 standard deviations of the new
// share minus the cancelled one at the release cap).
func TestSessionSecAgg(t *testing.T) {
	for _, tc := range []struct{ m, bits int }{{10, 32}, {30, 32}, {300, 32}, {3000, 64}} {
		s := sharedSession(tc.m, 0)
		a, err := SessionSecAgg(s)
		if err != nil {
			t.Fatal(err)
		}
		p := s
		step, err := mechanism.GridStep(algo.Sensitivity(p), s.Dim)
		if err != nil {
			t.Fatal(err)
		}
		if a.Threshold != p.SharedThreshold() || a.MaxClients != tc.m || a.Step != step || a.Bits != tc.bits {
			t.Errorf("m %d: %+v, want threshold %d, step %g, bits %d", tc.m, a, p.SharedThreshold(), step, tc.bits)
		}
		if a.Bits == 64 && int64(a.MaxClients)*a.MaxAbs <= math.MaxInt32 {
			t.Errorf("m %d: a 64-bit ring for %d releases of %d, which fit 32 bits", tc.m, a.MaxClients, a.MaxAbs)
		}
		if a.Bits == 32 && int64(a.MaxClients)*a.MaxAbs > math.MaxInt32 {
			t.Errorf("m %d: %d releases of %d wrap a 32-bit ring", tc.m, a.MaxClients, a.MaxAbs)
		}
		// The noise of a release is the new share minus the cancelled
		// one: at the cap, discrete Gaussians of hi and lo grid units.
		sens := algo.Sensitivity(p)
		sig := func(n int) float64 {
			z, err := mechanism.DiscreteSigma(algo.NCSigma(p, n)*algo.ShareScale(p), sens, step, s.Dim)
			if err != nil {
				t.Fatal(err)
			}
			return float64(z)
		}
		hi, lo := sig(p.ReleaseCap()), sig(p.ReleaseCap()-1)
		// Beyond the clipped signal and the rounding, the bound must
		// leave at least 8 standard deviations of that noise: the
		// Gaussian tail at 8 is 1.2e-15 a coordinate, 3e-8 over the
		// d R^2 = 1.3e7 (coordinate, release pair) of a session.
		noise := float64(a.MaxAbs) - (p.S()/step + 0.5)
		if noise < 8*math.Sqrt(hi*hi+lo*lo) {
			t.Errorf("m %d: coordinate bound %d grid units leaves %.0f for the noise, under 8 standard deviations (%.0f each)", tc.m, a.MaxAbs, noise, math.Sqrt(hi*hi+lo*lo))
		}
	}
	for _, s := range []wire.SessionParams{
		sharedSession(10, 5), // t = m/2: two survivor sets could each collect t signatures
		func() wire.SessionParams { s := sharedSession(10, 0); s.Algorithm = "nc"; return s }(),
	} {
		if _, err := SessionSecAgg(s); err == nil {
			t.Errorf("secure aggregation of %s with threshold %d of %d accepted", s.Algorithm, s.Threshold, s.Cohort)
		}
	}
}
