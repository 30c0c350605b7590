package optim

import (
	"math"
	"math/rand/v2"
	"testing"

	"browserfl/internal/cputime"
)

// TestSumVectorsKeepsTheOrder checks SumVectors bit for bit against
// adding the vectors one after another, for every count of vectors from
// 0 to 9 (the four-at-a-time passes and the rest). The values span many
// magnitudes so that any other order of addition rounds differently.
func TestSumVectorsKeepsTheOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const d = 37
	for n := 0; n <= 9; n++ {
		vs := make([][]float64, n)
		for k := range vs {
			vs[k] = make([]float64, d)
			for i := range vs[k] {
				vs[k][i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(30)-15))
			}
		}
		want := make([]float64, d)
		for _, v := range vs {
			for i, x := range v {
				want[i] += x
			}
		}
		got := make([]float64, d)
		for i := range got {
			got[i] = 1 // SumVectors clears it first
		}
		SumVectors(got, vs)
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%d vectors, element %d: %v, want %v (added in order)", n, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkSumVectors compares SumVectors with one pass per vector for a
// round of 300 updates at d = 7,850, interleaved in thread CPU time.
func BenchmarkSumVectors(b *testing.B) {
	const d, n = 7850, 300
	vs := make([][]float64, n)
	for k := range vs {
		vs[k] = make([]float64, d)
		for i := range vs[k] {
			vs[k][i] = float64(k*i%7) - 3
		}
	}
	sum := make([]float64, d)
	ns := cputime.Interleave(b,
		func() {
			clear(sum)
			for _, v := range vs {
				for i, x := range v {
					sum[i] += x
				}
			}
		},
		func() { SumVectors(sum, vs) })
	b.ReportMetric(ns[0]/1e3, "us-onebyone")
	b.ReportMetric(ns[1]/1e3, "us-sumvectors")
	b.ReportMetric(ns[0]/ns[1], "x-faster")
}
