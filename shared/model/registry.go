package model

import (
	"fmt"
	"math"

	"browserfl/shared/dataset"
)

// Model names accepted by New.
const (
	NameLogReg = "logreg"
	NameMLP    = "mlp"
)

// Names lists the model names New accepts.
func Names() []string { return []string{NameLogReg, NameMLP, NameUnitLogReg} }

// MLPHidden is the hidden width New uses for "mlp" (SoteriaFL sec. 6.2).
const MLPHidden = 64

// New returns the model called name for the given input shape: "logreg"
// (NewLogReg), "mlp" (NewMLP with MLPHidden hidden units) or
// "logreg-unit" (NewUnitLogReg). It returns an
// error for an unknown name or a shape with features < 1 or classes < 2.
func New(name string, features, classes int) (Model, error) {
	if features < 1 || classes < 2 {
		return nil, fmt.Errorf("model: %q needs features >= 1 and classes >= 2, got %d and %d", name, features, classes)
	}
	switch name {
	case NameLogReg:
		return NewLogReg(features, classes), nil
	case NameMLP:
		return NewMLP(features, MLPHidden, classes), nil
	case NameUnitLogReg:
		return NewUnitLogReg(features, classes), nil
	}
	return nil, fmt.Errorf("model: unknown model %q (valid: %q)", name, Names())
}

// Init fills dst (len m.Dim()) with m's deterministic initialisation for
// seed: zeros for LogReg, the documented Glorot-uniform start for MLP, and
// zeros for models that do not implement Initializer.
func Init(m Model, dst []float64, seed uint64) {
	mustLen("Init dst", dst, m.Dim())
	if in, ok := m.(Initializer); ok {
		in.InitParams(dst, seed)
		return
	}
	clear(dst)
}

// GradDiff writes dst = a*grad f(wa; s) - b*grad f(wb; s) and returns the
// two losses, in one pass when m implements DiffGrader (both models here
// do) and otherwise with two Grad calls and a temporary vector.
func GradDiff(m Model, dst []float64, a float64, wa []float64, b float64, wb []float64, s dataset.Sample) (lossA, lossB float64) {
	if d, ok := m.(DiffGrader); ok {
		return d.GradDiff(dst, a, wa, b, wb, s)
	}
	tmp := make([]float64, m.Dim())
	lossA = m.Grad(dst, wa, s)
	lossB = m.Grad(tmp, wb, s)
	for i, v := range tmp {
		dst[i] = a*dst[i] - b*v
	}
	return lossA, lossB
}

// MeanGrad writes the mean gradient (1/n) sum_i grad f(w; s_i) over the n
// samples into dst and returns the mean loss; tmp (len Dim()) is scratch.
// This is the full local gradient of the GD and SVRG baselines. For no
// samples dst is zeroed and the loss is NaN. It does not clip: privacy code
// must clip per-sample gradients itself (see shared/mechanism).
func MeanGrad(m Model, dst, tmp, w []float64, samples []dataset.Sample) (meanLoss float64) {
	mustLen("MeanGrad dst", dst, m.Dim())
	mustLen("MeanGrad tmp", tmp, m.Dim())
	clear(dst)
	if len(samples) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, s := range samples {
		sum += m.Grad(tmp, w, s)
		for i, v := range tmp {
			dst[i] += v
		}
	}
	inv := 1 / float64(len(samples))
	for i := range dst {
		dst[i] *= inv
	}
	return sum * inv
}

// Evaluate returns the fraction of samples whose label m predicts under w
// and the mean per-sample loss. Both are NaN for no samples. It uses one
// forward pass per sample for the models of this package.
func Evaluate(m Model, w []float64, samples []dataset.Sample) (accuracy, meanLoss float64) {
	var t Tally
	t.Add(m, w, samples)
	return t.Result()
}

// Tally is Evaluate over samples given in batches (a set kept compact
// and expanded a batch at a time): Add each batch in order, then Result
// is Evaluate of all of them, bit for bit (one running sum).
type Tally struct {
	n, correct int
	sum        float64
}

// Add evaluates m under w on samples.
func (t *Tally) Add(m Model, w []float64, samples []dataset.Sample) {
	lp, fused := m.(lossPredictor)
	for _, s := range samples {
		var l float64
		var k int
		if fused {
			l, k = lp.lossPredict(w, s)
		} else {
			l, k = m.Loss(w, s), m.Predict(w, s.X)
		}
		t.sum += l
		if k == s.Label {
			t.correct++
		}
	}
	t.n += len(samples)
}

// Result returns the fraction of the samples added whose label was
// predicted and their mean loss; both NaN if none were.
func (t Tally) Result() (accuracy, meanLoss float64) {
	if t.n == 0 {
		return math.NaN(), math.NaN()
	}
	n := float64(t.n)
	return float64(t.correct) / n, t.sum / n
}

// CheckParams returns an error unless w has m.Dim() entries, all finite.
// Use it on parameter vectors that came from outside the program.
func CheckParams(m Model, w []float64) error {
	if len(w) != m.Dim() {
		return fmt.Errorf("model: %s parameters have length %d, want %d", m.Name(), len(w), m.Dim())
	}
	for i, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("model: %s parameter %d is %v", m.Name(), i, v)
		}
	}
	return nil
}

// CheckSample returns an error unless s fits m: len(s.X) == Features(),
// every feature finite and the label in [0, Classes()). Models that do not
// implement Shaped are only checked for finite features.
func CheckSample(m Model, s dataset.Sample) error {
	if sh, ok := m.(Shaped); ok {
		if len(s.X) != sh.Features() {
			return fmt.Errorf("model: %s sample has %d features, want %d", m.Name(), len(s.X), sh.Features())
		}
		if s.Label < 0 || s.Label >= sh.Classes() {
			return fmt.Errorf("model: %s sample label %d outside [0, %d)", m.Name(), s.Label, sh.Classes())
		}
	}
	if finite32(s.X) {
		return nil
	}
	for i, v := range s.X {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("model: %s sample feature %d is %v", m.Name(), i, v)
		}
	}
	return nil
}

// finite32 reports whether every element of x is finite: x - x is 0 for
// finite x and NaN for NaN and ±Inf, summed branch-free in four partial
// sums (NaN propagates, so the total is 0 exactly when all are finite).
func finite32(x []float32) bool {
	var a0, a1, a2, a3 float32
	for len(x) >= 4 {
		v := x[:4:4]
		a0 += v[0] - v[0]
		a1 += v[1] - v[1]
		a2 += v[2] - v[2]
		a3 += v[3] - v[3]
		x = x[4:]
	}
	for _, v := range x {
		a0 += v - v
	}
	return (a0+a1)+(a2+a3) == 0
}

func mustLen(what string, v []float64, n int) {
	if len(v) != n {
		panic(fmt.Sprintf("model: %s has length %d, want %d", what, len(v), n))
	}
}

func mustLenX(x []float32, n int) {
	if len(x) != n {
		panic(fmt.Sprintf("model: sample has %d features, want %d", len(x), n))
	}
}

func mustLabel(label, classes int) {
	if label < 0 || label >= classes {
		panic(fmt.Sprintf("model: label %d outside [0, %d)", label, classes))
	}
}
