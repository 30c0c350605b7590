package model

import (
	"fmt"
	"math"
	"testing"

	"browserfl/internal/cputime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// BenchmarkKernelsVsGonum times, interleaved, the two kernels of a
// factored logistic-regression gradient (the 10 logits, then the rank-one
// update of the 10 x 784 weights) for 32 samples in three ways: over the
// non-zeros (sparse), dense by hand (gemvRowsHand, gerRowsHand) and dense
// with gonum's blas64 Gemv and Ger. The product uses gonum's on amd64 above
// a quarter density (kernel_amd64.go) and the hand loops elsewhere.
func BenchmarkKernelsVsGonum(b *testing.B) {
	const F, C = 784, 10
	stride := F + 1
	for _, density := range benchDensities {
		b.Run(fmt.Sprintf("density=%v", density), func(b *testing.B) {
			w := randParams(newRand(5), C*stride, 0.05)
			dst := make([]float64, C*stride)
			samples := benchSamples(density)[:32]
			in := newInput(F)
			z := make([]float64, C)
			W := blas64.General{Rows: C, Cols: F, Stride: stride, Data: w[:(C-1)*stride+F]}
			D := blas64.General{Rows: C, Cols: F, Stride: stride, Data: dst[:(C-1)*stride+F]}
			sparse := func() {
				for _, s := range samples {
					in.load(s.X)
					for r := 0; r < C; r++ {
						z[r] = gather(w[r*stride:r*stride+F], in.idx, in.val)
					}
					val := in.val[:len(in.idx)]
					for r, gr := range z {
						d := dst[r*stride : r*stride+F]
						for j, i := range in.idx {
							d[i] += 1e-3 * gr * val[j]
						}
					}
				}
			}
			hand := func() {
				for _, s := range samples {
					in.load(s.X)
					gemvRowsHand(z, w, stride, in.x)
					gerRowsHand(dst, stride, 1e-3, z, in.x)
				}
			}
			gon := func() {
				for _, s := range samples {
					in.load(s.X)
					x := blas64.Vector{N: F, Inc: 1, Data: in.x}
					blas64.Gemv(blas.NoTrans, 1, W, x, 0, blas64.Vector{N: C, Inc: 1, Data: z})
					blas64.Ger(1e-3, blas64.Vector{N: C, Inc: 1, Data: z}, x, D)
				}
			}
			t := cputime.Interleave(b, sparse, hand, gon)
			b.ReportMetric(t[0], "sparse-ns")
			b.ReportMetric(t[1], "hand-dense-ns")
			b.ReportMetric(t[2], "gonum-dense-ns")
			b.ReportMetric(t[2]/t[1], "gonum/hand")
			b.ReportMetric(t[2]/t[0], "gonum/sparse")
		})
	}
}

// TestDenseKernelsAgree checks the platform's dense kernels (gonum's on
// amd64) against the hand loops and a plain double loop: equal to 1e-13
// relative, for row counts that exercise the four-row blocks and their
// tail.
func TestDenseKernelsAgree(t *testing.T) {
	rng := newRand(3)
	for _, rows := range []int{1, 3, 4, 10, 64} {
		const F = 97
		stride := F + 2
		w := randParams(rng, rows*stride, 1)
		x := randParams(rng, F, 1)
		g := randParams(rng, rows, 1)
		got, hand := make([]float64, rows), make([]float64, rows)
		gemvRows(got, w, stride, x)
		gemvRowsHand(hand, w, stride, x)
		for r := range got {
			want := 0.0
			for i, v := range x {
				want += w[r*stride+i] * v
			}
			if math.Abs(got[r]-want) > 1e-13*(1+math.Abs(want)) || math.Abs(hand[r]-want) > 1e-13*(1+math.Abs(want)) {
				t.Errorf("rows %d: gemv row %d = %v (hand %v), want %v", rows, r, got[r], hand[r], want)
			}
		}
		d1 := randParams(rng, rows*stride, 1)
		d2 := append([]float64(nil), d1...)
		want := append([]float64(nil), d1...)
		gerRows(d1, stride, 0.5, g, x)
		gerRowsHand(d2, stride, 0.5, g, x)
		for r := range g {
			for i, v := range x {
				want[r*stride+i] += 0.5 * g[r] * v
			}
		}
		for i := range want {
			if math.Abs(d1[i]-want[i]) > 1e-13 || math.Abs(d2[i]-want[i]) > 1e-13 {
				t.Fatalf("rows %d: ger element %d = %v (hand %v), want %v", rows, i, d1[i], d2[i], want[i])
			}
		}
	}
}

// refRowsSparse and refAddRowsSparse are the sparse kernels as they were
// before their rewrite (a bounds check per row and non-zero), kept to time the
// product's against them.
func refRowsSparse(in *input, out, w []float64, stride int) {
	F := len(in.x)
	for r := range out {
		o := r * stride
		out[r] = gather(w[o:o+F], in.idx, in.val)
	}
}

func refAddRowsSparse(in *input, dst []float64, stride int, alpha float64, g []float64) {
	F := len(in.x)
	val := in.val[:len(in.idx)]
	for r, gr := range g {
		d := dst[r*stride : r*stride+F]
		k := alpha * gr
		for j, i := range in.idx {
			d[i] += k * val[j]
		}
	}
}

// BenchmarkSparseKernels times the product's sparse logits and rank-one
// update (rows, addRows: one comparison per non-zero for four rows)
// against the per-row loops they replaced, interleaved, for 32 samples at
// density 0.19. Run it natively and under node (GOOS=js GOARCH=wasm).
func BenchmarkSparseKernels(b *testing.B) {
	const F, C = 784, 10
	stride := F + 1
	w := randParams(newRand(5), C*stride, 0.05)
	dst := make([]float64, C*stride)
	samples := benchSamples(0.19)[:32]
	in := newInput(F)
	z := make([]float64, C)
	old := func() {
		for _, s := range samples {
			in.load(s.X)
			refRowsSparse(&in, z, w, stride)
			refAddRowsSparse(&in, dst, stride, 1e-3, z)
		}
	}
	cur := func() {
		for _, s := range samples {
			in.load(s.X)
			in.rows(z, w, stride, true)
			in.addRows(dst, stride, 1e-3, z, true)
		}
	}
	t := cputime.Interleave(b, old, cur)
	b.ReportMetric(t[0], "old-ns")
	b.ReportMetric(t[1], "new-ns")
	b.ReportMetric(t[0]/t[1], "speedup")
}

// TestRowsPairMatchesRows: rowsPair gives rows' results for both matrices
// (to rounding of the same sums in the same order, so exactly), for row
// counts that leave every possible tail, sparse and dense inputs.
func TestRowsPairMatchesRows(t *testing.T) {
	rng := newRand(8)
	for _, density := range []float64{0.1, 1} {
		for nr := 1; nr <= 11; nr++ {
			const F = 50
			stride := F + 1
			wa := randParams(rng, nr*stride, 1)
			wb := randParams(rng, nr*stride, 1)
			in := newInput(F)
			sparse := in.load(randSample(rng, F, 2, density).X)
			za, zb := make([]float64, nr), make([]float64, nr)
			in.rowsPair(za, wa, zb, wb, stride, sparse)
			wantA, wantB := make([]float64, nr), make([]float64, nr)
			in.rows(wantA, wa, stride, sparse)
			in.rows(wantB, wb, stride, sparse)
			for r := 0; r < nr; r++ {
				if math.Abs(za[r]-wantA[r]) > 1e-12*(1+math.Abs(wantA[r])) || math.Abs(zb[r]-wantB[r]) > 1e-12*(1+math.Abs(wantB[r])) {
					t.Fatalf("density %v, %d rows: row %d = %v, %v, want %v, %v", density, nr, r, za[r], zb[r], wantA[r], wantB[r])
				}
			}
		}
	}
}
