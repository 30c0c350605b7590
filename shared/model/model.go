package model

import "browserfl/shared/dataset"

// Model is a differentiable per-sample loss over a flat parameter vector.
type Model interface {
	// Name identifies the model in flags, CSV files and the wire protocol.
	Name() string
	// Dim is the number of parameters.
	Dim() int
	// Loss returns the per-sample loss of parameters w on s.
	Loss(w []float64, s dataset.Sample) float64
	// Grad writes the gradient of the per-sample loss at w on s into dst
	// (len(dst) == Dim(), overwritten) and returns the loss.
	Grad(dst, w []float64, s dataset.Sample) float64
	// Predict returns the predicted class of features x under w.
	Predict(w []float64, x []float32) int
	// Clone returns an independent model with its own scratch space.
	Clone() Model
}

// Shaped is implemented by models that know their input shape; both models
// of this package do. CheckSample uses it.
type Shaped interface {
	// Features is the required len(Sample.X).
	Features() int
	// Classes is the number of labels; a label must lie in [0, Classes()).
	Classes() int
}

// DiffGrader is implemented by models that can compute a weighted
// difference of two gradients on the same sample in one pass, which is what
// the mu^2-SGD device correction needs:
//
//	dst = a * grad f(wa; s) - b * grad f(wb; s).
//
// It returns the two losses f(wa; s) and f(wb; s). It is cheaper than two
// Grad calls because dst is written once. Both models of this package
// implement it; use the GradDiff function to fall back on Grad for others.
type DiffGrader interface {
	GradDiff(dst []float64, a float64, wa []float64, b float64, wb []float64, s dataset.Sample) (lossA, lossB float64)
}

// Factored is implemented by models whose per-sample gradient, and the
// weighted difference of two gradients on one sample, is an outer product
// of a short coefficient vector and the sample's input: a rank-one matrix,
// whose Euclidean norm is the product of two short norms and is known
// without forming the d-vector. A device clips such gradients without
// writing them ("ghost clipping"): it reads the norm, computes the clipping
// factor, and adds the scaled gradient to its sum directly. LogReg
// implements it (its gradient row c is (p_c - [c == y]) (x, 1), and a
// difference of two gradients on one sample keeps the factor (x, 1)).
//
// The factored gradient lives in the model's scratch space: any other call
// on the model replaces it.
type Factored interface {
	// FactorGradDiff computes G = a grad f(wa; s) - b grad f(wb; s) in
	// factored form and returns ||G||_2, NaN or +Inf when G is not finite.
	// With b == 0, wb is not read (it may be nil): G = a grad f(wa; s).
	// Up to the float64 rounding of both sides (a relative difference of
	// a few times (features + classes) 2^-53), the norm equals the norm of
	// the vector GradDiff writes.
	FactorGradDiff(a float64, wa []float64, b float64, wb []float64, s dataset.Sample) (norm float64)
	// AddFactor adds alpha G, for the G of the last FactorGradDiff, to dst
	// (len Dim()).
	AddFactor(dst []float64, alpha float64)
}

// Initializer is implemented by models with their own deterministic
// initialisation; Init uses it.
type Initializer interface {
	// InitParams fills dst (len Dim()) deterministically from seed.
	InitParams(dst []float64, seed uint64)
}

// lossPredictor computes the loss and the predicted class in one forward
// pass; Evaluate uses it when available.
type lossPredictor interface {
	lossPredict(w []float64, s dataset.Sample) (float64, int)
}
