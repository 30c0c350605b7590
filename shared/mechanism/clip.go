package mechanism

import (
	"fmt"
	"math"
)

// Norm returns the Euclidean norm of v, computed with scaling so that it
// neither overflows nor underflows for finite input.
func Norm(v []float64) float64 {
	scale, ssq := 0.0, 1.0
	for _, x := range v {
		if x == 0 {
			continue
		}
		a := math.Abs(x)
		if scale < a {
			r := scale / a
			ssq = 1 + ssq*r*r
			scale = a
		} else {
			r := a / scale
			ssq += r * r
		}
	}
	if scale == 0 {
		return 0
	}
	return scale * math.Sqrt(ssq)
}

// fastNorm is Norm for vectors known to be moderate (no overflow in the
// plain sum of squares); it falls back to Norm otherwise.
func fastNorm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	if s > 1e300 || (s < 1e-300 && s != 0) || math.IsInf(s, 0) || math.IsNaN(s) {
		return Norm(v)
	}
	return math.Sqrt(s)
}

// Clip scales v in place so that ||v||_2 <= maxNorm and returns the factor
// applied (1 when v was already inside the ball). A zero or negative
// maxNorm zeroes v. The input must be finite (see CheckFinite); for finite
// input the result satisfies ||v|| <= maxNorm exactly in floating point: the
// factor is reduced by one ulp-scale step if rounding would leave the norm
// above the bound.
func Clip(v []float64, maxNorm float64) float64 {
	if !(maxNorm > 0) {
		for i := range v {
			v[i] = 0
		}
		return 0
	}
	n := fastNorm(v)
	if n <= maxNorm {
		return 1
	}
	f := maxNorm / n
	for i := range v {
		v[i] *= f
	}
	// Rounding can leave the scaled norm a few ulps above maxNorm; shrink
	// until it is inside (at most a couple of iterations in practice).
	for k := 0; k < 8 && fastNorm(v) > maxNorm; k++ {
		g := 1 - 1e-15*float64(int(1)<<k)
		for i := range v {
			v[i] *= g
		}
		f *= g
	}
	return f
}

// CheckFinite returns an error naming the first index of v holding NaN or
// ±Inf, or nil.
func CheckFinite(v []float64) error {
	// x - x is 0 for every finite x and NaN for NaN and ±Inf: one
	// comparison per element on the fast path.
	acc := 0.0
	for _, x := range v {
		acc += x - x
	}
	if acc == 0 {
		return nil
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("mechanism: non-finite value %v at index %d", x, i)
		}
	}
	return nil
}
