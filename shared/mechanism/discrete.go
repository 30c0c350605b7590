package mechanism

import (
	"fmt"
	"math"
	"math/big"
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
// The sampler is Karney's exact algorithm for the discrete normal
// (Karney 2016, "Sampling exactly from the normal distribution", ACM TOMS
// 42(1)), specialised to an integer sigma, with every Bernoulli(exp(-x))
// drawn by CKS 2020 Algorithm 1 from exact integer ratios or by comparing
// random bits with an exactly computed binary expansion: no floating-point
// number enters any probability. A second exact sampler, CKS 2020
// Algorithm 3, is kept in the tests as a reference. All arithmetic is in
// 64-bit integers; MaxDiscreteSigma keeps every intermediate value in
// range. Randomness comes from a Stream, so a vector is a deterministic
// function of its 32-byte seed and regenerates bit for bit on every
// platform.

// GridFactor is c in the grid step g = 2^floor(log2(Delta / (c sqrt d))):
// the rounding slack sqrt(d) is then between Delta/(2 c g) and Delta/(c g)
// (a power of two is within a factor 2 of the target), so calibrating to
// the inflated sensitivity raises the noise by a factor between
// 1 + 1/(2c) and 1 + 1/c (plus the 1e-6 margin and the rounding of sigma up
// to an integer).
const GridFactor = 1000

// MaxDiscreteSigma is the largest sigma (in grid units) DiscreteGaussian
// accepts: with sigma <= 2^30, the acceptance ratio's denominator
// 2 sigma^2 <= 2^61 and the outputs k sigma + j (k <= 2^30) stay below 2^61.
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

// take returns n keystream bits, 0 <= n <= 32 (the unused bits of the
// buffered word are dropped when fewer than n remain).
func (s *Stream) take(n uint) uint64 {
	if s.bits>>n == 0 {
		s.refillBits()
	}
	b := s.bits
	s.bits = b >> n
	return b &^ (^uint64(0) << n)
}

// below returns a uniform integer in [0, n), 1 <= n <= 2^32, from the bit
// buffer: L = bits.Len(n-1) bits at a time, rejected while >= n (exactly
// uniform; fewer than two tries on average).
func (s *Stream) below(n uint64) uint64 {
	l := uint(bits.Len64(n - 1))
	for {
		if v := s.take(l); v < n {
			return v
		}
	}
}

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

// expTable[m] is floor(exp(-m/2) 2^64) for 1 <= m <= expTableMax (the
// tests recompute every entry exactly with expNegFloor).
const expTableMax = 64

var expTable = [expTableMax + 1]uint64{0,
	0x9b4597e37cb04ff3, 0x5e2d58d8b3bcdf1a, 0x391f0ee496b83ac8, 0x22a555477f03973f,
	0x150385c094f424a7, 0x0cbed86667585764, 0x07bb0406393fd97d, 0x04b0556e084f3d1d,
	0x02d80a08d2b882e7, 0x01b993fe00d53761, 0x010bd4a5aca77287, 0x00a2728f889ea6ae,
	0x006287862a553fe9, 0x003bc2d73849531d, 0x00243f37481e63a9, 0x0015fc21041027ac,
	0x000d55a1fd9ca050, 0x0008167912932a2c, 0x0004e7ce295263f8, 0x0002f9af36ac8f93,
	0x0001cdfc263f6a0b, 0x000118354238f676, 0x0000a9f46bb3c058, 0x0000671530ed0ef2,
	0x00003e85da7ed1cd, 0x000025ec0a77303b, 0x000017003974e945, 0x00000df3637ed80b,
	0x00000876281e934b, 0x00000521d72889fb, 0x0000031ce2700ee2, 0x000001e355bbaee8,
	0x00000125284d838e, 0x000000b1cf18bad3, 0x0000006bd8ba49f1, 0x00000041698a31a6,
	0x00000027acaeedb0, 0x000000181056ff2c, 0x0000000e986f5af8, 0x00000008da432af9,
	0x000000055e8ebfbb, 0x0000000341b61a1b, 0x00000001f9abe68b, 0x0000000132b48bf1,
	0x00000000ba06b15d, 0x0000000070d49f90, 0x00000000446f68dd, 0x0000000029820f1f,
	0x00000000192d07d6, 0x000000000f451bd2, 0x000000000942fe88, 0x00000000059e14a9,
	0x0000000003683d73, 0x0000000002110a53, 0x000000000140e111, 0x0000000000c29f80,
	0x0000000000760b7b, 0x000000000047990a, 0x00000000002b6d20, 0x00000000001a56e0,
	0x00000000000ff9c3, 0x000000000009b090, 0x000000000005e08a, 0x000000000003908c,
}

// kByPrefix[p] is the number of m >= 1 whose table entry's first 8 bits
// exceed p: for a uniform U whose first 8 bits are p, U < exp(-m/2) for
// exactly those m unless p ties with the next entry's first 8 bits.
var kByPrefix = func() (t [256]uint8) {
	for p := range t {
		k := 0
		for k < expTableMax && expTable[k+1]>>56 > uint64(p) {
			k++
		}
		t[p] = uint8(k)
	}
	return t
}()

// lessExp reports whether the uniform real U in [0, 1) whose first 64
// bits are u is below exp(-m/2), 1 <= m <= expTableMax. Only when u equals
// the table entry (probability 2^-64) are U's further bits drawn and
// compared with the exact bits of exp(-m/2).
func (s *Stream) lessExp(u uint64, m int) bool {
	c := expTable[m]
	if u != c {
		return u < c
	}
	for n := 65; ; n++ {
		p := uint64(expNegFloor(int64(m), 2, n).Bit(0))
		if s.bit() != p {
			return p == 1
		}
	}
}

// bernExpHalves returns true with probability exp(-m/2) for m >= 0.
func (s *Stream) bernExpHalves(m uint64) bool {
	for m > expTableMax {
		if !s.uniformLessExp(expTableMax) {
			return false
		}
		m -= expTableMax
	}
	return m == 0 || s.uniformLessExp(int(m))
}

// uniformLessExp draws a uniform U and reports whether U < exp(-m/2),
// reading U's bits lazily: 8 first, the next 56 only when they tie with
// the table entry.
func (s *Stream) uniformLessExp(m int) bool {
	c := expTable[m]
	u := s.take(8)
	if u != c>>56 {
		return u < c>>56
	}
	return s.lessExp(u<<56|s.take(28)<<28|s.take(28), m)
}

// expNegFloor returns floor(exp(-a/b) 2^n) for a, b > 0, exactly: the
// partial sums of the alternating series sum_k (-a/b)^k / k! bracket the
// limit once the terms decrease (k > a/b), and the result is returned when
// two consecutive such partial sums agree on it (the limit is irrational,
// so they eventually do).
func expNegFloor(a, b int64, n int) *big.Int {
	x := big.NewRat(-a, b)
	scale := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(n)))
	floor := func(r *big.Rat) *big.Int {
		v := new(big.Rat).Mul(r, scale)
		return new(big.Int).Div(v.Num(), v.Denom()) // Euclidean: floor, as Denom > 0
	}
	sum := big.NewRat(1, 1)
	term := big.NewRat(1, 1)
	var prev *big.Int
	for k := int64(1); ; k++ {
		term.Mul(term, x)
		term.Quo(term, big.NewRat(k, 1))
		sum.Add(sum, term)
		if k*b <= a { // terms not yet decreasing: no bracket
			continue
		}
		cur := floor(sum)
		if prev != nil && cur.Cmp(prev) == 0 {
			return cur
		}
		prev = cur
	}
}

// maxK bounds k in DiscreteGaussian; a proposal beyond it (probability
// below exp(-2^29)) is redrawn.
const maxK = 1 << 30

// DiscreteGaussian returns one draw of the discrete Gaussian N_Z(0,
// sigma^2): P[Z = z] proportional to exp(-z^2 / (2 sigma^2)) over the
// integers, for an integer 1 <= sigma <= MaxDiscreteSigma (it panics
// otherwise).
//
// It is Karney's Algorithm D (C. F. F. Karney, "Sampling exactly from the
// normal distribution", ACM TOMS 42(1), 2016, Section 6) for an integer
// sigma and mean 0, with every Bernoulli exact:
//
//  1. k >= 0 with P[k] proportional to exp(-k^2/2): a proposal with
//     P[k >= m] = exp(-m/2) (one uniform compared with exp(-m/2), m = 1,
//     2, ...), accepted with probability exp(-k(k-1)/2);
//  2. j uniform in [0, sigma) and a sign; -0 is rejected;
//  3. accepted with probability exp(-(2 k sigma j + j^2) / (2 sigma^2))
//     (CKS 2020 Algorithm 1 from exact integer ratios; acceptKJ);
//  4. the output is +-(k sigma + j).
//
// Each comparison with a constant exp(-m/2) reads 64 bits of a uniform
// against a table of its first 64 bits (checked exactly by the tests),
// and falls back to
// exact further bits on a tie (lessExp), so nothing is approximated.
// The product of the three weights is exp(-(k sigma + j)^2 / (2 sigma^2)),
// and every integer has exactly one representation +-(k sigma + j), so the
// output has the discrete Gaussian pmf. The expected number of rounds is
// about 1.4. Compared with CKS 2020 Algorithm 3 (discrete Laplace
// proposals, kept in the tests as a reference), it needs fewer Bernoulli
// trials per draw; both are exact.
func (s *Stream) DiscreteGaussian(sigma int64) int64 {
	if sigma < 1 || sigma > MaxDiscreteSigma {
		panic(fmt.Sprintf("mechanism: discrete Gaussian sigma %d outside [1, %d]", sigma, MaxDiscreteSigma))
	}
	sg := uint64(sigma)
	den := 2 * sg * sg // < 2^61
	for {
		// k = #{m >= 1 : U < exp(-m/2)} for one uniform U: P[k >= m] =
		// exp(-m/2); beyond the table, independent Bernoulli(exp(-1/2)).
		// U's bits are drawn lazily: the first 8 decide k through
		// kByPrefix unless they tie with a table entry's first 8 bits;
		// then the next 56 are drawn and the comparisons go on exactly.
		u8 := s.take(8)
		k := uint64(kByPrefix[u8])
		if k < expTableMax && u8 == expTable[k+1]>>56 {
			u := u8<<56 | s.take(28)<<28 | s.take(28)
			for k < expTableMax && s.lessExp(u, int(k)+1) {
				k++
			}
		}
		if k == expTableMax {
			for k <= maxK && s.bernExpHalves(1) {
				k++
			}
			if k > maxK {
				continue
			}
		}
		if k >= 2 && !s.bernExpHalves(k*(k-1)) {
			continue
		}
		j := s.below(sg)
		neg := s.bit() == 1
		if neg && k == 0 && j == 0 {
			continue
		}
		if !s.acceptKJ(k, j, sg, den) {
			continue
		}
		z := int64(k*sg + j)
		if neg {
			return -z
		}
		return z
	}
}

// acceptKJ returns true with probability exp(-(2 k sigma j + j^2) /
// (2 sigma^2)) for j < sigma <= 2^30, den = 2 sigma^2. The exponent is
// A + (2 sigma r + j^2) / (2 sigma^2) with k j = A sigma + r, 0 <= r <
// sigma; the second term is below 3/2. Its integer part costs one
// Bernoulli(exp(-1)) each (CKS Algorithm 1), the rest one Bernoulli(exp(-f))
// with f in [0, 1). All products stay below 2^62.
func (s *Stream) acceptKJ(k, j, sg, den uint64) bool {
	if k == 0 { // the common case: exp(-j^2 / (2 sigma^2)), below 1/2
		return s.bernExpRatio(j*j, den)
	}
	a := k * j // <= 2^60
	whole, r := a/sg, a%sg
	f := 2*sg*r + j*j // < 3 sigma^2 < 2^62
	if f >= den {
		whole++
		f -= den
	}
	for ; whole > 0; whole-- {
		if !s.uniformLessExp(2) { // exp(-1) = exp(-2/2)
			return false
		}
	}
	return s.bernExpRatio(f, den)
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
