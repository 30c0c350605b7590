package audit

import (
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
