//go:build !amd64

package model

// Without gonum's assembly (wasm among others) its generic Go kernels are
// 2-4x slower than the hand loops (BenchmarkKernelsVsGonum under node),
// so the hand loops are the dense kernels and the sparse form is used
// whenever load chooses it.

func denseKernels(nnz, n int) bool { return false }

func gemvRows(out, w []float64, stride int, x []float64) { gemvRowsHand(out, w, stride, x) }

func gerRows(dst []float64, stride int, alpha float64, g, x []float64) {
	gerRowsHand(dst, stride, alpha, g, x)
}
