package mechanism

import (
	"fmt"
	"math"
	"math/bits"
)

// Floating-point-safe noise: a discrete Gaussian on a power-of-two grid.
//
// A continuous sampler implemented in floating point does not output a
// real Gaussian: its outputs lie on a sparse, structured set (for the
// ziggurat, an integer times one of 128 layer widths), so value + noise
// can reveal value exactly (Mironov 2012, "On significance of the least
// significant bits for differential privacy"). A private device release is
// therefore computed entirely in integers:
//
//  1. The grid step g is a power of two fixed by public parameters only
//     (GridStep: the largest power of two <= Delta / (GridFactor sqrt(d)),
//     with Delta the release's L2 sensitivity and d the dimension).
//  2. The device rounds its clipped estimate v onto the grid,
//     V = round(v / g) (ToGrid; v/g is exact because g is a power of two).
//     Replacing one sample moves v by at most Delta in L2 and each
//     coordinate's rounding by at most 1, so V moves by at most
//     Delta/g + sqrt(d) in L2 (GridSensitivity, which adds a relative
//     margin of 1e-6 for the float64 rounding of clipping and averaging).
//  3. The noise Z is an exact discrete Gaussian N_Z(0, sigma^2) per
//     coordinate (DiscreteGaussian) with an integer sigma calibrated to that
//     inflated sensitivity and rounded up (DiscreteSigma). By Canonne,
//     Kamath and Steinke (2020, "The Discrete Gaussian for Differential
//     Privacy", Theorem 14: adding independent N_Z(0, sigma^2) to an
//     integer-valued query of L2 sensitivity Delta_Z gives
//     Delta_Z^2 / (2 sigma^2)-zCDP), V + Z costs at most
//     GridSensitivity^2 / (2 sigma^2), which DiscreteSigma makes at most
//     the continuous charge Delta^2 / (2 sigma_c^2) the ledger records.
//  4. What leaves the device is g * (integer vector), and every byte of the
//     payload is a deterministic function of that integer vector and of
//     independent compressor randomness: post-processing.
//
// The sampler is CKS Algorithm 3 (discrete Laplace proposals, CKS
// Algorithm 2, accepted with probability exp(-(|Y| - sigma^2/t)^2 /
// (2 sigma^2)), t = sigma + 1), with every Bernoulli(exp(-x)) drawn by CKS
// Algorithm 1 from exact integer ratios: no floating-point number enters
// any probability. All arithmetic is in 64-bit integers, with 128-bit
// products (math/bits) where needed; MaxDiscreteSigma keeps every
// intermediate value in range (see DiscreteGaussian). Randomness comes
// from a Stream, so a vector is a deterministic function of its 32-byte
// seed and regenerates bit for bit on every platform.

// GridFactor is c in the grid step g = 2^floor(log2(Delta / (c sqrt d))):
// the rounding slack sqrt(d) is then at most Delta/(c g), so calibrating to
// the inflated sensitivity raises the noise by a factor of at most
// 1 + 2/c (a power of two is within a factor 2 of the target) and by at
// least 1 + 1/c.
const GridFactor = 1000

// MaxDiscreteSigma is the largest sigma (in grid units) DiscreteGaussian
// accepts: with sigma <= 2^30, t = sigma + 1 and q = sigma t < 2^61, so
// 2 q^2 < 2^123 fits the 128-bit arithmetic of the acceptance test.
const MaxDiscreteSigma = 1 << 30

// maxGridValue bounds |v/g| for ToGrid: below 2^52 every integer and
// every half-integer is a float64, so rounding to the nearest integer is
// exact, and sums of a few such integers stay exact in float64.
const maxGridValue = 1 << 52

// gridMargin is the relative margin GridSensitivity adds for the float64
// rounding of clipping and averaging (each a relative error of at most
// about (d + b) 2^-53, far below 1e-6 for d, b <= 2^26) and of its own
// arithmetic.
const gridMargin = 1e-6

// GridStep returns the grid step for a release of L2 sensitivity sens in
// dimension d: the largest power of two at most sens / (GridFactor
// sqrt(d)). It is an error if the step would not be a normal float64 (or
// sens is not finite and positive).
func GridStep(sens float64, d int) (float64, error) {
	if !(sens > 0) || math.IsInf(sens, 0) || d < 1 {
		return 0, fmt.Errorf("mechanism: grid for sensitivity %v, dimension %d", sens, d)
	}
	target := sens / (GridFactor * math.Sqrt(float64(d)))
	_, exp := math.Frexp(target) // target = f 2^exp with f in [0.5, 1)
	step := math.Ldexp(1, exp-1)
	if step < 0x1p-1000 || step > 0x1p1000 || math.IsInf(sens/step, 0) {
		return 0, fmt.Errorf("mechanism: grid step %g for sensitivity %g is outside the exact float64 range", step, sens)
	}
	return step, nil
}

// GridSensitivity is an upper bound on the L2 sensitivity, in grid units,
// of ToGrid(v, step) when v has L2 sensitivity sens in dimension d:
// (sens/step + sqrt(d)) (1 + 1e-6).
func GridSensitivity(sens, step float64, d int) float64 {
	return (sens/step + math.Sqrt(float64(d))) * (1 + gridMargin)
}

// DiscreteSigma returns the integer sigma (grid units) of the discrete
// Gaussian that replaces a continuous Gaussian of standard deviation
// sigma for a release of sensitivity sens on the grid step: the smallest
// integer >= sigma/sens * GridSensitivity(sens, step, d). The zCDP of the
// discrete release, GridSensitivity^2 / (2 result^2), is then at most
// sens^2 / (2 sigma^2), the continuous charge. It is an error if the
// result exceeds MaxDiscreteSigma.
func DiscreteSigma(sigma, sens, step float64, d int) (int64, error) {
	if !(sigma > 0) || !(sens > 0) || !(step > 0) || math.IsInf(sigma, 0) {
		return 0, fmt.Errorf("mechanism: discrete sigma for sigma %v, sensitivity %v, step %v", sigma, sens, step)
	}
	// The margin of GridSensitivity also absorbs the rounding of this
	// product (a few ulps).
	x := math.Ceil(sigma / sens * GridSensitivity(sens, step, d))
	if !(x <= MaxDiscreteSigma) {
		return 0, fmt.Errorf("mechanism: discrete noise sigma %g grid units exceeds %d (the exact sampler's range)", x, MaxDiscreteSigma)
	}
	if x < 1 {
		x = 1
	}
	return int64(x), nil
}

// ToGrid writes round(v[i]/step) (nearest, ties to even) into dst. It
// fails if a value is not finite or |v[i]/step| >= 2^52.
func ToGrid(dst []int64, v []float64, step float64) error {
	if len(dst) != len(v) {
		return fmt.Errorf("mechanism: grid buffer length %d, vector %d", len(dst), len(v))
	}
	for i, x := range v {
		y := x / step
		if !(math.Abs(y) < maxGridValue) {
			return fmt.Errorf("mechanism: value %g at index %d is not representable on the grid of step %g", x, i, step)
		}
		dst[i] = int64(math.RoundToEven(y))
	}
	return nil
}

// FromGrid writes step * k[i] into dst (exact while |k[i]| < 2^53 and the
// product is a normal float64; otherwise the nearest float64, still a
// deterministic function of k).
func FromGrid(dst []float64, k []int64, step float64) {
	for i, x := range k {
		dst[i] = step * float64(x)
	}
}

// uintn returns a uniform integer in [0, n), n > 0 (Lemire's method with
// rejection: exactly uniform). Ranges below 2^32 use 32 keystream bits.
func (s *Stream) uintn(n uint64) uint64 {
	if n <= 1<<32 {
		if n == 1<<32 {
			return uint64(s.uint32())
		}
		n32 := uint32(n)
		m := uint64(s.uint32()) * uint64(n32)
		if uint32(m) < n32 {
			thresh := -n32 % n32
			for uint32(m) < thresh {
				m = uint64(s.uint32()) * uint64(n32)
			}
		}
		return m >> 32
	}
	hi, lo := bits.Mul64(s.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(s.Uint64(), n)
		}
	}
	return hi
}

// bit returns one keystream bit. s.bits holds the unused bits of a
// keystream word above a sentinel 1 (63 bits per word); s.bits <= 1 means
// empty.
func (s *Stream) bit() uint64 {
	if s.bits <= 1 {
		s.refillBits()
	}
	b := s.bits & 1
	s.bits >>= 1
	return b
}

//go:noinline
func (s *Stream) refillBits() { s.bits = s.Uint64()>>1 | 1<<63 }

// bernRatio returns true with probability num/den, for 0 <= num and
// 0 < den < 2^63. It compares the bits of a uniform real U in [0, 1),
// drawn one at a time, with the binary expansion of num/den computed by
// long division, and stops at the first difference (U < num/den exactly
// when that bit of num/den is 1): exact, and two random bits on average.
func (s *Stream) bernRatio(num, den uint64) bool {
	if num >= den {
		return true
	}
	rem := num
	for rem != 0 {
		rem <<= 1
		var p uint64
		if rem >= den {
			p, rem = 1, rem-den
		}
		if s.bit() != p {
			return p == 1
		}
	}
	// num/den's expansion ended and U's bits equal it so far: U >= num/den.
	return false
}

// bernRatio128 is bernRatio for 128-bit num and den (hi, lo) with
// den < 2^127.
func (s *Stream) bernRatio128(nHi, nLo, dHi, dLo uint64) bool {
	if !less128(nHi, nLo, dHi, dLo) {
		return true
	}
	for nHi|nLo != 0 {
		nHi, nLo = nHi<<1|nLo>>63, nLo<<1
		var p uint64
		if !less128(nHi, nLo, dHi, dLo) {
			var borrow uint64
			nLo, borrow = bits.Sub64(nLo, dLo, 0)
			nHi, _ = bits.Sub64(nHi, dHi, borrow)
			p = 1
		}
		if s.bit() != p {
			return p == 1
		}
	}
	return false
}

func less128(aHi, aLo, bHi, bLo uint64) bool {
	return aHi < bHi || (aHi == bHi && aLo < bLo)
}

// bernExpRatio returns true with probability exp(-num/den) for
// 0 <= num <= den, 0 < den < 2^63 (CKS Algorithm 1 for gamma in [0, 1]:
// the parity of the first K with Bernoulli(gamma/K) = 0, where
// Bernoulli(gamma/K) = Bernoulli(num/den) AND Bernoulli(1/K), independent).
func (s *Stream) bernExpRatio(num, den uint64) bool {
	if num == 0 {
		return true
	}
	k := uint64(1)
	for s.bernRatio(num, den) && (k == 1 || s.bernRatio(1, k)) {
		k++
	}
	return k%2 == 1
}

// bernExpSq returns true with probability exp(-r^2 / (2 q^2)) for
// 0 <= r < q < 2^62 (CKS Algorithm 1 with gamma = r^2/(2q^2) <= 1/2,
// exact in 128-bit integers).
func (s *Stream) bernExpSq(r, q uint64) bool {
	if r == 0 {
		return true
	}
	nHi, nLo := bits.Mul64(r, r)
	dHi, dLo := bits.Mul64(q, q)
	dHi, dLo = dHi<<1|dLo>>63, dLo<<1
	k := uint64(1)
	for s.bernRatio128(nHi, nLo, dHi, dLo) && (k == 1 || s.bernRatio(1, k)) {
		k++
	}
	return k%2 == 1
}

// maxGeometric bounds the geometric part of a discrete Laplace proposal;
// a proposal beyond it (probability below exp(-2^30)) is rejected and
// redrawn, which keeps every value below 2^61. This is the only departure
// from the exact distribution: a total-variation distance below
// exp(-2^30).
const maxGeometric = 1 << 30

// discreteLaplace returns a draw of the discrete Laplace distribution
// with scale t (P[Y = y] proportional to exp(-|y|/t)), 2 <= t <= 2^30 + 1,
// by CKS Algorithm 2 with s = 1.
func (s *Stream) discreteLaplace(t uint64) int64 {
	for {
		u := s.uintn(t)
		if !s.bernExpRatio(u, t) {
			continue
		}
		v := uint64(0)
		for s.bernExpRatio(1, 1) {
			v++
			if v > maxGeometric {
				break
			}
		}
		if v > maxGeometric {
			continue
		}
		x := int64(u + t*v)
		neg := s.bit() == 1
		if neg && x == 0 {
			continue
		}
		if neg {
			return -x
		}
		return x
	}
}

// DiscreteGaussian returns one draw of the discrete Gaussian N_Z(0,
// sigma^2): P[Z = z] proportional to exp(-z^2 / (2 sigma^2)) over the
// integers, for an integer 1 <= sigma <= MaxDiscreteSigma (it panics
// otherwise). CKS Algorithm 3 with t = sigma + 1: a discrete Laplace
// proposal Y of scale t is accepted with probability
// exp(-(t|Y| - sigma^2)^2 / (2 q^2)), q = sigma t. Writing
// N = |t|Y| - sigma^2| = a q + r (0 <= r < q), the exponent is
// a^2/2 + a r/q + r^2/(2 q^2), and the acceptance is the AND of
// independent Bernoulli draws of exp(-1/2) (a^2 of them), exp(-r/q)
// (a of them) and exp(-r^2/(2q^2)), each exact by CKS Algorithm 1.
func (s *Stream) DiscreteGaussian(sigma int64) int64 {
	if sigma < 1 || sigma > MaxDiscreteSigma {
		panic(fmt.Sprintf("mechanism: discrete Gaussian sigma %d outside [1, %d]", sigma, MaxDiscreteSigma))
	}
	sg := uint64(sigma)
	t := sg + 1
	q := sg * t
	s2 := sg * sg
	for {
		y := s.discreteLaplace(t)
		ay := uint64(y)
		if y < 0 {
			ay = uint64(-y)
		}
		// N = |t |Y| - sigma^2| in 128 bits (t |Y| < 2^92).
		hi, lo := bits.Mul64(t, ay)
		var nHi, nLo uint64
		if hi > 0 || lo >= s2 {
			var borrow uint64
			nLo, borrow = bits.Sub64(lo, s2, 0)
			nHi = hi - borrow
		} else {
			nLo = s2 - lo
		}
		// |Y| = u + t v <= t (2^30 + 1), so t |Y| < t^2 2^31 and
		// nHi < t^2 2^-33 < q = sigma t: the quotient fits 64 bits.
		a, r := bits.Div64(nHi, nLo, q)
		if !s.bernExpSquares(a) {
			continue
		}
		ok := true
		for i := uint64(0); i < a && ok; i++ {
			ok = s.bernExpRatio(r, q)
		}
		if !ok || !s.bernExpSq(r, q) {
			continue
		}
		return y
	}
}

// bernExpSquares returns true with probability exp(-a^2/2): a^2
// independent Bernoulli(exp(-1/2)) draws, stopping at the first failure.
func (s *Stream) bernExpSquares(a uint64) bool {
	for i := uint64(0); i < a; i++ {
		for j := uint64(0); j < a; j++ {
			if !s.bernExpRatio(1, 2) {
				return false
			}
		}
	}
	return true
}

// FillDiscreteGaussian sets dst[i] to independent N_Z(0, sigma^2) draws.
func (s *Stream) FillDiscreteGaussian(dst []int64, sigma int64) {
	for i := range dst {
		dst[i] = s.DiscreteGaussian(sigma)
	}
}

// DiscreteNoiseVector writes the discrete Gaussian vector N_Z(0, sigma^2)^d
// determined by seed into dst, from a fresh stream of PurposeNoise: the
// single definition of "the discrete noise of a seed", used both when
// drawing and when regenerating.
func DiscreteNoiseVector(dst []int64, seed Seed, sigma int64, scratch *Stream) {
	if scratch == nil {
		scratch = NewStream(seed, PurposeNoise)
	} else {
		scratch.Reset(seed, PurposeNoise)
	}
	scratch.FillDiscreteGaussian(dst, sigma)
}

// PostProcessing returns nil when c is one of this package's compressors,
// each of which computes its payload from its input vector and the
// stream it is given only: applied to a released vector with independent
// randomness, its output is post-processing and costs no privacy. Any
// other implementation is not known to be, and a device of an untrusted
// session refuses it.
func PostProcessing(c Compressor) error {
	switch c.(type) {
	case Dense32, Dense64, RandK, TopK, Quant:
		return nil
	}
	return fmt.Errorf("mechanism: compressor %T is not known to be a post-processing of its input", c)
}
