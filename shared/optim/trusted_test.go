package optim

import (
	"math"
	"math/rand/v2"
	"testing"

	"browserfl/shared/mechanism"
	"browserfl/shared/optim/algo"
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
	sigma := algo.TrustedSigma(p)
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

// TestTrustedFloatingPointDistinguisher runs the floating-point attack
// (Mironov 2012; the device's version is
// mechanism.TestFloatingPointDistinguisher) against the trusted server's
// release, the attacker's strongest view: one device's clean update moves
// coordinate 0 of the round's sum from s (dataset D) to s' (D'), and the
// attacker, who knows s, s', sigma and the grid, guesses "D" when the
// release minus s lies on the ziggurat's output lattice or on the grid.
// Against a continuous release
// (s + sigma * NormFloat64()) the advantage must be at least 0.9 (the
// attack has power); against the product's release, step (round(q /
// step) + Z), it must be at most 0.1 in absolute value, with s and with
// s rounded to the grid as the attacker's candidate. n = 2,000 releases
// under each dataset: for an attack whose guess has the same probability
// under D and D', each frequency deviates from it by more than 0.05 with
// probability at most 2 exp(-2 n 0.05^2) = 9.1e-5 (Hoeffding), so a
// check fails wrongly with probability below 2e-4.
func TestTrustedFloatingPointDistinguisher(t *testing.T) {
	const d, n, tol = 4, 2000, 1e-6
	p := Params{Algorithm: "trusted", Model: "logreg", M: 1, Cohort: 1, Rounds: 10, Batch: 32, Clip: 1, Eta: 0.1, Rho: 1.5}
	sigma := algo.TrustedSigma(p)
	const s, s2 = 0.3, -0.2 // coordinate 0 of the round's sum under D and D'
	release := func(trial int, which byte, v float64) (float64, float64) {
		var sd mechanism.Seed
		sd[0], sd[1], sd[2] = byte(trial), byte(trial>>8), which
		srv, err := NewServer(p, make([]float64, d), mechanism.NewStream(sd, 0))
		if err != nil {
			t.Fatal(err)
		}
		sum := make([]float64, d)
		sum[0] = v
		impl := srv.(*server)
		if err := impl.ApplySum(1, sum, 1); err != nil {
			t.Fatal(err)
		}
		return impl.noise[0], impl.gstep
	}
	old := func(trial int, which byte, v float64) float64 {
		var sd mechanism.Seed
		sd[0], sd[1], sd[2] = byte(trial), byte(trial>>8), which
		return v + sigma*mechanism.NewStream(sd, mechanism.PurposeNoise).NormFloat64()
	}
	_, step := release(0, 0, s)
	onGrid := func(r float64) bool { k := r / step; return math.Abs(k-math.Round(k)) <= tol }
	attack := func(msg, c float64) bool { return mechanism.ZigLattice((msg-c)/sigma, tol) || onGrid(msg-c) }
	sGrid := step * math.Round(s/step)
	var oldD, oldD2, newD, newD2, gridD, gridD2 int
	for i := 0; i < n; i++ {
		if attack(old(i, 1, s), s) {
			oldD++
		}
		if attack(old(i, 2, s2), s) {
			oldD2++
		}
		rD, _ := release(i, 1, s)
		rD2, _ := release(i, 2, s2)
		if attack(rD, s) {
			newD++
		}
		if attack(rD2, s) {
			newD2++
		}
		if attack(rD, sGrid) {
			gridD++
		}
		if attack(rD2, sGrid) {
			gridD2++
		}
	}
	adv := func(a, b int) float64 { return float64(a-b) / n }
	t.Logf("continuous release: on the lattice %d of %d (D), %d (D'); product: %d, %d (candidate s), %d, %d (grid candidate)",
		oldD, n, oldD2, newD, newD2, gridD, gridD2)
	if a := adv(oldD, oldD2); a < 0.9 {
		t.Errorf("the attack has no power against the continuous release: advantage %.3f", a)
	}
	if a := adv(newD, newD2); math.Abs(a) > 0.1 {
		t.Errorf("trusted release: advantage %.3f with candidate s", a)
	}
	if a := adv(gridD, gridD2); math.Abs(a) > 0.1 {
		t.Errorf("trusted release: advantage %.3f with the grid candidate", a)
	}
}
