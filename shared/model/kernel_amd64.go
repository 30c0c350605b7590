package model

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// On amd64 the dense kernels are gonum's blas64 Gemv and Ger, whose
// assembly (SSE2) runs a dense pass over 784 features in about half the
// time of the hand loops; the sparse gathers still win below a quarter of
// the features non-zero (BenchmarkKernelsVsGonum, docs/performance.md).

// denseKernels reports whether the dense kernels should be used for an
// input with nnz non-zeros out of n even though the sparse form is
// available.
func denseKernels(nnz, n int) bool { return 4*nnz > n }

// gemvRows writes out[r] = w[r*stride : r*stride+len(x)] · x.
func gemvRows(out, w []float64, stride int, x []float64) {
	if len(out) == 0 {
		return
	}
	F := len(x)
	a := blas64.General{Rows: len(out), Cols: F, Stride: stride, Data: w[:(len(out)-1)*stride+F]}
	blas64.Gemv(blas.NoTrans, 1, a, blas64.Vector{N: F, Inc: 1, Data: x}, 0, blas64.Vector{N: len(out), Inc: 1, Data: out})
}

// gerRows adds alpha g[r] x to dst[r*stride : r*stride+len(x)].
func gerRows(dst []float64, stride int, alpha float64, g, x []float64) {
	if len(g) == 0 {
		return
	}
	F := len(x)
	a := blas64.General{Rows: len(g), Cols: F, Stride: stride, Data: dst[:(len(g)-1)*stride+F]}
	blas64.Ger(alpha, blas64.Vector{N: len(g), Inc: 1, Data: g}, blas64.Vector{N: F, Inc: 1, Data: x}, a)
}
