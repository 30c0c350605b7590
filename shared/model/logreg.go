package model

import (
	"fmt"
	"math"

	"browserfl/shared/dataset"
)

// LogReg is multinomial logistic regression with softmax cross-entropy:
// f(w; (x, y)) = lse(z) - z_y with z_c = W_c · x + b_c.
//
// Layout: d = classes*(features+1); row c occupies
// w[c*(features+1) : (c+1)*(features+1)] and holds the features weights
// W_c[0..features-1] of class c followed by its bias b_c. For 784 features
// and 10 classes, d = 7,850 (the papers' model).
//
// The loss is convex in w; its gradient row c is (p_c - [c == y]) (x, 1), so
// ||grad|| <= sqrt(2) sqrt(||x||^2 + 1).
type LogReg struct {
	features, classes int
	in                input
	za, zb            []float64
	fsparse           bool // the loaded input's form, for AddFactor
}

// NewLogReg returns a logistic regression over features inputs and classes
// labels. It panics unless features >= 1 and classes >= 2 (use New for
// names and sizes from outside the program).
func NewLogReg(features, classes int) *LogReg {
	if features < 1 || classes < 2 {
		panic(fmt.Sprintf("model: NewLogReg(%d, %d): need features >= 1 and classes >= 2", features, classes))
	}
	return &LogReg{
		features: features,
		classes:  classes,
		in:       newInput(features),
		za:       make([]float64, classes),
		zb:       make([]float64, classes),
	}
}

// Name returns "logreg".
func (m *LogReg) Name() string { return NameLogReg }

// Dim returns classes*(features+1).
func (m *LogReg) Dim() int { return m.classes * (m.features + 1) }

// Features returns the number of input features.
func (m *LogReg) Features() int { return m.features }

// Classes returns the number of classes.
func (m *LogReg) Classes() int { return m.classes }

// Clone returns an independent LogReg of the same shape.
func (m *LogReg) Clone() Model { return NewLogReg(m.features, m.classes) }

// InitParams sets dst to zero: the loss is convex, so the start only moves
// the first iterates, and zero is what the papers use.
func (m *LogReg) InitParams(dst []float64, seed uint64) {
	mustLen("InitParams dst", dst, m.Dim())
	clear(dst)
}

// logits writes z_c = W_c·x + b_c for the loaded input.
func (m *LogReg) logits(z, w []float64, sparse bool) {
	stride := m.features + 1
	m.in.rows(z, w, stride, sparse)
	for c := range z {
		z[c] += w[c*stride+m.features]
	}
}

// logitsPair writes the logits of the loaded input under wa into m.za and
// under wb into m.zb.
func (m *LogReg) logitsPair(wa, wb []float64, sparse bool) {
	stride := m.features + 1
	m.in.rowsPair(m.za, wa, m.zb, wb, stride, sparse)
	for c := range m.za {
		m.za[c] += wa[c*stride+m.features]
		m.zb[c] += wb[c*stride+m.features]
	}
}

// Loss returns the cross-entropy of w on s.
func (m *LogReg) Loss(w []float64, s dataset.Sample) float64 {
	l, _ := m.lossPredict(w, s)
	return l
}

func (m *LogReg) lossPredict(w []float64, s dataset.Sample) (float64, int) {
	m.check(w, s)
	sparse := m.in.load(s.X)
	m.logits(m.za, w, sparse)
	k := argmax(m.za)
	return softmaxCE(m.za, s.Label), k
}

// Predict returns the class of largest logit (smallest index on ties).
func (m *LogReg) Predict(w []float64, x []float32) int {
	mustLen("Predict w", w, m.Dim())
	mustLenX(x, m.features)
	sparse := m.in.load(x)
	m.logits(m.za, w, sparse)
	return argmax(m.za)
}

// Grad writes the gradient at w on s into dst and returns the loss.
func (m *LogReg) Grad(dst, w []float64, s dataset.Sample) float64 {
	m.check(w, s)
	mustLen("Grad dst", dst, m.Dim())
	sparse := m.in.load(s.X)
	m.logits(m.za, w, sparse)
	loss := softmaxCE(m.za, s.Label)
	// w is not read after this point, so dst may alias it.
	m.writeGrad(dst, m.za, sparse)
	return loss
}

// GradDiff writes a*grad f(wa; s) - b*grad f(wb; s) into dst in one pass
// and returns f(wa; s) and f(wb; s).
func (m *LogReg) GradDiff(dst []float64, a float64, wa []float64, b float64, wb []float64, s dataset.Sample) (lossA, lossB float64) {
	m.check(wa, s)
	mustLen("GradDiff wb", wb, m.Dim())
	mustLen("GradDiff dst", dst, m.Dim())
	sparse := m.in.load(s.X)
	m.logitsPair(wa, wb, sparse)
	lossA = softmaxCE(m.za, s.Label)
	lossB = softmaxCE(m.zb, s.Label)
	for c := range m.za {
		m.za[c] = a*m.za[c] - b*m.zb[c]
	}
	m.writeGrad(dst, m.za, sparse)
	return lossA, lossB
}

// FactorGradDiff computes a*grad f(wa; s) - b*grad f(wb; s) as the outer
// product g (x, 1) with g = a (p_a - e_y) - b (p_b - e_y) (kept for
// AddFactor) and returns its norm ||g|| sqrt(||x||^2 + 1). See Factored.
func (m *LogReg) FactorGradDiff(a float64, wa []float64, b float64, wb []float64, s dataset.Sample) float64 {
	m.check(wa, s)
	sparse := m.in.load(s.X)
	m.fsparse = sparse
	if b != 0 {
		mustLen("FactorGradDiff wb", wb, m.Dim())
		m.logitsPair(wa, wb, sparse)
		softmaxCE(m.za, s.Label)
		softmaxCE(m.zb, s.Label)
		for c := range m.za {
			m.za[c] = a*m.za[c] - b*m.zb[c]
		}
	} else {
		m.logits(m.za, wa, sparse)
		softmaxCE(m.za, s.Label)
		if a != 1 {
			for c := range m.za {
				m.za[c] *= a
			}
		}
	}
	return norm2(m.za) * math.Sqrt(m.in.sumSquares(sparse)+1)
}

// AddFactor adds alpha times the last FactorGradDiff's gradient to dst:
// row c gets (alpha g_c) (x, 1).
func (m *LogReg) AddFactor(dst []float64, alpha float64) {
	mustLen("AddFactor dst", dst, m.Dim())
	stride := m.features + 1
	m.in.addRows(dst, stride, alpha, m.za, m.fsparse)
	for c, gc := range m.za {
		dst[c*stride+m.features] += alpha * gc
	}
}

// writeGrad writes row c of dst as g_c * (x, 1).
func (m *LogReg) writeGrad(dst, g []float64, sparse bool) {
	stride := m.features + 1
	for c, gc := range g {
		r := dst[c*stride : (c+1)*stride]
		m.in.row(r, gc, sparse)
		r[m.features] = gc
	}
}

func (m *LogReg) check(w []float64, s dataset.Sample) {
	mustLen("w", w, m.Dim())
	mustLenX(s.X, m.features)
	mustLabel(s.Label, m.classes)
}
