package mechanism

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"testing"
)

// A second exact sampler, kept as a reference for the tests: Canonne,
// Kamath and Steinke (2020), Algorithm 3 (discrete Laplace proposals,
// Algorithm 2), with 128-bit integer arithmetic for the acceptance test.
// The product uses Karney's algorithm (DiscreteGaussian), which needs fewer
// random bits per draw; both must match the exact pmf.

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
func (s *Stream) discreteGaussianCKS(sigma int64) int64 {
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

func TestReferenceSamplerPMF(t *testing.T) {
	// The CKS reference against the exact pmf (same test and false-failure
	// rate as TestDiscreteGaussianPMF), and its discrete Laplace proposal.
	for _, sigma := range []int64{1, 3} {
		s := NewStream(seedOf(byte(80+sigma)), PurposeNoise)
		const n = 200000
		counts := map[int]int{}
		for i := 0; i < n; i++ {
			counts[int(s.discreteGaussianCKS(sigma))]++
		}
		zmax := int(3 * sigma)
		chi, df := chiSquare(counts, n, dgPMF(float64(sigma), zmax), zmax)
		if lim := chiSquareQuantile(df, 4.75); chi > lim {
			t.Errorf("CKS sigma %d: chi^2 = %.1f with %d df, above %.1f", sigma, chi, df, lim)
		}
	}
	for _, tt := range []uint64{2, 5} {
		s := NewStream(seedOf(byte(60+tt)), PurposeNoise)
		const n = 200000
		counts := map[int]int{}
		for i := 0; i < n; i++ {
			counts[int(s.discreteLaplace(tt))]++
		}
		norm := (1 + math.Exp(-1/float64(tt))) / (1 - math.Exp(-1/float64(tt)))
		zmax := int(3 * tt)
		p := map[int]float64{}
		for z := -zmax; z <= zmax; z++ {
			p[z] = math.Exp(-math.Abs(float64(z))/float64(tt)) / norm
		}
		chi, df := chiSquare(counts, n, p, zmax)
		if lim := chiSquareQuantile(df, 4.75); chi > lim {
			t.Errorf("discrete Laplace t %d: chi^2 = %.1f with %d df, above %.1f", tt, chi, df, lim)
		}
	}
}

func TestExpTable(t *testing.T) {
	// Every entry recomputed exactly (expNegFloor: bracketing partial sums
	// of the exponential series in rationals), the first two also against
	// an independent computation (Python fractions), all against float64
	// exp to 1e-15 relative.
	if expTable[1] != 0x9b4597e37cb04ff3 || expTable[2] != 0x5e2d58d8b3bcdf1a {
		t.Fatalf("expTable[1], [2] = %#x, %#x", expTable[1], expTable[2])
	}
	for m := 1; m <= expTableMax; m++ {
		want := math.Ldexp(math.Exp(-float64(m)/2), 64)
		if got := float64(expTable[m]); math.Abs(got-want) > 1e-15*want+1 {
			t.Errorf("expTable[%d] = %v, exp(-m/2) 2^64 = %v", m, got, want)
		}
		if exact := expNegFloor(int64(m), 2, 64); !exact.IsUint64() || exact.Uint64() != expTable[m] {
			t.Errorf("expTable[%d] = %#x, exactly %#x", m, expTable[m], exact)
		}
		hi := expNegFloor(int64(m), 2, 80)
		if new(big.Int).Rsh(hi, 16).Uint64() != expTable[m] {
			t.Errorf("m %d: bits beyond 64 inconsistent with the table", m)
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
