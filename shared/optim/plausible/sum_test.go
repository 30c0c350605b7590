package plausible

import (
	"errors"
	"math"
	"testing"

	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
)

// sharedParams is the "shared" session of docs/secagg.md's figures:
// logreg on pictures (d = 7,850), epsilon 8, m = M = 10, T = 40, t = 7.
func sharedParams() optim.Params {
	return optim.Params{Algorithm: "shared", Model: "logreg", Features: 784, Classes: 10, M: 10, Cohort: 10,
		Rounds: 40, Batch: 20, Clip: 1, Eta: 0.05, Epsilon: 8, Delta: 1e-5, Compressor: "f64"}
}

// TestSumBoundTable: SumBound against its formula recomputed from the
// Checker's quantities, for sums of t = 7 to m = 10 releases and for a
// larger cohort; it grows with n, lies above the honest sum's typical
// norm (n E plus the noise's sqrt(n d) s) and refuses what it must.
func TestSumBoundTable(t *testing.T) {
	p300 := sharedParams()
	p300.M, p300.Cohort = 300, 300
	for _, tc := range []struct {
		name string
		p    optim.Params
		ns   []int
	}{{"m10", sharedParams(), []int{7, 8, 10}}, {"m300", p300, []int{210, 300}}} {
		d := 7850
		c, err := NewChecker(tc.p, d)
		if err != nil {
			t.Fatal(err)
		}
		prev := 0.0
		for _, n := range tc.ns {
			B, why, err := SumBound(tc.p, d, n)
			if err != nil {
				t.Fatal(err)
			}
			fn, fd := float64(n), float64(d)
			sums := math.Max(float64(tc.p.Rounds), math.Ceil(float64(tc.p.M*tc.p.ReleaseCap())/float64(tc.p.SharedThreshold())))
			u := math.Log(sums*3/UpdateRejectProb) + fn*math.Log(float64(tc.p.ReleaseCap()))
			want := fn*(c.e+c.half*math.Sqrt(fd)) + math.Sqrt(fn)*c.s*math.Sqrt(fd+2*math.Sqrt(fd*u)+2*u)
			if math.Abs(B-want) > 1e-12*want {
				t.Errorf("%s n=%d: bound %.10g, want %.10g (%s)", tc.name, n, B, want, why)
			}
			sc, err := NewSumChecker(tc.p, d)
			if err != nil {
				t.Fatal(err)
			}
			// The coordinate limit: the noise's tail, below the ring's
			// n maxAbs here.
			coord := fn*(c.e+c.half) + math.Sqrt(fn)*c.s*math.Sqrt(2*(math.Log(2*fd)+u))
			_, maxAbs, _ := SharedGrid(tc.p, d)
			if got := sc.CoordLimit(n); math.Abs(got-coord) > 1e-12*coord || !(coord < fn*float64(maxAbs)*c.step) {
				t.Errorf("%s n=%d: coordinate limit %.10g, want %.10g (ring %.6g)", tc.name, n, got, coord, fn*float64(maxAbs)*c.step)
			}
			typical := fn*c.e + math.Sqrt(fn*fd)*c.s
			if !(B > typical && B > prev) {
				t.Errorf("%s n=%d: bound %.6g not above the typical honest norm %.6g and the bound of fewer, %.6g", tc.name, n, B, typical, prev)
			}
			prev = B
			t.Logf("%s n=%d: bound %.6g = %s (typical honest %.6g)", tc.name, n, B, why, typical)
		}
	}
	if _, _, err := SumBound(sharedParams(), 7850, 0); err == nil {
		t.Error("a sum of 0 releases has a bound")
	}
	nc := sharedParams()
	nc.Algorithm = "nc"
	if _, _, err := SumBound(nc, 7850, 10); err == nil {
		t.Error("an \"nc\" session has a sum bound")
	}
}

// honestSums draws count sums of n "shared" releases as the worst honest
// case makes them, in grid units times the step: every estimate at norm
// E in one direction, rounded onto the grid, plus a fresh share at
// sigma_Z(cap) minus a cancelled one at sigma_Z(cap-1), exact discrete
// Gaussians.
func honestSums(c *Checker, d, n, count int, seed byte) [][]float64 {
	rng := mechanism.NewStream(testSeed(seed), 0)
	zNew, zOld := make([]int64, d), make([]int64, d)
	sig := math.Round(c.e / c.step / math.Sqrt(float64(d))) // per coordinate, so the estimate's norm is at most E
	out := make([][]float64, count)
	for k := range out {
		sum := make([]int64, d)
		for range n {
			rng.FillDiscreteGaussian(zNew, c.sigZ[c.cap])
			rng.FillDiscreteGaussian(zOld, c.sigZ[c.cap-1])
			for j := range sum {
				sum[j] += int64(sig) + zNew[j] - zOld[j]
			}
		}
		out[k] = make([]float64, d)
		for j, v := range sum {
			out[k][j] = float64(v) * c.step
		}
	}
	return out
}

// TestSumCheckHonestAndTight draws 12 worst-case honest sums of 10
// releases at d = 7,850 (noise at the release cap, estimates all at norm
// E in one direction) and checks, in both directions:
//
//   - every one passes every test of SumChecker (each fails with
//     probability at most 1e-9 by construction: a failure is a wrong
//     derivation);
//   - the bound is at most 1.17 times the largest honest norm drawn: the
//     norm of such a sum concentrates (its noise part's relative spread
//     is about 1/sqrt(2 d n) = 0.3%), and the bound sits 1.154 times above
//     it here (the Laurent-Massart margin with u over every cancelled
//     share, 1.093 on the noise, and n E added in full), so a bound 10%
//     looser (1.27) fails;
//   - a sum pushed just over the bound in norm, just over the coordinate
//     limit in one coordinate, wrapped in the ring (a coordinate near its
//     half) or not finite is refused.
func TestSumCheckHonestAndTight(t *testing.T) {
	p := sharedParams()
	d, n := 7850, 10
	c, err := NewChecker(p, d)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := NewSumChecker(p, d)
	if err != nil {
		t.Fatal(err)
	}
	B, _, err := SumBound(p, d, n)
	if err != nil {
		t.Fatal(err)
	}
	sums := honestSums(c, d, n, 12, 3)
	most := 0.0
	for i, s := range sums {
		if err := sc.Check(s, n); err != nil {
			t.Fatalf("honest sum %d refused: %v", i, err)
		}
		most = max(most, mechanism.Norm(s))
	}
	t.Logf("bound %.6g, largest honest norm %.6g: ratio %.4f", B, most, B/most)
	if B > 1.17*most {
		t.Errorf("bound %.6g is %.3f times the largest honest norm %.6g: too loose", B, B/most, most)
	}
	base := sums[0]
	refuse := func(what, test string, x []float64) {
		t.Helper()
		err := sc.Check(x, n)
		var r *Rejection
		if !errors.As(err, &r) || !errors.Is(err, ErrImplausible) || r.Test != test || r.Sum != n {
			t.Errorf("%s: %v, want a %s rejection of the sum", what, err, test)
		}
	}
	// Just over the norm bound: the honest sum plus a dense push along
	// itself.
	over := make([]float64, d)
	f := B / mechanism.Norm(base) * (1 + 1e-9)
	for j, v := range base {
		over[j] = v * f
	}
	refuse("norm just over the bound", TestNorm, over)
	// Just over the coordinate limit in one coordinate.
	spike := append([]float64(nil), base...)
	spike[d/2] = sc.CoordLimit(n) * (1 + 1e-9)
	refuse("one coordinate just over its limit", TestCoordinate, spike)
	// A wrapping device: a coordinate near the ring's half.
	wrap := append([]float64(nil), base...)
	wrap[7] = -float64(int64(1)<<30) * sc.step
	refuse("a coordinate near the ring's half", TestCoordinate, wrap)
	nan := append([]float64(nil), base...)
	nan[3] = math.NaN()
	refuse("NaN", TestCoordinate, nan)
	inf := append([]float64(nil), base...)
	inf[4] = math.Inf(-1)
	refuse("-Inf", TestCoordinate, inf)
	// A block: class 0's weights shifted together, each coordinate
	// within its limit.
	block := append([]float64(nil), base...)
	for j := 512; j < 1024; j++ {
		block[j] += 0.5 * sc.CoordLimit(n)
	}
	refuse("a block shifted", TestBlock, block)
	if err := sc.Check(base[:d-1], n); err == nil || errors.Is(err, ErrImplausible) {
		t.Errorf("a sum of the wrong dimension: %v", err)
	}
}

// TestSumCheckHonestDevices runs 10 honest "shared" device halves whose
// every per-sample correction is clipped at exactly S in one fixed
// direction (the worst case for the signal: the n estimates add up in
// norm) through all T rounds, each included, and checks every round's
// sum of their decoded messages with SumChecker, at sums of 7 and of 10.
func TestSumCheckHonestDevices(t *testing.T) {
	p := baseParams("shared")
	p.M, p.Cohort, p.Rounds = 10, 10, 30
	p.Compressor = "f64"
	base, _ := model.New("logreg", 5, 3)
	d := base.Dim()
	sc, err := NewSumChecker(p, d)
	if err != nil {
		t.Fatal(err)
	}
	data := synthData(mechanism.NewStream(testSeed(2), 0), 2)
	devs := make([]optim.Device, p.M)
	for i := range devs {
		if devs[i], err = optim.NewDevice(p, wild{Model: base, scale: 1e6}, mechanism.NewStream(testSeed(byte(40+i)), 0)); err != nil {
			t.Fatal(err)
		}
	}
	x := make([]float64, d)
	dec := make([]float64, d)
	for r := 1; r <= p.Rounds; r++ {
		sum := make([]float64, d)
		for i, dv := range devs {
			u, err := dv.Prepare(optim.Round{T: r, X: x, XPrev: x}, data)
			if err != nil {
				t.Fatal(err)
			}
			if err := mechanism.Decode(dec, u.Payload); err != nil {
				t.Fatal(err)
			}
			for j, v := range dec {
				sum[j] += v
			}
			if err := dv.Commit(r); err != nil {
				t.Fatal(err)
			}
			if i == 6 {
				if err := sc.Check(sum, 7); err != nil {
					t.Fatalf("round %d: honest sum of 7 refused: %v", r, err)
				}
			}
		}
		if err := sc.Check(sum, p.M); err != nil {
			t.Fatalf("round %d: honest sum of 10 refused: %v", r, err)
		}
	}
}
