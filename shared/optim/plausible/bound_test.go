package plausible

import (
	"math"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
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
		dv, err := optim.NewDevice(p, wild{Model: base, scale: 1e6}, mechanism.NewStream(testSeed(9), 0))
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float64, base.Dim())
		dec := make([]float64, base.Dim())
		worst := 0.0
		for r := 1; r <= p.Rounds; r++ {
			u, err := dv.Prepare(optim.Round{T: r, X: x, XPrev: x}, data)
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
	p := optim.Params{Algorithm: "nc", M: 30, Cohort: 10, Rounds: 200, Batch: 16, Clip: 1, Eta: 0.5, Rho: 1.5}
	d := 7850
	B, why, err := UpdateBound(p, d)
	if err != nil {
		t.Fatal(err)
	}
	hi, lo := algo.NCSigma(p, p.Rounds), algo.NCSigma(p, p.Rounds-1)
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
	if _, _, err := UpdateBound(optim.Params{Algorithm: "nc"}, 18); err == nil {
		t.Error("invalid parameters accepted")
	}
}

func TestLocalUpdateBound(t *testing.T) {
	// Every per-sample gradient is clipped at exactly S in one fixed
	// direction, so the K E steps add up: the clean message has norm
	// K E S. Honest messages must stay within UpdateBound (it fails with
	// probability <= 1e-9 per message by construction), and a bound that
	// counted one step would reject them (K S = 8 against S + sigma chi
	// = 3.3 here with E = 1).
	for _, E := range []int{1, 3} {
		p := localParams()
		p.Batch, p.LocalSteps, p.LocalEpochs = 8, 8, E
		base, _ := model.New("logreg", 5, 3)
		B, why, err := UpdateBound(p, base.Dim())
		if err != nil {
			t.Fatal(err)
		}
		dv := newLocal(t, p, wild{Model: base, scale: 1e6}, 17)
		d := base.Dim()
		data := synthData(mechanism.NewStream(testSeed(18), 0), p.Batch)
		x := make([]float64, d)
		dec := make([]float64, d)
		for r := 1; r <= p.Rounds; r++ {
			u, err := dv.Prepare(optim.Round{T: r, X: x}, data)
			if err != nil {
				t.Fatal(err)
			}
			mechanism.Decode(dec, u.Payload)
			if n := mechanism.Norm(dec); n > B || n < float64(p.LocalSteps*E)*p.Clip*0.5 {
				t.Fatalf("E=%d round %d: honest message of norm %.4g, bound %.4g (%s); want K E S/2 <= norm <= bound", E, r, n, B, why)
			}
			dv.Commit(r)
		}
	}
}

// TestLocalOPUpdateBound: under output perturbation a message is the sum
// of K E noiseless steps plus one noise vector; honest messages stay
// within the coordinator's UpdateBound (which fails an honest message
// with probability <= 1e-9 by construction), here with every gradient
// near its bound in one direction (the linear loss, features +e_1), and
// the bound covers the clean message K E G.
func TestLocalOPUpdateBound(t *testing.T) {
	p := opParams()
	p.Model, p.Clip, p.Eta, p.Classes, p.Features = "linear-unit", 1, 1, 1, 5
	p.Rounds = 40
	B, why, err := UpdateBound(p, 5)
	if err != nil {
		t.Fatal(err)
	}
	dv := newLocal(t, p, model.NewUnitLinear(5), 5)
	data := make([]dataset.Sample, p.Batch)
	for i := range data {
		data[i] = dataset.Sample{X: []float32{1, 0, 0, 0, 0}}
	}
	x, dec := make([]float64, 5), make([]float64, 5)
	for r := 1; r <= p.Rounds; r++ {
		u, err := dv.Prepare(optim.Round{T: r, X: x}, data)
		if err != nil {
			t.Fatal(err)
		}
		mechanism.Decode(dec, u.Payload)
		// The clean message is K E times a gradient of norm 1 - 1e-6.
		if n := mechanism.Norm(dec); n > B {
			t.Fatalf("round %d: honest message of norm %.4g over the bound %.4g (%s)", r, n, B, why)
		}
		dv.Commit(r)
	}
	if clean := float64(p.LocalSteps * p.LocalEpochs); B < clean {
		t.Errorf("bound %.4g below the clean message's norm %v (%s)", B, clean, why)
	}
}
