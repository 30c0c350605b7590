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
// The sampler (fillDG) is rejection from a proposal that does
// not depend on sigma: a block index m from a constant dyadic table over 64
// blocks per sigma, a uniform position in the block and a sign, accepted
// with probability exp(-x^2 / (2 sigma^2)) times a constant ratio per
// block, drawn by comparing random bits with exact bounds on, or the
// exactly computed binary expansion of, that probability: no
// floating-point number enters any probability, and the output is exactly
// the discrete Gaussian (privacy.md 4a has the proof). CKS 2020 Algorithm
// 3, a second exact sampler, is kept in the tests as an independent
// reference. The hot path is 64-bit integer arithmetic; MaxDiscreteSigma
// keeps every intermediate value in range. Randomness comes from a
// Stream, so a vector is a deterministic function of its 32-byte seed and
// regenerates bit for bit on every platform.

// GridFactor is c in the grid step g = 2^floor(log2(Delta / (c sqrt d))):
// the rounding slack sqrt(d) is then between Delta/(2 c g) and Delta/(c g)
// (a power of two is within a factor 2 of the target), so calibrating to
// the inflated sensitivity raises the noise by a factor between
// 1 + 1/(2c) and 1 + 1/c (plus the 1e-6 margin and the rounding of sigma up
// to an integer).
const GridFactor = 1000

// MaxDiscreteSigma is the largest sigma (in grid units) DiscreteGaussian
// accepts: with sigma <= 2^30, the block width W = ceil(sigma/64) <= 2^24
// leaves Lemire's 32-bit draw a rejection rate below 2^-8, the products
// of blkLoss and blkBracket stay below 2^64 (or 2^128 with a high word
// below sigma), and the outputs (m <= 2^30) stay below 2^55.
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
		k, ok := OnGrid(x, step)
		if !ok {
			return GridError(x, i, step)
		}
		dst[i] = k
	}
	return nil
}

// OnGrid is ToGrid's rule for one value, for loops that round a vector
// while doing other work in the same pass: round(x/step) (nearest, ties
// to even), and false if x/step is not finite or |x/step| >= 2^52.
func OnGrid(x, step float64) (int64, bool) {
	y := x / step
	if !(math.Abs(y) < maxGridValue) {
		return 0, false
	}
	return int64(math.RoundToEven(y)), true
}

// GridError is ToGrid's error for the value x at index i that OnGrid
// refused.
func GridError(x float64, i int, step float64) error {
	return fmt.Errorf("mechanism: value %g at index %d is not representable on the grid of step %g", x, i, step)
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

// expNegFloor returns floor(exp(-a/b) 2^n) for a, b > 0, exactly (see
// expNegFloorBig).
func expNegFloor(a, b int64, n int) *big.Int {
	return expNegFloorBig(big.NewInt(a), big.NewInt(b), n)
}

// expNegFloorBig returns floor(exp(-a/b) 2^n) for a, b > 0, exactly:
// expNegBracket brackets exp(-a/b) 2^N for N = n + g guard bits, and the
// result is returned when both ends of the bracket have the same floor at
// 2^n (the limit is irrational, so they eventually do; g doubles until
// then).
func expNegFloorBig(a, b *big.Int, n int) *big.Int {
	for g := uint(64); ; g *= 2 {
		lo, hi := expNegBracket(a, b, uint(n)+g)
		lo.Rsh(lo, g)
		if hi.Rsh(hi, g); lo.Cmp(hi) == 0 {
			return lo
		}
	}
}

// expNegBracket returns lo <= exp(-a/b) 2^N <= hi for a >= 0, b > 0, in
// integer arithmetic with every rounding directed: with r = a / (b 2^k) <=
// 1, the alternating series sum_j (-r)^j / j! is summed with each term
// bounded below (floor) and above (ceil) in units of 2^-N until a term's
// upper bound is at most 1 (the remainder of an alternating series with
// decreasing terms is at most its first term), and the bracket is then
// squared k times (floor of lo^2, ceil of hi^2). Its width is about
// 2^(k+6) units, which expNegFloorBig's guard bits cover.
func expNegBracket(a, b *big.Int, N uint) (lo, hi *big.Int) {
	k := uint(0)
	if q := new(big.Int).Quo(a, b); q.Sign() > 0 {
		k = uint(q.BitLen())
	}
	N += k
	den := new(big.Int).Lsh(b, k)
	one := new(big.Int).Lsh(big.NewInt(1), N)
	lo, hi = new(big.Int).Set(one), new(big.Int).Set(one)
	tl, th := new(big.Int).Set(one), new(big.Int).Set(one)
	d, m := new(big.Int), new(big.Int)
	for j := int64(1); ; j++ {
		d.Mul(den, big.NewInt(j))
		tl.Quo(tl.Mul(tl, a), d) // floor: tl, a, d >= 0
		th.Mul(th, a)
		th.QuoRem(th, d, m)
		if m.Sign() != 0 {
			th.Add(th, big.NewInt(1))
		}
		if th.Cmp(big.NewInt(1)) <= 0 {
			lo.Sub(lo, big.NewInt(1))
			hi.Add(hi, big.NewInt(1))
			break
		}
		if j%2 == 1 {
			lo.Sub(lo, th)
			hi.Sub(hi, tl)
		} else {
			lo.Add(lo, tl)
			hi.Add(hi, th)
		}
	}
	for i := uint(0); i < k; i++ {
		if lo.Sign() < 0 {
			lo.SetInt64(0)
		}
		lo.Rsh(lo.Mul(lo, lo), N)
		hi.Mul(hi, hi)
		hi.QuoRem(hi, one, m)
		if m.Sign() != 0 {
			hi.Add(hi, big.NewInt(1))
		}
	}
	if lo.Sign() < 0 {
		lo.SetInt64(0)
	}
	return lo.Rsh(lo, k), hi.Rsh(hi.Add(hi, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), k), big.NewInt(1))), k)
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

// The block sampler. For a target sigma, the half-line x >= 0
// is cut into blocks [m sigma/c, (m+1) sigma/c), c = blkC = 64 blocks per
// sigma, and the sampler is rejection from a proposal that is exactly
// computable and does not depend on sigma:
//
//  1. m >= 0 with P[m] = q_m / 2^64 for m <= blkM, where q_m =
//     ceil(kappa w_m), w_m = exp(-m^2 / (2 c^2)), and kappa is an integer
//     constant (blkKappa); the cumulative sums T_m (blkCum) are compared
//     with a uniform 64-bit u, read lazily through a 12-bit guide table.
//     The rest of the mass, q_T = 2^64 - T_M, proposes the tail m = M + 1 +
//     G with G geometric, P[G = g] = (7/8)^g / 8;
//  2. x = ceil(m sigma / c) + t with t uniform in [0, W), W = ceil(sigma/c),
//     rejected unless c x < (m + 1) sigma (x lies in block m): every x >= 0
//     is proposed by exactly one (m, t), with probability P[m] / W;
//  3. a sign, -0 rejected;
//  4. acceptance with probability exp(-x^2 / (2 sigma^2)) R_m, where
//     R_m = kappa / q_m in the body and kappa 8^j / (q_T 7^(j-1)), j = m - M,
//     in the tail, so that P[m] R_m = kappa / 2^64 for every m and the
//     accepted x has probability proportional to exp(-x^2 / (2 sigma^2)).
//     R_m exp(-x^2/(2 sigma^2)) <= alpha_m = w_m R_m <= 1 because x >= m
//     sigma / c (TestBlockTables checks the inequalities this needs).
//
// The acceptance is one uniform U compared with exact bounds: U's first 12
// bits decide unless U lies above about 1 - E - (1 - alpha_m) - 2^-12, a
// lower bound on the acceptance probability, with E = exp's exponent
// beyond the block's, below 0.14 and about 0.006 on average; then 64 bits
// against a bracket from expQ64 (blkAcceptMid); then exact bits
// (blkExact). Nothing is rounded: the output is exactly the discrete
// Gaussian (privacy.md 4a), and the cost does not depend on sigma: the
// tables are constants (recomputed exactly by TestBlockTables), and a new
// sigma costs two divisions (newDGParams).

const (
	blkShift = 6
	blkC     = 1 << blkShift // blocks per sigma
	// blkM is the last block of the table: kappa w_{M+1} < 1, and 2M + 3
	// >= 2 c^2 ln(8/7), so the tail's acceptance decreases with m.
	blkM         = 572
	blkGuideBits = 12
	// blkMaxM bounds m; a proposal beyond it (probability below
	// (7/8)^(2^30)) is redrawn, so the output is the discrete Gaussian
	// conditioned on |z| < about 2^24 sigma (the outputs must fit an int64).
	blkMaxM = 1 << 30
	blkAmb  = 1 << 15 // the guide entry's "bucket holds a boundary" flag
	blkV    = 12      // bits of U drawn with the proposal
)

// blkGuide[p] is the least m with T_m > p 2^52, with blkAmb set when some
// T_m lies inside the bucket [p 2^52, (p+1) 2^52): for a u whose top 12
// bits are p, m is then found from further bits of u (blkSearch).
var blkGuide = func() (g [1 << blkGuideBits]uint16) {
	m := 0
	for p := range g {
		lo := uint64(p) << (64 - blkGuideBits)
		hi := lo + (1<<(64-blkGuideBits) - 1)
		for m < blkM && blkCum[m] <= lo {
			m++
		}
		g[p] = uint16(m)
		if m == blkM || blkCum[m] <= hi {
			g[p] |= blkAmb
		}
	}
	return g
}()

// blkDelta[m] = ceil((2^64 - blkAlpha[m]) / 2^32): alpha_m >= 1 -
// blkDelta[m] / 2^32.
var blkDelta = func() (d [blkM + 1]uint64) {
	for m, a := range blkAlpha {
		r := -a // 2^64 - a, as a >= 1
		d[m] = r >> 32
		if r&(1<<32-1) != 0 {
			d[m]++
		}
	}
	return d
}()

// dgParams are the sampler's constants for one sigma.
type dgParams struct {
	sg   uint64 // sigma
	iv   uint64 // ceil(2^51 / sigma)
	wd   uint64 // W = ceil(sigma / c) <= 2^24
	tl   uint   // bits drawn for t: min(bits.Len64(W) + 8, 32)
	thr  uint64 // 2^tl mod W: Lemire's rejection threshold for t
	need uint   // bits per proposal: 12 + tl + 1 + blkV <= 57
}

func newDGParams(sigma int64) dgParams {
	sg := uint64(sigma)
	p := dgParams{sg: sg, iv: (1<<51 + sg - 1) / sg, wd: (sg + blkC - 1) >> blkShift}
	p.tl = min(uint(bits.Len64(p.wd))+8, 32)
	p.thr = (1 << p.tl) % p.wd
	p.need = blkGuideBits + p.tl + 1 + blkV
	return p
}

// blkSearch returns m = min{m : u < T_m} (blkM + 1 when u >= T_M, the
// tail) for the uniform u whose top 12 bits are pre, drawing its other 52
// bits lazily: 8 first, compared with the thresholds' bits 44 to 63 from
// the guide's lo on (usually one comparison decides), and the last 44 only
// on a tie.
//
//go:noinline
func (s *Stream) blkSearch(pre, lo uint64) uint64 {
	u20 := pre<<8 | s.take8()
	for m := lo; m <= blkM; m++ {
		t20 := blkCum[m] >> 44
		if u20 < t20 {
			return m // u < (u20 + 1) 2^44 <= T_m
		}
		if u20 == t20 {
			return blkSearchU(u20<<44|s.take(22)<<22|s.take(22), m)
		}
		// u >= u20 2^44 > T_m
	}
	return blkM + 1
}

// blkSearchU returns min{m >= lo : u < T_m}, or blkM + 1.
func blkSearchU(u, lo uint64) uint64 {
	for lo <= blkM && u >= blkCum[lo] {
		lo++
	}
	return lo
}

// blkTail returns M + 1 + G, G geometric with P[G = g] = (7/8)^g / 8, or
// blkMaxM + 1 once it exceeds blkMaxM.
func (s *Stream) blkTail() uint64 {
	m := uint64(blkM + 1)
	for m <= blkMaxM && s.take(3) != 0 {
		m++
	}
	return m
}

// lemireT returns t uniform in [0, W) from tl-bit draws r (the first is
// r0): t = floor(r W / 2^tl), rejected while (r W mod 2^tl) < 2^tl mod W
// (Lemire 2019), which leaves exactly floor(2^tl / W) values of r per t
// (a rejection has probability below W / 2^tl <= 2^-7).
//
//go:noinline
func (s *Stream) lemireT(r0 uint64, p *dgParams) uint64 {
	prod := r0 * p.wd
	for prod&(1<<p.tl-1) < p.thr {
		prod = s.take(p.tl) * p.wd
	}
	return prod >> p.tl
}

// fillDG fills dst with independent draws of N_Z(0, sigma^2) (the block
// sampler above; a rejected proposal continues the loop without advancing
// i). Each proposal reads need bits of the keystream (45 at the demo's
// sigma), through a reservoir local to the call (bits left at its end are
// dropped): 12 for the guide, tl for t, a sign and the first blkV bits of
// the acceptance uniform.
func (s *Stream) fillDG(dst []int64, p *dgParams) {
	sg, need, tl := p.sg, p.need&63, p.tl&63
	var buf uint64 // the reservoir: nb unused keystream bits, the rest 0
	var nb uint
	for i := 0; i < len(dst); {
		var r uint64
		if nb >= need {
			r = buf & (1<<need - 1)
			buf >>= need
			nb -= need
		} else {
			var w uint64
			if s.ln == 0 {
				w = s.c.Uint64() // Uint64's common case, one call fewer
			} else {
				w = s.uint64Split()
			}
			r = (buf | w<<nb) & (1<<need - 1)
			buf = w >> ((need - nb) & 63)
			nb = 64 - (need - nb)
		}
		pre := r >> ((need - blkGuideBits) & 63)
		g := uint64(blkGuide[pre])
		m := g &^ blkAmb
		if g&blkAmb != 0 {
			m = s.blkSearch(pre, m)
			if m > blkM {
				if m = s.blkTail(); m > blkMaxM {
					continue
				}
			}
		}
		// x = b + t, b = ceil(m sigma / c); y = c x - m sigma = c t + rho.
		ms := m * sg
		b := (ms + blkC - 1) >> blkShift
		tr := r >> (blkV + 1) & (1<<tl - 1)
		prod := tr * p.wd
		t := prod >> tl
		if prod&(1<<tl-1) < p.thr {
			t = s.lemireT(tr, p)
		}
		y := t<<blkShift + (b<<blkShift - ms)
		if y >= sg {
			continue // x is beyond block m
		}
		x := b + t
		sb := r >> blkV & 1 // the sign: negative when 1
		if x == 0 && sb == 1 {
			continue // -0
		}
		v := r & (1<<blkV - 1) // U's first blkV bits
		if m > blkM {
			if !s.blkExact(s.blkU(v), x, m, sg) {
				continue
			}
		} else {
			// The acceptance probability is at least 1 - blkLoss / 2^32,
			// and U < (v + 1) 2^-blkV.
			if (v+1)<<(32-blkV)+blkLoss(y, m, p) > 1<<32 && !s.blkAcceptMid(v, x, y, m, sg) {
				continue
			}
		}
		dst[i] = int64(x ^ -sb + sb) // -x when sb = 1, without a branch
		i++
	}
}

// blkAcceptMid decides the acceptance of x in block m <= blkM when U's
// first blkV bits v did not: it brackets exp(-E) alpha_m within a few
// units of 2^-64 and draws U's next bits, and only when U falls inside the
// bracket compares exact bits (blkExact). E = y (y + 2 m sigma) / (2 c^2
// sigma^2) is split exactly, in 128-bit integer arithmetic, into w = 0 (E <
// (2M + 1) / (2 c^2) < 1) and t <= frac(E) 2^64 < t + 2.
//
//go:noinline
func (s *Stream) blkAcceptMid(v, x, y, m, sg uint64) bool {
	lo, hi, hiOK := blkBracket(y, m, sg)
	u := s.blkU(v)
	if u < lo {
		return true // U < (u + 1) 2^-64 <= lo 2^-64
	}
	if hiOK && u >= hi {
		return false // U >= u 2^-64 >= hi 2^-64
	}
	return s.blkExact(u, x, m, sg)
}

// blkLoss returns an integer L with alpha_m exp(-E) >= 1 - L / 2^32 for x
// in block m <= blkM, y = c x - m sigma: E = x^2/(2 sigma^2) - m^2/(2 c^2)
// = a (a + 2m) / (2 c^2) <= a (2m + 1) / 2^13 with a = y / sigma in [0,
// 1), and y iv >= a 2^51 (iv = ceil(2^51 / sigma)), so E 2^32 <= y iv (2m
// + 1) / 2^32 (below 2^62: y iv < 2^51 + sigma, 2m + 1 < 2^11); with
// alpha_m >= 1 - blkDelta[m] / 2^32, alpha_m exp(-E) >= (1 -
// blkDelta[m]/2^32)(1 - E) >= 1 - L / 2^32.
func blkLoss(y, m uint64, p *dgParams) uint64 {
	return y*p.iv*(2*m+1)>>32 + 1 + blkDelta[m]
}

// blkBracket returns lo and hi with lo <= alpha_m exp(-E) 2^64 < hi (hi
// only when hiOK) for x in block m <= blkM, y = c x - m sigma. E = y (y +
// 2 m sigma) / (2 c^2 sigma^2) is split exactly, in 128-bit integer
// arithmetic, into w = 0 (E < (2M + 1) / (2 c^2) < 1) and t <= frac(E)
// 2^64 < t + 2; expQ64 is within 16 of exp(-t/2^64) 2^64, so exp(-E) 2^64
// is within [e - 18, e + 16], and alpha_m is within [a, a + 1] / 2^64.
func blkBracket(y, m, sg uint64) (lo, hi uint64, hiOK bool) {
	ph, pl := bits.Mul64(y, y+2*m*sg) // P = y (y + 2 m sigma) < sigma^2 2^11
	q1, r1 := bits.Div64(ph, pl, sg)  // P = q1 sigma + r1 (ph < sigma)
	// E = (q1 + r1/sigma) / D, D = 2 c^2 sigma > q1; frac(E) 2^64 = (q1 +
	// r1/sigma) 2^51 / sigma, computed as A = q1 2^51 + floor(r1 2^51 /
	// sigma) < sigma 2^64 and t = floor(A / sigma).
	f1, _ := bits.Div64(r1>>13, r1<<51, sg)
	ah, al := q1>>13, q1<<51
	al, c := bits.Add64(al, f1, 0)
	t, _ := bits.Div64(ah+c, al, sg)
	e := expQ64(0, t)
	a := blkAlpha[m]
	lo = mulHi(a, e-expSlack)
	if e <= ^uint64(0)-expSlack {
		hi, hiOK = mulHi(a, e+expSlack)+2, true
	}
	return lo, hi, hiOK
}

// blkU returns the first 64 bits of the acceptance uniform whose first
// blkV = 12 bits are v, drawing the other 52.
func (s *Stream) blkU(v uint64) uint64 {
	return v<<(64-blkV) | s.take(26)<<26 | s.take(26)
}

// expSlack bounds expQ64's error (16) plus the error of t (2) in
// blkAcceptMid, with a margin: the tests observe at most 1.
const expSlack = 64

// blkExact reports whether the uniform U whose first 64 bits are u is
// below exp(-x^2 / (2 sigma^2)) R_m, drawing U's further bits as needed and
// comparing them with exactly computed bits of that number (big integers;
// the bracket it follows is at most about 130 units of 2^-64 wide, so it
// runs with probability below 2^-56 per proposal, or in the tail).
func (s *Stream) blkExact(u, x, m, sg uint64) bool {
	if x == 0 {
		return true // m = 0 and R_0 exp(0) = kappa / q_0 = 1
	}
	num := new(big.Int).SetUint64(blkKappa)
	den := new(big.Int)
	if m <= blkM {
		q := blkCum[m]
		if m > 0 {
			q -= blkCum[m-1]
		}
		den.SetUint64(q)
	} else {
		j := int64(m - blkM)
		num.Mul(num, new(big.Int).Exp(big.NewInt(8), big.NewInt(j), nil))
		den.Exp(big.NewInt(7), big.NewInt(j-1), nil)
		den.Mul(den, new(big.Int).SetUint64(-blkCum[blkM]))
	}
	xb := new(big.Int).SetUint64(x)
	a := new(big.Int).Mul(xb, xb)
	b := new(big.Int).SetUint64(sg)
	b.Mul(b, b).Lsh(b, 1)
	floorAt := func(n int) *big.Int {
		return floorScaledExp(a, b, new(big.Int).Lsh(num, uint(n)), den)
	}
	c := floorAt(64)
	if cu := c.Uint64(); u != cu {
		return u < cu // the value is below 1, so c < 2^64
	}
	for n := 65; ; n++ {
		bit := uint64(floorAt(n).Bit(0))
		if s.bit() != bit {
			return bit == 1
		}
	}
}

// floorScaledExp returns floor(num exp(-a/b) / den) for a, b, num, den >
// 0, exactly: with L = floor(exp(-a/b) 2^n), the value lies in [L num,
// (L+1) num) / (den 2^n), and n grows until both ends have the same floor
// (they do, the value being irrational).
func floorScaledExp(a, b, num, den *big.Int) *big.Int {
	lo, hi := new(big.Int), new(big.Int)
	for n := 64; ; n += 32 {
		l := expNegFloorBig(a, b, n)
		d := new(big.Int).Lsh(den, uint(n))
		lo.Quo(lo.Mul(l, num), d)
		hi.Quo(hi.Mul(l.Add(l, big.NewInt(1)), num), d)
		if lo.Cmp(hi) == 0 {
			return lo
		}
	}
}

// DiscreteGaussian returns one draw of the discrete Gaussian N_Z(0,
// sigma^2): P[Z = z] proportional to exp(-z^2 / (2 sigma^2)) over the
// integers, for an integer 1 <= sigma <= MaxDiscreteSigma (it panics
// otherwise). See the block sampler above.
func (s *Stream) DiscreteGaussian(sigma int64) int64 {
	if sigma < 1 || sigma > MaxDiscreteSigma {
		panic(fmt.Sprintf("mechanism: discrete Gaussian sigma %d outside [1, %d]", sigma, MaxDiscreteSigma))
	}
	p := newDGParams(sigma)
	var z [1]int64
	s.fillDG(z[:], &p)
	return z[0]
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
