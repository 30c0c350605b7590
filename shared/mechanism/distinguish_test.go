package mechanism_test

import (
	"math"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
)

// TestFloatingPointDistinguisher reproduces the floating-point
// attack (Mironov 2012): an "nc" device with the exact float64 payload sends its
// first message for a one-sample batch {z} (dataset D) or {z'} (the
// neighbour D'); coordinate 0 of the message is the clipped value s (or
// s') plus noise. The attacker knows s and s' and the sampler, and guesses
// "D" when (message - s) lies on the sampler's output lattice (the union
// of the ziggurat's and the grid's, so the same attack runs against any
// device). Its
// advantage is P[guess D | D] - P[guess D | D'], estimated from n = 2,000
// messages under each dataset.
//
// With the continuous ziggurat the device used before (reproduced here
// from the same seeds: message = s + sigma * NormFloat64() of the noise
// stream) the lattice is {j w_i sigma}, and the advantage is close to 1:
// the test asserts it is at least 0.9, so the experiment has power. The
// real device is then attacked the same way, and the test asserts an
// advantage of at most 0.1 (so it fails on a device that still adds
// ziggurat noise to its float64 estimate). The discrete release lies on
// step * Z. For any attack whose guess has the same
// probability under D and D', the two frequencies each deviate from it by
// more than 0.05 with probability at most 2 exp(-2 n 0.05^2) = 9.1e-5
// (Hoeffding), so the assertion fails wrongly with probability below
// 2e-4. Against the discrete release the grid half of the guess is a
// constant (the message is always on step * Z, so message - s is on it
// iff s is), and the ziggurat half fits a value unrelated to the lattice
// with probability about 128 * 2 tol = 2.6e-4.
func TestFloatingPointDistinguisher(t *testing.T) {
	p := optim.Params{Algorithm: "nc", Model: "logreg", Features: 5, Classes: 3,
		M: 1, Cohort: 1, Rounds: 100, Batch: 1, Clip: 1, Eta: 0.1, Rho: 1, Compressor: "f64"}
	m, err := model.New("logreg", 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	d := m.Dim()
	x := make([]float64, d)
	for i := range x {
		x[i] = 0.01 * float64(i%7-3)
	}
	z := dataset.Sample{X: []float32{0.3, -1.2, 0.7, 0.05, 2.1}, Label: 0}
	z2 := dataset.Sample{X: []float32{-0.8, 0.4, 1.1, -0.3, 0.2}, Label: 2}
	clipped := func(s dataset.Sample) float64 {
		v := make([]float64, d)
		model.GradDiff(m, v, 1, x, 0, x, s) // round 1: 1 * grad(x_1) - 0 * grad(x_0)
		mechanism.Clip(v, p.S())
		return v[0]
	}
	s, s2 := clipped(z), clipped(z2)
	if s == s2 {
		t.Fatal("the two samples give the same coordinate")
	}
	sigma := algo.NCSigma(p, 1)
	step, err := mechanism.GridStep(algo.Sensitivity(p), d)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	const tol = 1e-6
	onLattice := func(r, unit float64) bool {
		k := r / unit
		return math.Abs(k-math.Round(k)) <= tol
	}
	seedOf := func(trial int, which byte) mechanism.Seed {
		var sd mechanism.Seed
		sd[0], sd[1], sd[2] = byte(trial), byte(trial>>8), which
		return sd
	}
	// old: the first message of a device that adds continuous (ziggurat)
	// noise in float64, the sampler the attack must separate.
	old := func(seed mechanism.Seed, v float64) float64 {
		return v + sigma*mechanism.NewStream(seed, mechanism.PurposeNoise).NormFloat64()
	}
	// current: the first message of a real device.
	current := func(seed mechanism.Seed, sample dataset.Sample) float64 {
		dv, err := optim.NewDevice(p, m.Clone(), mechanism.NewStream(seed, mechanism.PurposeSeeds))
		if err != nil {
			t.Fatal(err)
		}
		u, err := dv.Prepare(optim.Round{T: 1, X: x, XPrev: x}, []dataset.Sample{sample})
		if err != nil {
			t.Fatal(err)
		}
		msg := make([]float64, d)
		if err := mechanism.Decode(msg, u.Payload); err != nil {
			t.Fatal(err)
		}
		return msg[0]
	}
	// The attack does not need to know which sampler the device runs:
	// it tests the union of both lattices.
	attack := func(msg, c float64) bool {
		return mechanism.ZigLattice((msg-c)/sigma, tol) || onLattice(msg-c, step)
	}
	var oldD, oldD2, newD, newD2, gridD, gridD2 int
	sGrid := step * math.Round(s/step) // the attacker's best grid candidate
	for i := 0; i < n; i++ {
		a, b := seedOf(i, 1), seedOf(i, 2)
		if attack(old(a, s), s) {
			oldD++
		}
		if attack(old(b, s2), s) {
			oldD2++
		}
		mD, mD2 := current(a, z), current(b, z2)
		if attack(mD, s) {
			newD++
		}
		if attack(mD2, s) {
			newD2++
		}
		if attack(mD, sGrid) {
			gridD++
		}
		if attack(mD2, sGrid) {
			gridD2++
		}
	}
	adv := func(a, b int) float64 { return float64(a-b) / n }
	t.Logf("ziggurat: message - s on the lattice in %d of %d messages from D, %d of %d from D'", oldD, n, oldD2, n)
	t.Logf("device: %d and %d (candidate s), %d and %d (candidate s rounded to the grid)", newD, newD2, gridD, gridD2)
	if a := adv(oldD, oldD2); a < 0.9 {
		t.Errorf("the attack has no power against the ziggurat: advantage %.3f", a)
	}
	if a := adv(newD, newD2); math.Abs(a) > 0.1 {
		t.Errorf("device: advantage %.3f with candidate s", a)
	}
	if a := adv(gridD, gridD2); math.Abs(a) > 0.1 {
		t.Errorf("device: advantage %.3f with the grid candidate", a)
	}
}
