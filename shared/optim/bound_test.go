package optim

import (
	"math"
	"testing"

	"browserfl/shared/mechanism"
	"browserfl/shared/model"
)

// TestUpdateBoundHoldsForHonestDevices runs honest devices whose every
// per-sample correction is clipped at exactly S in one fixed direction
// (the worst case for error feedback, whose residual then accumulates in
// one direction) through all T rounds, each included, and checks every
// decoded message against UpdateBound. The noise part fails with
// probability at most 1e-9 per message by construction (Laurent-Massart),
// so a failure here is a wrong derivation, not bad luck.
func TestUpdateBoundHoldsForHonestDevices(t *testing.T) {
	base, _ := model.New("logreg", 5, 3)
	data := synthData(mechanism.NewStream(testSeed(2), 0), 2)
	cases := []struct{ alg, comp string }{
		{"nc", ""}, {"nc", "f64"}, {"nc", "ef+topk:0.2"}, {"nc", "randk:0.3"},
		{"nc", "ef+randk:0.3"}, {"nc", "ef+qinf:3bit"}, {"nc", "qinf:3bit"}, {"nc", "quant:4bit"},
		{"trusted", ""}, {"mu2", ""}, {"noisysgd", ""}, {"cdpsgd", "ef+topk:0.5"}, {"sgd", ""},
		{"local", ""}, {"local", "randk:0.3"},
	}
	for _, tc := range cases {
		p := baseParams(tc.alg)
		p.Compressor = tc.comp
		if tc.alg == "mu2" || tc.alg == "sgd" {
			p.Clip = 1
		}
		B, why, err := UpdateBound(p, base.Dim())
		if err != nil || !(B > 0) || math.IsInf(B, 0) {
			t.Fatalf("%s %q: bound %v (%s), %v", tc.alg, tc.comp, B, why, err)
		}
		dv, err := NewDevice(p, wild{Model: base, scale: 1e6}, mechanism.NewStream(testSeed(9), 0))
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float64, base.Dim())
		dec := make([]float64, base.Dim())
		worst := 0.0
		for r := 1; r <= p.Rounds; r++ {
			u, err := dv.Prepare(Round{T: r, X: x, XPrev: x}, data)
			if err != nil {
				break // budget of the fresh-noise algorithms
			}
			if err := mechanism.Decode(dec, u.Payload); err != nil {
				t.Fatal(err)
			}
			worst = max(worst, mechanism.Norm(dec))
			if err := dv.Commit(r); err != nil {
				t.Fatal(err)
			}
		}
		if worst > B {
			t.Errorf("%s %q: honest message of norm %.6g above the bound %.6g (%s)", tc.alg, tc.comp, worst, B, why)
		}
		t.Logf("%s %q: largest honest norm %.4g, bound %.4g", tc.alg, tc.comp, worst, B)
	}
}

// TestUpdateBoundIsTight guards the other direction: a bound far above
// what honest devices send lets a malicious device push the model further.
// For dense "nc" at d = 7850 the honest norm concentrates at
// sigma sqrt(2d) and the bound adds the Laurent-Massart margin
// (sqrt(1 + 2 sqrt(u/d) + 2u/d), about 1.05 here), S and the factor 1.02:
// it must stay within 1.15 of sqrt(2 d) sigma_T plus S.
func TestUpdateBoundIsTight(t *testing.T) {
	p := Params{Algorithm: "nc", M: 30, Cohort: 10, Rounds: 200, Batch: 16, Clip: 1, Eta: 0.5, Rho: 1.5}
	d := 7850
	B, why, err := UpdateBound(p, d)
	if err != nil {
		t.Fatal(err)
	}
	hi, lo := NCSigma(p, p.Rounds), NCSigma(p, p.Rounds-1)
	typical := math.Sqrt((hi*hi+lo*lo)*float64(d)) + p.S()
	if r := B / typical; r < 1 || r > 1.15 {
		t.Errorf("bound %.6g is %.3f x the typical honest norm %.6g (%s)", B, r, typical, why)
	}
	// A coordinate of 1e4 (a spike attack) is far outside.
	if 1e4 <= B {
		t.Errorf("bound %.6g admits a coordinate of 1e4", B)
	}
}

func TestUpdateBoundFinitenessOnly(t *testing.T) {
	p := baseParams("mu2")
	p.Clip = 0 // no clipping: nothing bounds an honest update
	B, _, err := UpdateBound(p, 18)
	if err != nil || !math.IsInf(B, 1) {
		t.Errorf("unclipped mu2: bound %v, %v; want +Inf", B, err)
	}
	if _, _, err := UpdateBound(Params{Algorithm: "nc"}, 18); err == nil {
		t.Error("invalid parameters accepted")
	}
}

// TestNCChargePerRelease pins the ledger to the accounting, from literals
// rather than from the package's own formulas: the n-th release of "nc"
// costs rho_p^2 / (2 H_K n) zCDP, with H_K the harmonic number of the
// release cap K (its sensitivity is 2S/b and its noise
// sigma_n^2 = (2S/b)^2 H_K n / rho_p^2), so that K releases cost exactly
// rho_p^2/2. H_50 = 4.499205338329425 and H_20 = 3.597739657143682 are
// written out (not computed by the package). A ledger that charges less
// (a sensitivity of S/b, a halved charge, the cap ignored) fails; up to 1%
// more is allowed for the discretisation of the noise.
func TestNCChargePerRelease(t *testing.T) {
	for _, tc := range []struct {
		maxReleases int
		hK          float64
	}{{0, 4.499205338329425}, {20, 3.597739657143682}} {
		p := baseParams("nc") // rho_p = 8, S = 1, b = 2
		p.Rounds = 50
		p.MaxReleases = tc.maxReleases
		m, _ := model.New("logreg", 5, 3)
		dv, err := NewDevice(p, m, mechanism.NewStream(testSeed(5), 0))
		if err != nil {
			t.Fatal(err)
		}
		data := synthData(mechanism.NewStream(testSeed(2), 0), 2)
		x := make([]float64, m.Dim())
		acc := dv.(Accountant)
		prev := 0.0
		for n := 1; n <= 10; n++ {
			want := 64 / (2 * tc.hK * float64(n))
			if got := acc.NextCost(); got < want*(1-1e-12) || got > want*1.01 {
				t.Errorf("cap %d, release %d: NextCost %.9g, want %.9g", tc.maxReleases, n, got, want)
			}
			if _, err := dv.Prepare(Round{T: n, X: x, XPrev: x}, data); err != nil {
				t.Fatal(err)
			}
			if err := dv.Commit(n); err != nil {
				t.Fatal(err)
			}
			l := acc.Ledger()
			if got := l.Rho() - prev; got < want*(1-1e-12) || got > want*1.01 {
				t.Errorf("cap %d, release %d: ledger charged %.9g, want %.9g", tc.maxReleases, n, got, want)
			}
			prev = l.Rho()
		}
	}
}

// TestHarmonic pins H_K, the factor of the "nc" calibration, to values
// computed independently (30-digit arithmetic), on both sides of the
// switch from summation to the asymptotic bound at 1,024 terms. The value
// may exceed H_K by 1.1e-8 relative (a little more noise) but never fall
// below it (less noise than the charge assumes).
func TestHarmonic(t *testing.T) {
	tests := []struct {
		k    int
		want float64
	}{
		{0, 0}, {1, 1}, {2, 1.5}, {600, 6.9749784219695953816}, {1024, 7.5091756722781338334},
		{1025, 7.5101512820342313944}, {5000, 9.0945088529844369673},
		{1000000, 14.392726722865723631}, {1000000000, 21.300481502347944017},
	}
	for _, tc := range tests {
		got := Harmonic(tc.k)
		if got < tc.want*(1-1e-13) || got > tc.want*(1+1.1e-8) {
			t.Errorf("Harmonic(%d) = %.17g, want %.17g (never below, at most 1.1e-8 above)", tc.k, got, tc.want)
		}
	}
}
