// Package model holds the differentiable models the product trains, with
// per-sample gradients: multinomial logistic regression (the papers' model,
// d = 10 x 785) and a one-hidden-layer sigmoid network (SoteriaFL sec. 6.2,
// 784-64-10).
//
// Parameters are a flat []float64 of length Dim(); the layout of each model
// is documented on its type. Nothing here allocates in the per-sample path
// once a model is built (scratch space lives in the model value, so a Model
// is not safe for concurrent use; build one per goroutine with Clone).
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
