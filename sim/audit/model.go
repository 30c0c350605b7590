package audit

import (
	"math"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
)

// linear is the audit's loss: f(w; z) = <w, x(z)>, whose gradient is the
// sample's feature vector whatever w is. A sample is then a gradient
// canary: the auditor chooses the exact (pre-clipping) gradient the device
// computes for it, in every round. The device's guarantee holds for any
// loss (clipping bounds the sensitivity by construction, docs/privacy.md
// section 1), so this model is a legitimate input to the product's
// mechanism, and the worst case for the accounting: a replaced sample can
// move the clipped minibatch mean by exactly the sensitivity 2S/b.
type linear struct{ d int }

var (
	_ model.Model      = linear{}
	_ model.Shaped     = linear{}
	_ model.DiffGrader = linear{}
)

func (linear) Name() string         { return "audit-linear" }
func (m linear) Dim() int           { return m.d }
func (m linear) Features() int      { return m.d }
func (linear) Classes() int         { return 1 }
func (m linear) Clone() model.Model { return m }

func (linear) Predict([]float64, []float32) int { return 0 }

func (linear) Loss(w []float64, s dataset.Sample) float64 {
	l := 0.0
	for i, x := range s.X {
		l += w[i] * float64(x)
	}
	return l
}

func (m linear) Grad(dst, w []float64, s dataset.Sample) float64 {
	for i, x := range s.X {
		dst[i] = float64(x)
	}
	return m.Loss(w, s)
}

// GradDiff is a grad f(wa; s) - b grad f(wb; s), written like the generic
// model.GradDiff would (two gradients, then the weighted difference).
func (m linear) GradDiff(dst []float64, a float64, wa []float64, b float64, wb []float64, s dataset.Sample) (lossA, lossB float64) {
	for i, x := range s.X {
		g := float64(x)
		dst[i] = a*g - b*g
	}
	return m.Loss(wa, s), m.Loss(wb, s)
}

// latchLoss is the audit's loss for "local" with more than one hidden
// step (Config.Latch). Its samples have d + 2 features: the model's d,
// then a mode and a threshold. A sample of mode 0 is a linear sample as
// above, f(w; z) = <w, x(z)> on the first d features (the canary, the
// sample it replaces and the first step batch's other samples). A sample
// of mode 1 has the concave loss f(w; z) = -c |w_1 - theta| (c = x_1(z),
// theta its last feature), gradient -c sign(w_1 - theta) e_1 (+c e_1 at
// w_1 = theta): a gradient step moves the iterate away from theta by
// eta S after clipping. The hidden steps made of such samples are a
// latch: they carry the side of theta the first step left the iterate on
// into the message, amplified by S per step, instead of only adding their
// noise. It is a legitimate input for the same reason as linear: the
// device's guarantee holds for any loss (a non-convex one included).
type latchLoss struct{ d int }

var (
	_ model.Model      = latchLoss{}
	_ model.Shaped     = latchLoss{}
	_ model.DiffGrader = latchLoss{}
)

func (latchLoss) Name() string         { return "audit-latch" }
func (m latchLoss) Dim() int           { return m.d }
func (m latchLoss) Features() int      { return m.d + 2 }
func (latchLoss) Classes() int         { return 1 }
func (m latchLoss) Clone() model.Model { return m }

func (latchLoss) Predict([]float64, []float32) int { return 0 }

func (m latchLoss) Loss(w []float64, s dataset.Sample) float64 {
	if s.X[m.d] == 0 {
		return linear(m).Loss(w, dataset.Sample{X: s.X[:m.d]})
	}
	return -float64(s.X[0]) * math.Abs(w[0]-float64(s.X[m.d+1]))
}

func (m latchLoss) Grad(dst, w []float64, s dataset.Sample) float64 {
	if s.X[m.d] == 0 {
		return linear(m).Grad(dst, w, dataset.Sample{X: s.X[:m.d]})
	}
	clear(dst)
	c := float64(s.X[0])
	if w[0] < float64(s.X[m.d+1]) {
		dst[0] = c
	} else {
		dst[0] = -c
	}
	return m.Loss(w, s)
}

// GradDiff is a grad f(wa; s) - b grad f(wb; s).
func (m latchLoss) GradDiff(dst []float64, a float64, wa []float64, b float64, wb []float64, s dataset.Sample) (lossA, lossB float64) {
	g := make([]float64, m.d)
	lossA = m.Grad(dst, wa, s)
	lossB = m.Grad(g, wb, s)
	for i := range dst {
		dst[i] = a*dst[i] - b*g[i]
	}
	return lossA, lossB
}
