package optim

import (
	"math"
	"math/rand/v2"
	"testing"

	"browserfl/shared/mechanism"
)

// TestTrustedNoiseIsDiscrete: the trusted server's release of each round
// is step (round(q_t / step) + Z_t), with Z_t an exact discrete Gaussian
// of sigma_Z grid units, where step sigma_Z is at least the calibrated
// TrustedSigma and at most 0.1% plus one grid step above it (the device's
// rule, mechanism.DiscreteSigma). It checks, for d = 2,000 and 20 rounds
// of random sums:
//   - every released coordinate is an integer number of grid steps
//     (exactly, in float64), and round(q_t / step) is the exact q_t
//     rounded (so the noise is added on the grid, not in float64);
//   - step sigma_Z against TrustedSigma, deterministically;
//   - the 40,000 draws' sample variance against sigma_Z^2: the test fails
//     when the ratio leaves [0.95, 1.05]. Its standard deviation is
//     sqrt(2 / 40,000) = 0.0071 (kurtosis of a Gaussian; the discrete
//     Gaussian at sigma_Z >= 64 is within 1e-6 of it), so a correct
//     sampler fails with probability about P(|N(0,1)| > 7) = 3e-12, while
//     noise 10% too small (ratio 0.81) fails with probability 1 - 1e-100.
func TestTrustedNoiseIsDiscrete(t *testing.T) {
	const d, rounds = 2000, 20
	p := Params{Algorithm: "trusted", Model: "logreg", M: 10, Cohort: 10, Rounds: rounds, Batch: 32, Clip: 1, Eta: 0.1, Rho: 1.5}
	srv, err := NewServer(p, make([]float64, d), mechanism.NewStream(testSeed(3), 0))
	if err != nil {
		t.Fatal(err)
	}
	s := srv.(*server)
	sigma := TrustedSigma(p)
	got := s.gstep * float64(s.sigmaZ)
	if !(got >= sigma) || got > sigma*1.001+s.gstep {
		t.Fatalf("step sigma_Z = %g, calibrated sigma %g: want in [sigma, 1.001 sigma + step]", got, sigma)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sum := make([]float64, d)
	var sq float64
	n := 0
	for r := 1; r <= rounds; r++ {
		for i := range sum {
			sum[i] = rng.NormFloat64() * 0.3
		}
		before := append([]float64(nil), s.q...)
		if err := s.ApplySum(r, sum, p.Cohort); err != nil {
			t.Fatal(err)
		}
		for i, v := range s.noise {
			k := v / s.gstep
			if k != math.Trunc(k) {
				t.Fatalf("round %d coordinate %d: released %v is not on the grid (step %g)", r, i, v, s.gstep)
			}
			q := before[i] + sum[i]*(1/float64(p.Cohort)) // the server multiplies by 1/m
			if s.q[i] != q {
				t.Fatalf("round %d coordinate %d: q_t = %v, want %v", r, i, s.q[i], q)
			}
			z := k - math.RoundToEven(q/s.gstep)
			sq += z * z
			n++
		}
	}
	ratio := sq / float64(n) / (float64(s.sigmaZ) * float64(s.sigmaZ))
	t.Logf("sigma_Z = %d grid units (step %g), %d draws, variance / sigma_Z^2 = %.4f", s.sigmaZ, s.gstep, n, ratio)
	if ratio < 0.95 || ratio > 1.05 {
		t.Fatalf("variance / sigma_Z^2 = %.4f, want within [0.95, 1.05]", ratio)
	}
}

// TestTrustedRefusesCompressors: a trusted session's devices send clean
// updates, so only dense messages keep the sensitivity the server's noise
// is calibrated to (top-k moves a message by up to S for one sample,
// rand-k scales by d/k, error feedback carries a sample into later
// rounds, quantisation rounds by more than float32).
func TestTrustedRefusesCompressors(t *testing.T) {
	for _, tc := range []struct {
		spec string
		ok   bool
	}{
		{"", true}, {"f32", true}, {"f64", true},
		{"topk:0.1", false}, {"randk:0.1", false}, {"ef+f32", false}, {"ef+topk:0.1", false}, {"qinf:8bit", false},
	} {
		p := Params{Algorithm: "trusted", Model: "logreg", M: 10, Cohort: 10, Rounds: 5, Batch: 32, Clip: 1, Eta: 0.1, Rho: 1.5, Compressor: tc.spec}
		err := p.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("trusted with %q: err = %v, want ok = %v", tc.spec, err, tc.ok)
		}
	}
}
