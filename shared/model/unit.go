package model

import (
	"math"

	"browserfl/shared/dataset"
)

// NameUnitLogReg names UnitLogReg in New.
const NameUnitLogReg = "logreg-unit"

// unitScale is the norm each input is scaled to: a little below 1, so that
// the gradient bound 2 holds with room for the float rounding of the
// scaling and of the norm a device computes (a relative error of a few
// times 1e-7 for float32 features; the margin is 1e-6).
const unitScale = 1 - 1e-6

// UnitLogReg is LogReg on inputs scaled to norm unitScale < 1: the loss of
// w on (x, y) is LogReg's loss on (x / ||x|| unitScale, y) (an all-zero x
// stays zero). The scaling is a fixed function of one sample, so a
// guarantee about the scaled data is the same guarantee about the raw
// data.
//
// What it buys is a certificate (Convex): every per-sample loss is convex,
// its gradient has norm at most sqrt(2) sqrt(unitScale^2 + 1) < 2 (row c is
// (p_c - [c == y]) (x', 1) and ||p - e_y|| <= sqrt(2)), and it is
// 1-smooth (the softmax cross-entropy's Hessian in the logits has norm at
// most 1/2, times ||(x', 1)||^2 < 2). With a clipping bound of 2 no
// gradient is ever clipped, so a step of size eta <= 2 is nonexpansive:
// what the last-iterate accounting of "local" needs (docs/privacy.md 4b).
type UnitLogReg struct {
	*LogReg
	x []float32
}

// NewUnitLogReg returns a UnitLogReg over features inputs and classes
// labels. It panics unless features >= 1 and classes >= 2.
func NewUnitLogReg(features, classes int) *UnitLogReg {
	return &UnitLogReg{LogReg: NewLogReg(features, classes), x: make([]float32, features)}
}

// ConvexBounds is implemented by models whose per-sample losses are convex
// and smooth with bounded gradients, whatever the sample (after the
// model's own fixed preprocessing): every gradient has norm at most
// GradBound and every per-sample loss is Smoothness-smooth.
type ConvexBounds interface {
	Convex() (gradBound, smoothness float64)
}

// Convex returns the gradient bound 2 and the smoothness 1 (see the type's
// doc).
func (m *UnitLogReg) Convex() (gradBound, smoothness float64) {
	g, l, _ := Convexity(NameUnitLogReg)
	return g, l
}

// Convexity is the certificate of the model called name, for code that
// has only the name (a session's parameters): the ConvexBounds of the
// model New returns, and ok = false for a model without one.
func Convexity(name string) (gradBound, smoothness float64, ok bool) {
	switch name {
	case NameUnitLogReg:
		return 2, 1, true
	case NameUnitLinear:
		return 1, 0, true
	}
	return 0, 0, false
}

// Name returns "logreg-unit".
func (m *UnitLogReg) Name() string { return NameUnitLogReg }

// Clone returns an independent UnitLogReg of the same shape.
func (m *UnitLogReg) Clone() Model { return NewUnitLogReg(m.features, m.classes) }

// unit returns s with its features scaled to norm unitScale, in m's
// scratch buffer (valid until the next call).
func (m *UnitLogReg) unit(s dataset.Sample) dataset.Sample {
	return dataset.Sample{X: m.unitX(s.X), Label: s.Label}
}

func (m *UnitLogReg) unitX(x []float32) []float32 {
	mustLenX(x, m.features)
	return unitScaled(m.x, x)
}

// unitScaled writes x scaled to norm unitScale into dst (len(x)) and
// returns it; a zero or non-finite x is copied unchanged.
func unitScaled(dst, x []float32) []float32 {
	mustLenX(x, len(dst))
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	if ss == 0 || math.IsInf(ss, 0) || math.IsNaN(ss) {
		// Zero stays zero; a non-finite sample is the caller's error
		// (CheckSample), passed on unchanged for the model to reject.
		copy(dst, x)
		return dst
	}
	f := unitScale / math.Sqrt(ss)
	for i, v := range x {
		dst[i] = float32(float64(v) * f)
	}
	return dst
}

// Loss returns the cross-entropy of w on the scaled sample.
func (m *UnitLogReg) Loss(w []float64, s dataset.Sample) float64 { return m.LogReg.Loss(w, m.unit(s)) }

func (m *UnitLogReg) lossPredict(w []float64, s dataset.Sample) (float64, int) {
	return m.LogReg.lossPredict(w, m.unit(s))
}

// Predict returns the class of largest logit on the scaled input.
func (m *UnitLogReg) Predict(w []float64, x []float32) int { return m.LogReg.Predict(w, m.unitX(x)) }

// Grad writes the gradient at w on the scaled sample into dst.
func (m *UnitLogReg) Grad(dst, w []float64, s dataset.Sample) float64 {
	return m.LogReg.Grad(dst, w, m.unit(s))
}

// GradDiff is LogReg's GradDiff on the scaled sample.
func (m *UnitLogReg) GradDiff(dst []float64, a float64, wa []float64, b float64, wb []float64, s dataset.Sample) (lossA, lossB float64) {
	return m.LogReg.GradDiff(dst, a, wa, b, wb, m.unit(s))
}

// FactorGradDiff is LogReg's FactorGradDiff on the scaled sample.
func (m *UnitLogReg) FactorGradDiff(a float64, wa []float64, b float64, wb []float64, s dataset.Sample) float64 {
	return m.LogReg.FactorGradDiff(a, wa, b, wb, m.unit(s))
}

// NameUnitLinear names UnitLinear (not in New: it learns nothing).
const NameUnitLinear = "linear-unit"

// UnitLinear is the linear loss f(w; x) = <w, x'> on x scaled like
// UnitLogReg's inputs (x' = x unitScale / |x|), with one output. It is
// the extreme case of Convex's certificate: convex, 0-smooth (every step
// is a translation), gradients x' of norm below 1. It exists for the
// empirical privacy audit (sim/audit): a canary whose exact gradient the
// auditor chooses, in a model that output perturbation of "local" accepts.
type UnitLinear struct {
	features int
	x        []float32
}

// NewUnitLinear returns a UnitLinear over features inputs (>= 1; it
// panics otherwise).
func NewUnitLinear(features int) *UnitLinear {
	if features < 1 {
		panic("model: NewUnitLinear: features < 1")
	}
	return &UnitLinear{features: features, x: make([]float32, features)}
}

// Name returns "linear-unit".
func (m *UnitLinear) Name() string { return NameUnitLinear }

// Dim returns the number of features.
func (m *UnitLinear) Dim() int { return m.features }

// Features returns the number of features.
func (m *UnitLinear) Features() int { return m.features }

// Classes returns 1: the model has one output and predicts nothing.
func (m *UnitLinear) Classes() int { return 1 }

// Clone returns an independent UnitLinear.
func (m *UnitLinear) Clone() Model { return NewUnitLinear(m.features) }

// Convex returns the gradient bound 1 and the smoothness 0.
func (m *UnitLinear) Convex() (gradBound, smoothness float64) {
	g, l, _ := Convexity(NameUnitLinear)
	return g, l
}

// Predict returns 0.
func (m *UnitLinear) Predict(w []float64, x []float32) int { return 0 }

// Loss returns <w, x'>.
func (m *UnitLinear) Loss(w []float64, s dataset.Sample) float64 {
	mustLen("w", w, m.features)
	l := 0.0
	for i, v := range unitScaled(m.x, s.X) {
		l += w[i] * float64(v)
	}
	return l
}

// Grad writes x' into dst and returns the loss.
func (m *UnitLinear) Grad(dst, w []float64, s dataset.Sample) float64 {
	mustLen("Grad dst", dst, m.features)
	l := m.Loss(w, s)
	for i, v := range m.x {
		dst[i] = float64(v)
	}
	return l
}
