package mechanism

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"

	"browserfl/shared/privacy"
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
//     DiscreteSigma also makes the release's exact Gaussian-DP cost,
//     through the coupling with a rounded continuous Gaussian
//     (privacy.LedgerDelta), at most that charge.
//  4. What leaves the device is g * (integer vector), and every byte of the
//     payload is a deterministic function of that integer vector and of
//     independent compressor randomness: post-processing.
//
// The sampler is Karney's exact algorithm for the discrete normal
// (Karney 2016, "Sampling exactly from the normal distribution", ACM TOMS
// 42(1)), specialised to an integer sigma, with every Bernoulli(exp(-x))
// drawn by comparing random bits with exact bounds on, or the exactly
// computed binary expansion of, exp(-x) (or, in rare branches, by CKS 2020
// Algorithm 1 from exact integer ratios): no floating-point number enters
// any probability. A second exact sampler, CKS 2020
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
// integer sigma_Z >= privacy.MinDiscreteSigma with
// sigma_Z^2 - 1/12 >= x^2, x = sigma/sens * GridSensitivity(sens, step, d).
// With Delta_Z = GridSensitivity, the release then costs at most the
// continuous charge rho_n = sens^2 / (2 sigma^2) in both accountants the
// ledger is read with:
//
//   - zCDP (CKS 2020, Theorem 14): Delta_Z^2 / (2 sigma_Z^2) <= rho_n;
//   - exact Gaussian DP through the rounded-Gaussian coupling
//     (privacy.LedgerDelta): mu = Delta_Z / sqrt(sigma_Z^2 - 1/12) with
//     mu^2 <= 2 rho_n, and a total-variation term
//     d privacy.RoundedGaussianTV(sigma_Z) <= privacy.DiscretisationSlack rho_n,
//     which is checked here (it holds for every grid GridStep returns).
//
// It is an error if the result exceeds MaxDiscreteSigma or the last
// inequality fails.
func DiscreteSigma(sigma, sens, step float64, d int) (int64, error) {
	if !(sigma > 0) || !(sens > 0) || !(step > 0) || math.IsInf(sigma, 0) || d < 1 {
		return 0, fmt.Errorf("mechanism: discrete sigma for sigma %v, sensitivity %v, step %v, dimension %d", sigma, sens, step, d)
	}
	// The margin of GridSensitivity also absorbs the rounding of this
	// product and of the squares below (a few ulps; 1/12 is far larger).
	x := sigma / sens * GridSensitivity(sens, step, d)
	c := math.Max(math.Ceil(x), privacy.MinDiscreteSigma)
	for c*c-1.0/12 < x*x {
		c++
	}
	if !(c <= MaxDiscreteSigma) {
		return 0, fmt.Errorf("mechanism: discrete noise sigma %g grid units exceeds %d (the exact sampler's range)", c, MaxDiscreteSigma)
	}
	rho := sens * sens / (2 * sigma * sigma)
	if tv := float64(d) * privacy.RoundedGaussianTV(c); !(tv <= privacy.DiscretisationSlack*rho) {
		return 0, fmt.Errorf("mechanism: discrete noise sigma %g grid units: discretisation term %g exceeds %g times the release's rho %g", c, tv, privacy.DiscretisationSlack, rho)
	}
	return int64(c), nil
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

// refillBits refills the bit buffer with a new word and returns it.
//
//go:noinline
func (s *Stream) refillBits() uint64 {
	var w uint64
	if s.ln == 0 {
		w = s.c.Uint64() // Uint64's common case, one call fewer
	} else {
		w = s.uint64Split()
	}
	s.bits = w>>1 | 1<<63
	return s.bits
}

// take returns n keystream bits, 0 <= n <= 32 (the unused bits of the
// buffered word are dropped when fewer than n remain).
func (s *Stream) take(n uint) uint64 {
	n &= 63 // n <= 32: the mask only tells the compiler the shifts need no overflow check
	b := s.bits
	if b>>n == 0 {
		b = s.refillBits()
	}
	s.bits = b >> n
	return b & (1<<n - 1)
}

// take8 is take(8), small enough to be inlined where it is hot.
func (s *Stream) take8() uint64 {
	if s.bits < 1<<8 { // fewer than 8 bits above the sentinel
		s.refillBits()
	}
	b := s.bits
	s.bits = b >> 8
	return b & 0xff
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
	u := s.take8()
	if u != c>>56 {
		return u < c>>56
	}
	return s.lessExp(u<<56|s.take(28)<<28|s.take(28), m)
}

// expNegFloor returns floor(exp(-a/b) 2^n) for a, b > 0, exactly (see
// expNegFloorBig).
func expNegFloor(a, b int64, n int) *big.Int {
	return expNegFloorBig(big.NewInt(a), big.NewInt(b), n)
}

// expNegFloorBig returns floor(exp(-a/b) 2^n) for a, b > 0, exactly: the
// partial sums of the alternating series sum_k (-a/b)^k / k! bracket the
// limit once the terms decrease (k > a/b), and the result is returned when
// two consecutive such partial sums agree on it (the limit is irrational,
// so they eventually do).
func expNegFloorBig(a, b *big.Int, n int) *big.Int {
	x := new(big.Rat).SetFrac(new(big.Int).Neg(a), b)
	scale := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(n)))
	floor := func(r *big.Rat) *big.Int {
		v := new(big.Rat).Mul(r, scale)
		return new(big.Int).Div(v.Num(), v.Denom()) // Euclidean: floor, as Denom > 0
	}
	sum := big.NewRat(1, 1)
	term := big.NewRat(1, 1)
	kb := new(big.Int)
	var prev *big.Int
	for k := int64(1); ; k++ {
		term.Mul(term, x)
		term.Quo(term, big.NewRat(k, 1))
		sum.Add(sum, term)
		if kb.Mul(big.NewInt(k), b).Cmp(a) <= 0 { // terms not yet decreasing: no bracket
			continue
		}
		cur := floor(sum)
		if prev != nil && cur.Cmp(prev) == 0 {
			return cur
		}
		prev = cur
	}
}

// expFrac[i] is floor(exp(-i/256) 2^64) for 1 <= i <= 255 (the tests
// recompute every entry exactly with expNegFloor).
var expFrac = [256]uint64{0,
	0xff007fd55ffdde38, 0xfe01feab551127cb, 0xfd047b835dfa9c5d, 0xfc07f55ff77d2493,
	0xfb0c6b449b604ec2, 0xfa11dc35bf73c89e, 0xf9184738d493d4fa, 0xf81fab5445aebc8a,
	0xf728078f76cb38c0, 0xf6315af2c40fd7bd, 0xf53ba48780cb5863, 0xf446e357f67dfd8e,
	0xf353166f63e3d781, 0xf2603cd9fc00028e, 0xf16e55a4e528da04, 0xf07d5fde38151e72,
	0xef8d5a94feea0e48, 0xee9e44d9344a6fea, 0xedb01dbbc2668c3c, 0xecc2e44e820d18c3,
	0xebd697a439bd105c, 0xeaeb36d09cb879a6, 0xea00c0e84a181a37, 0xe9173500cbe0159a,
	0xe82e923096157743, 0xe746d78f05d4a680, 0xe66004346068c381, 0xe57a1739d263ec94,
	0xe4950fb96eb86a9d, 0xe3b0ecce2dd2c3fc, 0xe2cdad93ecb4b4e0, 0xe1eb51276c110c3c,
	0xe109d6a64f686c62, 0xe0293d2f1c26ee74, 0xdf4983e138c2a7bb, 0xde6aa9dcebdb100b,
	0xdd8cae435b594851, 0xdcaf90368b91406a, 0xdbd34ed95e63bb60, 0xdaf7e94f9261313d,
	0xda1d5ebdc1ed8d88, 0xd943ae496264c997, 0xd86ad718c34061d6, 0xd792d8530d3da531,
	0xd6bbb1204184ddbf, 0xd5e560a938d151d8, 0xd50fe617a29a1cbe, 0xd43b4096043bde02,
	0xd3676f4fb8233ed1, 0xd2947170ecf84c4a, 0xd1c24626a4caa61a, 0xd0f0ec9eb43e8078,
	0xd0206407c1ba78b7, 0xcf50ab9144963b9a, 0xce81c26b8449fc9d, 0xcdb3a7c7979ebd5c,
	0xcce65ad763df6447, 0xcc19dacd9c0aa1df, 0xcb4e26ddc005a3a5, 0xca833e3c1bcf93e9,
	0xc9b9201dc6b5e5bb, 0xc8efcbb8a2896c2b, 0xc82740435ad43c03, 0xc75f7cf564105743,
	0xc6988106fadf218a, 0xc5d24bb123419caa, 0xc50cdc2da7d16c91, 0xc44831b718faa1d9,
	0xc3844b88cc364a22, 0xc2c128dedb45c577, 0xc1fec8f6236ee004, 0xc13d2b0c44b8af4a,
	0xc07c4e5fa1293212, 0xbfbc322f5c03b26a, 0xbefcd5bb5907e8d2, 0xbe3e38443bb1dfef,
	0xbd80590b667a97f5, 0xbcc33752fa196913, 0xbc06d25dd4c62417, 0xbb4b296f917bf09a,
	0xba903bcc873ce7e7, 0xb9d608b9c8566bf1, 0xb91c8f7d21a63990, 0xb863cf5d19e0354e,
	0xb7abc7a0f0d4f20c, 0xb6f477909eb8f0c5, 0xb63dde74d36c98b0, 0xb587fb96f5c4e712,
	0xb4d2ce4122d4d607, 0xb41e55be2d377982, 0xb36a91599c5ad1d9, 0xb2b7805fabcb5327,
	0xb205221d4a8020c8, 0xb15375e01a27fc3f, 0xb0a27af66e76e6da, 0xaff230af4c747553,
	0xaf42965a69cad4cd, 0xae93ab482c16806a, 0xade56ec9a836a6e1, 0xad37e030a19e3f45,
	0xac8afecf89a5cc71, 0xabdec9f97eddce4f, 0xab3341024c61e05a, 0xaa88633e692c84ab,
	0xa9de3002f76b9ae7, 0xa934a6a5c3d5825e, 0xa88bc67d44fee6b0, 0xa7e38ee09ab13658,
	0xa73bff278d41c266, 0xa69516aa8ce986c6, 0xa5eed4c2b11d9a6a, 0xa54938c9b7e846b1,
	0xa4a4421a0542c566, 0xa3fff00ea26fa4ab, 0xa35c42033d55d02b, 0xa2b9375427dc3ef5,
	0xa216cf5e57464557, 0xa175097f63908a0e, 0xa0d3e51586ce9e3f, 0xa033617f9c893772,
	0x9f937e1d211d0b16, 0x9ef43a4e311a4acb, 0x9e55957388a4c0e6, 0x9db78eee82d48c8c,
	0x9d1a262119177cb5, 0x9c7d5a6de2930992, 0x9be12b381386eba5, 0x9b4597e37cb04ff3,
	0x9aaa9fd48aada8b3, 0x9a104270456319e0, 0x99767f1c4f5f8112, 0x98dd553ee54217fd,
	0x9844c43edd20b107, 0x97accb83a5ee8d4e, 0x97156a7546e3cb8f, 0x967ea07c5ee56f55,
	0x95e86d0223edffca, 0x9552cf706276bdae, 0x94bdc7317ce16fbb, 0x942953b06ae2c503,
	0x93957458b8ed4c91, 0x93022896879d01d1, 0x926f6fd68b236d23, 0x91dd49860ab457fe,
	0x914bb512dff31415, 0x90bab1eb766054f3, 0x902a3f7ecac89b6b, 0x8f9a5d3c6ab3325d,
	0x8f0b0a9473d1bc2e, 0x8e7c46f79370506d, 0x8dee11d705e62917, 0x8d606aa49606dedd,
	0x8cd350d29c9433f2, 0x8c46c3d3ffb06cbb, 0x8bbac31c325135ea, 0x8b2f4e1f33b31766,
	0x8aa464518ecd737a, 0x8a1a052859c711c5, 0x89903019356b3552, 0x8906e49a4c9f3d59,
	0x887e222253d8d018, 0x87f5e82888948f3e, 0x876e3624b0cd555d, 0x86e70b8f1a73fbd8,
	0x866067e09ae7a8c7, 0x85da4a928e6ea451, 0x8554b31ed7afb4df, 0x84cfa0ffdf2c01be,
	0x844b13b092b97b92, 0x83c70aac64fdca22, 0x8343856f4ce9bef2, 0x82c08375c5354c26,
	0x823e043ccbdbff37, 0x81bc0741e199fedb, 0x813a8c0309698bbb, 0x80b991fec8010361,
	0x803918b4235164e2, 0x7fb91fa2a20556cb, 0x7f39a64a4b00adb6, 0x7ebaac2ba4e0732d,
	0x7e3c30c7b57b6c38, 0x7dbe33a001631f28, 0x7d40b4368b655823, 0x7cc3b20dd40e2be0,
	0x7c472ca8d92a7830, 0x7bcb238b154ae1bc, 0x7b4f96387f474e8b, 0x7ad4843589c2dcd4,
	0x7a59ed0722b05590, 0x79dfd032b2d71a6a, 0x79662d3e1d588e76, 0x78ed03afbf35f94b,
	0x7874530e6ed6e3fb, 0x77fc1ae17b8fef6e, 0x77845ab0ad2a23ae, 0x770d1204436ab7a7,
	0x76964064f59b50e0, 0x761fe55bf212babb, 0x75aa0072ddbe14c5, 0x75349133d3aa7794,
	0x74bf9729648f0fd1, 0x744b11de9657aedd, 0x73d700dee3afd0bc, 0x736363b63b8e16b0,
	0x72f039f100c03628, 0x727d831c09775b86, 0x720b3ec49ed50045, 0x71996c787c783410,
	0x71280bc5d00b5858, 0x70b71c3b38d24df7, 0x70469d67c7391469, 0x6fd68edafc62da2c,
	0x6f66f024c9b97dde, 0x6ef7c0d5907d7f9c, 0x6e89007e21566238, 0x6e1aaeafbbe37bd9,
	0x6daccafc0e4d3590, 0x6d3f54f534d6b977, 0x6cd24c2db9700eec, 0x6c65b0389348a478,
	0x6bf980a9266246f3, 0x6b8dbd1343248581, 0x6b22650b25f081ed, 0x6ab7782576b52d00,
	0x6a4cf5f74883ee6d, 0x69e2de161925b7d4, 0x69793017d0b08282, 0x690feb92c11d3784,
	0x68a7101da5de018f, 0x683e9d4fa3750870, 0x67d692c0470b9581, 0x676ef0078609a0cd,
	0x6707b4bdbdadc66c, 0x66a0e07bb2a5a3be, 0x663a72da90a69c08, 0x65d46b73ea070429,
	0x656ec9e1b757b4e3, 0x65098dbe56fe0365, 0x64a4b6a48cce1fa7, 0x6440442f81a5d838,
	0x63dc35fac307c30f, 0x63788ba242b6cb09, 0x631544c2565221a4, 0x62b260f7b6f19493,
	0x624fdfdf80c246cd, 0x61edc11732a3ccb8, 0x618c043cadc5aaf9, 0x612aa8ee354537a0,
	0x60c9aeca6dcbdd3a, 0x606915705d2dbf75, 0x6008dc7f6a08c0ed, 0x5fa903975b63e9bb,
	0x5f498a58584f2e7f, 0x5eea7062e783975d, 0x5e8bb557ef03c6b4,
}

// dgParams are the sampler's constants for one sigma, computed once per
// noise vector: the reciprocals replace the two divisions of every
// proposal by multiplications.
type dgParams struct {
	sg, den uint64 // sigma and 2 sigma^2
	l       uint   // bits.Len64(sigma - 1) (<= 30): j is drawn l bits at a time
	mask    uint64 // 1<<l - 1
	invSg   uint64 // floor(2^64 / sigma) for sigma >= 2
	sh      uint   // den << sh has its top bit set
	invDen  uint64 // floor(2^127 / (den << sh)), 0 when den << sh == 2^63
}

func newDGParams(sigma int64) dgParams {
	sg := uint64(sigma)
	p := dgParams{sg: sg, den: 2 * sg * sg}
	p.l = uint(bits.Len64(sg-1)) & 63
	p.mask = 1<<p.l - 1
	if sg >= 2 {
		p.invSg, _ = bits.Div64(1, 0, sg)
	}
	p.sh = uint(bits.LeadingZeros64(p.den))
	if dn := p.den << p.sh; dn != 1<<63 {
		p.invDen, _ = bits.Div64(1<<63, 0, dn)
	}
	return p
}

// divSg returns a / sigma and a % sigma exactly: q = floor(a invSg / 2^64)
// is floor(a / sigma) or one less (invSg > 2^64/sigma - 1 and a < 2^64),
// which the remainder corrects.
func (p *dgParams) divSg(a uint64) (q, r uint64) {
	if p.sg == 1 {
		return a, 0
	}
	q, _ = bits.Mul64(a, p.invSg)
	r = a - q*p.sg
	if r >= p.sg {
		q++
		r -= p.sg
	}
	return q, r
}

// frac returns t with t <= f 2^64 / den < t + 4, for 0 <= f < den: with
// dn = den << sh in [2^63, 2^64) and fn = f << sh < dn, invDen >
// 2^127/dn - 1 gives floor(fn invDen / 2^64) > fn 2^63/dn - 2, and twice
// it is within 4 below f 2^64 / den.
func (p *dgParams) frac(f uint64) uint64 {
	fn := f << p.sh
	if p.invDen == 0 {
		return fn << 1 // den is a power of two: exact
	}
	h, _ := bits.Mul64(fn, p.invDen)
	return h << 1
}

// expQ64 returns E with |E - exp(-(w + t/2^64)) 2^64| <= 16, for
// 0 <= w <= 32 (TestExpQ64Bound checks the bound against exact values; the
// analysis: the two table entries are floors, each product below is a
// floor, and the series for exp(-r) with r < 2^-8 is cut after r^6, whose
// next term is below 2^-68; the errors add to at most about 8). It splits
// t into its top 8 bits i and the rest r: exp(-w) exp(-i/256) exp(-r),
// the first two from tables, the last as 1 - e(r) with e(r) = r (1 - r/2
// (1 - r/3 (1 - r/4 (1 - r/5 (1 - r/6))))) in 64-bit fixed point (every
// intermediate value is below 2^56, so nothing overflows).
func expQ64(w, t uint64) uint64 {
	i := t >> 56
	r := t & (1<<56 - 1)
	y := r / 6
	y = r/5 - mulHi(r/5, y)
	y = r/4 - mulHi(r/4, y)
	y = r/3 - mulHi(r/3, y)
	y = r/2 - mulHi(r/2, y)
	e := r - mulHi(r, y)
	var m uint64
	switch {
	case w == 0 && i == 0:
		return ^uint64(0) - e // 1 - e(r), with 1 as 2^64 - 1
	case w == 0:
		m = expFrac[i]
	case i == 0:
		m = expTable[2*w]
	default:
		m = mulHi(expTable[2*w], expFrac[i])
	}
	return m - mulHi(m, e)
}

func mulHi(a, b uint64) uint64 {
	h, _ := bits.Mul64(a, b)
	return h
}

// expSlack is the bound on expQ64's error that acceptExp relies on (four
// times the bound expQ64 states, itself about twice the analysis), plus
// the error of frac (at most 4 below, moving exp(-x) 2^64 by at most 4).
const expSlack = 16*4 + 4

// fastW is the largest integer part of the exponent expQ64 takes; with
// k <= fastW the acceptance exponent's integer part floor(k j / sigma) + 1
// is at most fastW.
const fastW = 32

// coarseExp returns lo and hi with lo <= exp(-(w + t/2^64)) 2^64 <= hi,
// for w <= fastW, from the tables alone: M = exp(-w) exp(-i/256) 2^64
// (floors; i the top 8 bits of t) is below the exact product by less than
// 3, and the rest of the exponent (below 2^-8, plus frac's error) moves
// the value down by a factor in (1 - 2^-8 - 2^-62, 1], so lo = M - M/256 -
// 8 and hi = M + 8 (see coarseM for x < 2^-8).
// M >= exp(-33) 2^64 > 2^16 for w <= fastW, so lo does not underflow.
// TestExpQ64Bound checks the bounds against exact values.
func coarseExp(w, t uint64) (lo, hi uint64) {
	m := coarseM(w, t>>56)
	return m - m>>8 - 8, m + 8
}

// coarseM is M of coarseExp for i = t >> 56 (small enough to be inlined).
// For w = i = 0 it is 2^64 - 9, so that M + 8 does not overflow: the
// exponent is then positive (acceptExp handles 0) and at least 1/den >=
// 2^-61, so exp(-x) 2^64 <= 2^64 - 8 and 2^64 - 1 is still an upper
// bound; the lower bound loses 9 units, which only widens the window.
func coarseM(w, i uint64) uint64 {
	if w == 0 {
		if i == 0 {
			return 1<<64 - 9
		}
		return expFrac[i&255]
	}
	if i == 0 {
		return expTable[2*w]
	}
	return mulHi(expTable[2*w], expFrac[i&255])
}

// acceptExp is the sampler's final acceptance step; fillDG
// writes its first stage out (fewer calls, which WebAssembly pays for), so
// this function is its reference form: TestAcceptExpRate checks it, and
// TestNoiseKnownAnswer pins the bits of the written-out copy.
//
// acceptExp returns true with probability exp(-(w + f/den)), exactly, for
// 0 <= f < den and w <= fastW, by comparing a uniform U, drawn lazily, with
// bounds on exp(-x) that are exact (no probability is ever rounded):
//
//  1. Coarse: with t = frac(f) and i its top 8 bits, exp(-x) 2^64 lies
//     within [M - M/256 - 8, M + 8], M = exp(-w) exp(-i/256) 2^64 from the
//     two tables (the rest of the exponent, r < 2^-8 + 2^-62, moves it by
//     a factor in (1 - 2^-8 - 2^-62, 1]; the tables' floors and frac's
//     error add less than 8). U's first 8 bits settle it unless they fall
//     in that window (1 or 2 values of 256).
//  2. Fine: E = expQ64 is within expSlack of exp(-x) 2^64, and 56 more
//     bits of U settle it unless U is within the slack (probability about
//     2^-57).
//  3. Exact: U's further bits against the exact expansion (exactLess).
func (s *Stream) acceptExp(w, f uint64, p *dgParams) bool {
	if w == 0 && f == 0 {
		return true // exp(0)
	}
	t := p.frac(f)
	clo, chi := coarseExp(w, t)
	u8 := s.take8()
	if u8 < clo>>56 { // U < (u8+1) 2^-8 <= clo 2^-64
		return true
	}
	if u8 > chi>>56 { // U >= u8 2^-8 > chi 2^-64
		return false
	}
	return s.acceptExpFine(u8, w, f, t, p)
}

// acceptExpFine is acceptExp's second and third stages, for a U whose
// first 8 bits u8 did not settle the comparison (t = p.frac(f)).
//
//go:noinline
func (s *Stream) acceptExpFine(u8, w, f, t uint64, p *dgParams) bool {
	e := expQ64(w, t)
	var lo, hi uint64 // U < lo/2^64 implies accept; U >= hi/2^64 implies reject
	if e >= expSlack {
		lo = e - expSlack
	}
	hiOK := e <= ^uint64(0)-expSlack
	if hiOK {
		hi = e + expSlack
	}
	u := u8<<56 | s.take(28)<<28 | s.take(28)
	if u < lo { // U < (u+1) 2^-64 <= lo 2^-64
		return true
	}
	if hiOK && u >= hi {
		return false
	}
	return s.exactLess(u, w, f, p.den)
}

// exactLess reports whether the uniform U whose first 64 bits are u is
// below exp(-(w + f/den)), drawing U's further bits as needed and
// comparing them with exactly computed bits of exp(-x) (big rationals; it
// runs with probability about 2^-57 per trial).
func (s *Stream) exactLess(u, w, f, den uint64) bool {
	a := new(big.Int).SetUint64(w)
	b := new(big.Int).SetUint64(den)
	a.Mul(a, b)
	a.Add(a, new(big.Int).SetUint64(f))
	c := expNegFloorBig(a, b, 64)
	if cu := c.Uint64(); !c.IsUint64() || u != cu {
		return !c.IsUint64() || u < cu
	}
	for n := 65; ; n++ {
		bit := uint64(expNegFloorBig(a, b, n).Bit(0))
		if s.bit() != bit {
			return bit == 1
		}
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
//  3. accepted with probability exp(-(2 k sigma j + j^2) / (2 sigma^2)):
//     one uniform compared, lazily, with exact lower and upper bounds on
//     that probability computed in 64-bit fixed point (acceptExp: 8 bits
//     decide about 99% of the time, and the exact binary expansion is
//     computed only when the uniform falls within 2^-57 of it);
//  4. the output is +-(k sigma + j).
//
// Each comparison with a constant exp(-m/2) reads the bits of a uniform
// against a table of its first 64 bits (checked exactly by the tests),
// and falls back to exact further bits on a tie (lessExp), so nothing is
// approximated. (Until issue 12, step 3 was CKS 2020 Algorithm 1 from
// exact integer ratios, a chain of Bernoulli trials drawn bit by bit; it
// is still the path for k > 32, acceptKJ.)
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
	p := newDGParams(sigma)
	var z [1]int64
	s.fillDG(z[:], &p)
	return z[0]
}

// fillDG fills dst with independent draws (the loop over outputs and the
// loop over proposals are one loop: a rejected proposal continues it
// without advancing i, an accepted one stores its output and advances).
func (s *Stream) fillDG(dst []int64, p *dgParams) {
	sg := p.sg
	for i := 0; i < len(dst); {
		// k = #{m >= 1 : U < exp(-m/2)} for one uniform U: P[k >= m] =
		// exp(-m/2); beyond the table, independent Bernoulli(exp(-1/2)).
		// U's bits are drawn lazily: the first 8 decide k through
		// kByPrefix unless they tie with a table entry's first 8 bits;
		// then the next 56 are drawn and the comparisons go on exactly.
		u8 := s.take8()
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
		// Accept k with probability exp(-k(k-1)/2) before drawing j (a
		// third of the proposals stop here, cheaply). The common case,
		// k(k-1) <= 64, is uniformLessExp written out: in WebAssembly
		// every call costs a trip through the goroutine stack in linear
		// memory, so the hot path of this loop makes as few as it can.
		if m := k * (k - 1); k >= 2 && m <= expTableMax {
			c := expTable[m] >> 56
			if u := s.take8(); u != c {
				if u > c {
					continue
				}
			} else if !s.lessExp(u<<56|s.take(28)<<28|s.take(28), int(m)) {
				continue
			}
		} else if k >= 2 && !s.bernExpHalves(m) {
			continue
		}
		// j uniform in [0, sigma): l = bits.Len64(sigma-1) bits at a
		// time, rejected while >= sigma (exactly uniform; fewer than two
		// tries on average).
		var j uint64
		for {
			b := s.bits
			if b>>p.l == 0 {
				b = s.refillBits()
			}
			s.bits = b >> p.l
			if j = b & p.mask; j < sg {
				break
			}
		}
		neg := s.bit() == 1
		if neg && k == 0 && j == 0 {
			continue
		}
		// Accept with probability exp(-(2 k sigma j + j^2) / (2 sigma^2)),
		// exp(-(w + f/den)) with k j = q sigma + r, w = q (+1 when f >=
		// den) and f = 2 sigma r + j^2 < 3 sigma^2: acceptExp, its first
		// stage written out. For k > fastW (probability below exp(-16) per
		// proposal) it is acceptKJ.
		if k > fastW {
			if !s.acceptKJ(k, j, sg, p.den) {
				continue
			}
		} else {
			var w, f uint64
			if k == 0 {
				f = j * j // < sigma^2 < den
			} else {
				q, r := p.divSg(k * j)
				w, f = q, 2*sg*r+j*j
				if f >= p.den {
					w++
					f -= p.den
				}
			}
			if w != 0 || f != 0 { // exp(0) = 1 accepts without drawing
				t := p.frac(f)
				clo, chi := coarseExp(w, t)
				u8 := s.take8()
				if u8 >= clo>>56 && (u8 > chi>>56 || !s.acceptExpFine(u8, w, f, t, p)) {
					continue
				}
			}
		}
		z := int64(k*sg + j)
		if neg {
			z = -z
		}
		dst[i] = z
		i++
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
	if sigma < 1 || sigma > MaxDiscreteSigma {
		panic(fmt.Sprintf("mechanism: discrete Gaussian sigma %d outside [1, %d]", sigma, MaxDiscreteSigma))
	}
	p := newDGParams(sigma)
	s.fillDG(dst, &p)
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
