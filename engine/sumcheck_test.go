package engine_test

import (
	"errors"
	"math"
	"testing"

	"browserfl/engine"
	"browserfl/shared/optim"
	"browserfl/shared/optim/plausible"
)

// TestRingSum: the sum modulo 2^k read as a signed integer, times the
// step: exact within the ring, wrapped beyond it, at k = 32 and 64.
func TestRingSum(t *testing.T) {
	for _, tc := range []struct {
		bits int
		xs   [][]int64
		want []float64
	}{
		{32, [][]int64{{1, -5, math.MaxInt32}, {2, -7, 0}}, []float64{3, -12, math.MaxInt32}},
		{32, [][]int64{{math.MaxInt32, math.MinInt32, -3}, {1, -1, 1 << 32}}, []float64{math.MinInt32, math.MaxInt32, -3}},
		{64, [][]int64{{math.MaxInt64, -1}, {1, -2}}, []float64{math.MinInt64, -3}},
	} {
		got := make([]float64, len(tc.want))
		engine.RingSum(got, tc.xs, tc.bits, 0.5)
		for j := range got {
			if got[j] != tc.want[j]*0.5 {
				t.Errorf("k = %d, %v: coordinate %d = %v, want %v", tc.bits, tc.xs, j, got[j], tc.want[j]*0.5)
			}
		}
	}
}

// TestCheckSum: a sum the checker refuses is an ErrSumImplausible (and a
// plausible.ErrImplausible); an all-zero sum passes.
func TestCheckSum(t *testing.T) {
	p := optim.Params{Algorithm: "shared", Model: "logreg", Features: 4, Classes: 2, M: 10, Cohort: 10, Rounds: 5, Batch: 8, Clip: 1, Eta: 0.05, Rho: 50, Compressor: "f64"}
	c, err := plausible.NewSumChecker(p, 10)
	if err != nil {
		t.Fatal(err)
	}
	sum := make([]float64, 10)
	if err := engine.CheckSum(c, sum, 10); err != nil {
		t.Fatal(err)
	}
	sum[3] = math.Inf(1)
	err = engine.CheckSum(c, sum, 10)
	if !errors.Is(err, engine.ErrSumImplausible) || !errors.Is(err, plausible.ErrImplausible) {
		t.Errorf("an infinite sum: %v", err)
	}
}
