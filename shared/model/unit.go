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
	if name == NameUnitLogReg {
		return 2, 1, true
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
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	if ss == 0 || math.IsInf(ss, 0) || math.IsNaN(ss) {
		// Zero stays zero; a non-finite sample is the caller's error
		// (CheckSample), passed on unchanged for LogReg to reject.
		copy(m.x, x)
		return m.x
	}
	f := unitScale / math.Sqrt(ss)
	for i, v := range x {
		m.x[i] = float32(float64(v) * f)
	}
	return m.x
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
