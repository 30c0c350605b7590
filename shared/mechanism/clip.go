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

// sumSquares returns sum_i v[i]^2 and whether every v[i] is finite, in one
// pass with four partial sums of each (independent dependency chains, so
// the pass runs at the machine's multiply-add throughput rather than its
// latency). x - x is 0 for every finite x and NaN for NaN and ±Inf, so the
// finiteness sum is 0 exactly when every element is finite.
func sumSquares(v []float64) (ssq float64, finite bool) {
	var s0, s1, s2, s3, f0, f1, f2, f3 float64
	for len(v) >= 4 {
		x := v[:4:4]
		x0, x1, x2, x3 := x[0], x[1], x[2], x[3]
		s0 += x0 * x0
		s1 += x1 * x1
		s2 += x2 * x2
		s3 += x3 * x3
		f0 += x0 - x0
		f1 += x1 - x1
		f2 += x2 - x2
		f3 += x3 - x3
		v = v[4:]
	}
	for _, x := range v {
		s0 += x * x
		f0 += x - x
	}
	return (s0 + s1) + (s2 + s3), (f0+f1)+(f2+f3) == 0
}

// normOf turns ssq, the plain sum of squares of v, into ||v||: its square
// root when the sum neither overflowed nor lost precision to underflow,
// Norm(v) (scaled, another pass) otherwise.
func normOf(v []float64, ssq float64) float64 {
	if ssq > 1e300 || ssq < 1e-300 || math.IsNaN(ssq) {
		return Norm(v)
	}
	return math.Sqrt(ssq)
}

// fastNorm is Norm for vectors known to be moderate (no overflow in the
// plain sum of squares); it falls back to Norm otherwise.
func fastNorm(v []float64) float64 {
	s, _ := sumSquares(v)
	return normOf(v, s)
}

// scaleSumSquares multiplies v by f in place and returns the sum of
// squares of the result (four partial sums), in one pass.
func scaleSumSquares(v []float64, f float64) float64 {
	var s0, s1, s2, s3 float64
	for len(v) >= 4 {
		x := v[:4:4]
		x0, x1, x2, x3 := x[0]*f, x[1]*f, x[2]*f, x[3]*f
		x[0], x[1], x[2], x[3] = x0, x1, x2, x3
		s0 += x0 * x0
		s1 += x1 * x1
		s2 += x2 * x2
		s3 += x3 * x3
		v = v[4:]
	}
	for i, x := range v {
		x *= f
		v[i] = x
		s0 += x * x
	}
	return (s0 + s1) + (s2 + s3)
}

// ClipFactor returns the factor that clipping a vector of Euclidean norm
// n to maxNorm applies: 1 when n <= maxNorm, maxNorm/n above it, and 0
// when maxNorm <= 0. n must be finite. Callers that know a vector's norm
// without forming it (ghost clipping: a rank-one per-sample gradient,
// model.Factored) scale by it; the float64 rounding of such a norm (a
// relative error of at most about (d + b) 2^-53) is what GridSensitivity's
// margin absorbs.
func ClipFactor(n, maxNorm float64) float64 {
	if !(maxNorm > 0) {
		return 0
	}
	if n <= maxNorm {
		return 1
	}
	return maxNorm / n
}

// Clip scales v in place so that ||v||_2 <= maxNorm and returns the factor
// applied (1 when v was already inside the ball). A zero or negative
// maxNorm zeroes v. The input must be finite (see CheckFinite, or use
// ClipFinite, which checks in the same pass); for finite input the result
// satisfies ||v|| <= maxNorm exactly in floating point: the factor is
// reduced by one ulp-scale step if rounding would leave the norm above the
// bound.
func Clip(v []float64, maxNorm float64) float64 {
	if !(maxNorm > 0) {
		clear(v)
		return 0
	}
	s, _ := sumSquares(v)
	return clipWith(v, s, maxNorm)
}

// ClipFinite is CheckFinite followed by Clip, with the finiteness check,
// the norm and (when it clips) the scaling and the check of the scaled
// norm done in two passes over v instead of four. On a non-finite element
// it returns CheckFinite's error and leaves v unchanged.
func ClipFinite(v []float64, maxNorm float64) (float64, error) {
	s, ok := sumSquares(v)
	if !ok {
		return 0, nonFinite(v)
	}
	if !(maxNorm > 0) {
		clear(v)
		return 0, nil
	}
	return clipWith(v, s, maxNorm), nil
}

// clipWith clips finite v, whose plain sum of squares is ssq, to maxNorm
// (> 0).
func clipWith(v []float64, ssq, maxNorm float64) float64 {
	n := normOf(v, ssq)
	if n <= maxNorm {
		return 1
	}
	f := maxNorm / n
	// The scaled vector's norm comes from the same pass that scales it.
	// Rounding can leave it a few ulps above maxNorm; shrink until it is
	// inside (at most a couple of iterations in practice).
	n2 := normOf(v, scaleSumSquares(v, f))
	for k := 0; k < 8 && n2 > maxNorm; k++ {
		g := 1 - 1e-15*float64(int(1)<<k)
		n2 = normOf(v, scaleSumSquares(v, g))
		f *= g
	}
	return f
}

// CheckFinite returns an error naming the first index of v holding NaN or
// ±Inf, or nil.
func CheckFinite(v []float64) error {
	if _, ok := sumSquares(v); ok {
		return nil
	}
	return nonFinite(v)
}

// nonFinite returns the error naming v's first non-finite element (nil if
// there is none).
func nonFinite(v []float64) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("mechanism: non-finite value %v at index %d", x, i)
		}
	}
	return nil
}
