package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"browserfl/shared/dataset"
)

// TestUnitLogRegCertificate checks what Convex promises on random and
// extreme samples and parameters: every gradient norm at most 2 (the
// clipping bound at which no gradient is clipped), gradients 1-Lipschitz
// in w (smoothness 1), the loss convex along random segments, and the
// loss of x the same as of any positive multiple of x (the scaling is
// part of the model).
func TestUnitLogRegCertificate(t *testing.T) {
	const feat, cls = 20, 5
	m := NewUnitLogReg(feat, cls)
	G, L := m.Convex()
	if g, l, ok := Convexity(m.Name()); !ok || g != G || l != L {
		t.Fatalf("Convexity(%q) = %v, %v, %v; Convex() = %v, %v", m.Name(), g, l, ok, G, L)
	}
	if _, _, ok := Convexity(NameLogReg); ok {
		t.Fatal("logreg has a certificate: its gradients are not bounded by construction")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	d := m.Dim()
	w, w2, g, g2 := make([]float64, d), make([]float64, d), make([]float64, d), make([]float64, d)
	sample := func(i int) dataset.Sample {
		x := make([]float32, feat)
		switch i % 4 {
		case 0: // one huge pixel
			x[rng.IntN(feat)] = 1e30
		case 1: // all zero
		default:
			for j := range x {
				x[j] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
			}
		}
		return dataset.Sample{X: x, Label: rng.IntN(cls)}
	}
	maxRatio, maxNorm := 0.0, 0.0
	for i := 0; i < 2000; i++ {
		s := sample(i)
		scale := math.Pow(10, float64(rng.IntN(6)))
		for j := range w {
			w[j] = rng.NormFloat64() * scale
			w2[j] = w[j] + rng.NormFloat64()*scale*math.Pow(10, float64(-rng.IntN(6)))
		}
		m.Grad(g, w, s)
		maxNorm = max(maxNorm, norm2(g))
		m.Grad(g2, w2, s)
		var dg, dw float64
		for j := range g {
			dg += (g[j] - g2[j]) * (g[j] - g2[j])
			dw += (w[j] - w2[j]) * (w[j] - w2[j])
		}
		maxRatio = max(maxRatio, math.Sqrt(dg/dw))
		// Convexity along the segment.
		mid := make([]float64, d)
		for j := range mid {
			mid[j] = (w[j] + w2[j]) / 2
		}
		fa, fb, fm := m.Loss(w, s), m.Loss(w2, s), m.Loss(mid, s)
		if fm > (fa+fb)/2+1e-9*(1+math.Abs(fa)+math.Abs(fb)) {
			t.Fatalf("sample %d: f(mid) = %v > (f(a) + f(b))/2 = %v", i, fm, (fa+fb)/2)
		}
		// Scale invariance (up to the float32 rounding of the scaled
		// features, relative 1e-7, times the logits' scale).
		y := make([]float32, feat)
		for j, v := range s.X {
			y[j] = v * 7
		}
		if a, b := m.Loss(w, s), m.Loss(w, dataset.Sample{X: y, Label: s.Label}); math.Abs(a-b) > 1e-6*scale*(1+math.Abs(a)) && i%4 != 0 {
			t.Fatalf("sample %d: loss %v on x, %v on 7x", i, a, b)
		}
	}
	if maxNorm > G {
		t.Errorf("largest gradient norm %v > bound %v", maxNorm, G)
	}
	t.Logf("largest gradient norm %.6f, largest Lipschitz ratio %.4f", maxNorm, maxRatio)
	if maxRatio > L {
		t.Errorf("largest |grad f(w) - grad f(w')| / |w - w'| = %v > smoothness %v", maxRatio, L)
	}
	// The bound is not loose by much: a confident wrong prediction on a
	// sample of norm 1 has gradient norm close to 2 (the unitScale
	// margin and ||p - e_y|| < sqrt(2) keep it below).
	s := dataset.Sample{X: make([]float32, feat), Label: 0}
	s.X[0] = 1
	clear(w)
	w[1*(feat+1)] = 100 // class 1 wins by far
	m.Grad(g, w, s)
	if n := norm2(g); n < 1.99 || n > G {
		t.Errorf("confident wrong prediction: gradient norm %v, want in [1.99, %v]", n, G)
	}
}

// TestUnitLogRegIsLogRegOnScaledInput checks every entry point against
// LogReg on the input scaled by hand.
func TestUnitLogRegIsLogRegOnScaledInput(t *testing.T) {
	const feat, cls = 12, 4
	u, l := NewUnitLogReg(feat, cls), NewLogReg(feat, cls)
	rng := rand.New(rand.NewPCG(3, 4))
	d := u.Dim()
	w, wb, a, b := make([]float64, d), make([]float64, d), make([]float64, d), make([]float64, d)
	for i := 0; i < 50; i++ {
		x := make([]float32, feat)
		var ss float64
		for j := range x {
			x[j] = float32(rng.Float64())
			ss += float64(x[j]) * float64(x[j])
		}
		y := make([]float32, feat)
		for j := range x {
			y[j] = float32(float64(x[j]) * unitScale / math.Sqrt(ss))
		}
		for j := range w {
			w[j], wb[j] = rng.NormFloat64(), rng.NormFloat64()
		}
		s, sy := dataset.Sample{X: x, Label: i % cls}, dataset.Sample{X: y, Label: i % cls}
		if u.Loss(w, s) != l.Loss(w, sy) || u.Predict(w, x) != l.Predict(w, y) {
			t.Fatal("loss or prediction differs from LogReg on the scaled input")
		}
		u.Grad(a, w, s)
		l.Grad(b, w, sy)
		for j := range a {
			if a[j] != b[j] {
				t.Fatalf("gradient %d: %v, LogReg %v", j, a[j], b[j])
			}
		}
		u.GradDiff(a, 0.5, w, 2, wb, s)
		l.GradDiff(b, 0.5, w, 2, wb, sy)
		if nu, nl := u.FactorGradDiff(0.5, w, 2, wb, s), l.FactorGradDiff(0.5, w, 2, wb, sy); nu != nl {
			t.Fatalf("factored norm %v, LogReg %v", nu, nl)
		}
		for j := range a {
			if a[j] != b[j] {
				t.Fatalf("gradient difference %d: %v, LogReg %v", j, a[j], b[j])
			}
		}
		if acc, _ := Evaluate(u, w, []dataset.Sample{s}); (acc == 1) != (l.Predict(w, y) == s.Label) {
			t.Fatal("Evaluate disagrees with Predict")
		}
	}
	if c, ok := u.Clone().(*UnitLogReg); !ok || c.Name() != NameUnitLogReg || c.Dim() != d {
		t.Fatal("Clone is not a UnitLogReg of the same shape")
	}
	if m, err := New(NameUnitLogReg, feat, cls); err != nil || m.Name() != NameUnitLogReg {
		t.Fatalf("New(%q) = %v, %v", NameUnitLogReg, m, err)
	}
}

// TestUnitLogRegSmoothnessIsTight moves w a little along the Hessian's
// top direction at p = (1/2, 1/2) (two classes, equal logits): the
// gradient then moves by almost exactly the smoothness times the step, so
// a certificate that claimed less smoothness than 1 would be caught here
// (random pairs in TestUnitLogRegCertificate reach only about 0.2).
func TestUnitLogRegSmoothnessIsTight(t *testing.T) {
	const feat = 6
	m := NewUnitLogReg(feat, 2)
	_, L := m.Convex()
	x := []float32{1, 0, 0, 0, 0, 0}
	s := dataset.Sample{X: x, Label: 0}
	d := m.Dim()
	w, w2, g, g2 := make([]float64, d), make([]float64, d), make([]float64, d), make([]float64, d)
	// Direction (1, -1)/sqrt(2) over the classes times (x', 1)/||(x', 1)||.
	xn := math.Sqrt(unitScale*unitScale + 1)
	const h = 1e-6
	for c, sign := range []float64{1, -1} {
		w2[c*(feat+1)] = sign * h / math.Sqrt2 * unitScale / xn
		w2[c*(feat+1)+feat] = sign * h / math.Sqrt2 / xn
	}
	m.Grad(g, w, s)
	m.Grad(g2, w2, s)
	var dg float64
	for j := range g {
		dg += (g[j] - g2[j]) * (g[j] - g2[j])
	}
	ratio := math.Sqrt(dg) / h
	if ratio > L || ratio < 0.99*L {
		t.Errorf("gradient moved %v times the step along the top direction, want within [0.99, 1] x %v", ratio, L)
	}
}

// TestUnitLinear checks the audit's certified linear loss: its gradient
// is the scaled input (norm below the bound 1, whatever the input's
// scale), independent of w, and the loss is <w, x'>.
func TestUnitLinear(t *testing.T) {
	m := NewUnitLinear(3)
	G, L := m.Convex()
	if g, l, ok := Convexity(m.Name()); !ok || g != G || l != L || G != 1 || L != 0 {
		t.Fatalf("certificate %v %v %v, Convex %v %v", g, l, ok, G, L)
	}
	g := make([]float64, 3)
	for _, x := range [][]float32{{4, 0, 0}, {-1e-20, 0, 0}, {3, 4, 0}, {0, 0, 0}} {
		w := []float64{1, 2, 3}
		loss := m.Grad(g, w, dataset.Sample{X: x})
		if n := norm2(g); n > G {
			t.Errorf("x = %v: gradient norm %v above %v", x, n, G)
		}
		if loss != w[0]*g[0]+w[1]*g[1]+w[2]*g[2] {
			t.Errorf("x = %v: loss %v, <w, grad> %v", x, loss, w[0]*g[0]+w[1]*g[1]+w[2]*g[2])
		}
	}
	m.Grad(g, []float64{9, 9, 9}, dataset.Sample{X: []float32{3, 4, 0}})
	if math.Abs(g[0]-0.6*unitScale) > 1e-7 || math.Abs(g[1]-0.8*unitScale) > 1e-7 || g[2] != 0 {
		t.Errorf("gradient of (3, 4, 0): %v, want (0.6, 0.8, 0) x %v", g, unitScale)
	}
}
