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
	// A coordinate of 1e4 (the attack in the issue) is far outside.
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

// TestNCChargePerRelease pins the ledger to the paper's accounting, from
// literals rather than from the package's own formulas: the n-th release
// of "nc" costs rho_p^2 / (2 (1 + ln T) n) zCDP (its sensitivity is 2S/b
// and its noise sigma_n^2 = (2S/b)^2 (1 + ln T) n / rho_p^2). A ledger
// that charges less (a sensitivity of S/b, a halved charge) fails; up to
// 1% more is allowed for the discretisation of the noise.
func TestNCChargePerRelease(t *testing.T) {
	p := baseParams("nc") // rho_p = 8, T = 60, S = 1, b = 2
	p.Rounds = 50
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
		want := 64 / (2 * (1 + math.Log(50)) * float64(n))
		if got := acc.NextCost(); got < want*(1-1e-12) || got > want*1.01 {
			t.Errorf("release %d: NextCost %.9g, want %.9g", n, got, want)
		}
		if _, err := dv.Prepare(Round{T: n, X: x, XPrev: x}, data); err != nil {
			t.Fatal(err)
		}
		if err := dv.Commit(n); err != nil {
			t.Fatal(err)
		}
		l := acc.Ledger()
		if got := l.Rho() - prev; got < want*(1-1e-12) || got > want*1.01 {
			t.Errorf("release %d: ledger charged %.9g, want %.9g", n, got, want)
		}
		prev = l.Rho()
	}
}
