package plausible

import (
	"fmt"
	"math"

	"browserfl/shared/optim"
)

// sumShare is the number of tests of a round's sum UpdateRejectProb is
// shared between: the coordinate, block and norm tests of SumChecker.
const sumShare = 3

// SumChecker tests the decoded sum of a "shared" round (the sum of the
// releases of the n devices whose masked inputs secure aggregation
// unmasked), from the session's public parameters alone: in that mode the
// coordinator never sees one release, so the Checker's tests of each
// message cannot run, and the sum's tests are all it has. Build it once
// per session with NewSumChecker; it is read-only afterwards and safe for
// concurrent use.
//
// Model. Release i of a round is, in grid units, r_i = round(v_i/h) +
// Z_i,new - Z_i,old: v_i the device's estimate (||v_i|| <= E), h the
// grid step, Z_i,new its fresh share of the noise and Z_i,old the share it
// cancels, discrete Gaussians of at most sigma_Z(cap) and sigma_Z(cap-1)
// grid units (the Checker's model of one "shared" message). Each
// coordinate of h (Z_i,new - Z_i,old) is subgaussian with proxy s^2 =
// h^2 (sigma_Z(cap)^2 + sigma_Z(cap-1)^2) (Canonne, Kamath and Steinke
// 2020, Corollary 9), and the n devices draw independently, so for a
// fixed choice of which earlier share each device cancels, each
// coordinate of the sum's noise is subgaussian with proxy n s^2. Which
// share that is depends on which of the device's releases were included,
// which may depend on the noise (a discarded round, a late answer): the
// tails are taken over every choice, cap^n of them (u gains n ln cap).
// The signal part of the sum is at most n (E + h/2) per coordinate and
// n (E + h sqrt(k)/2) in norm on k coordinates (every estimate rounded
// onto the grid). An honest sum is also within n maxAbs grid units per
// coordinate (SharedGrid: every device's client refuses a release beyond
// it), which secure aggregation's ring holds without wrapping.
//
// The tests (coordinate, blocks of 8, 64 and 512 as the Checker's, and
// the whole vector's norm, SumBound) share UpdateRejectProb, each over
// every sum of the session: each sum, committed or discarded, holds a
// release of each of its n >= t members, and the session's M devices make
// at most cap releases each, so a session has at most max(T, ceil(M cap /
// t)) sums. So an honest session's sums fail any test with probability at
// most UpdateRejectProb, whatever became of each round.
type SumChecker struct {
	d      int
	e      float64 // E, the bound on one estimate's norm
	half   float64 // h/2
	step   float64 // h
	s      float64 // proxy per coordinate of one release's noise, at the release cap
	maxAbs int64   // SharedGrid's bound of one release, in grid units
	cap    int     // release cap
	sums   float64 // the most sums a session has
	levels []int   // block sizes in use (below d)
	nb     int     // blocks of those sizes
	why    string
}

// NewSumChecker returns the sum checker of a "shared" session with
// parameters p and model dimension d.
func NewSumChecker(p optim.Params, d int) (*SumChecker, error) {
	step, maxAbs, err := SharedGrid(p, d)
	if err != nil {
		return nil, err
	}
	c, err := NewChecker(p, d)
	if err != nil {
		return nil, err
	}
	sc := &SumChecker{d: d, e: c.e, half: c.half, step: step, s: c.s, maxAbs: maxAbs, cap: c.cap}
	t := max(p.SharedThreshold(), 1)
	sc.sums = max(float64(p.Rounds), math.Ceil(float64(p.M)*float64(c.cap)/float64(t)))
	for _, k := range blockSizes {
		if k < d {
			sc.levels = append(sc.levels, k)
			sc.nb += (d + k - 1) / k
		}
	}
	sc.why = fmt.Sprintf("sum tests: coordinate, blocks and norm of a sum of n releases (E %.4g, noise %.4g per coordinate and release, %g sums a session at most)", sc.e, sc.s, sc.sums)
	return sc, nil
}

// Describe says which tests the checker applies, for logs and docs.
func (c *SumChecker) Describe() string { return c.why }

// u is the tail exponent of one test of a sum of n releases, before the
// union over that test's coordinates or blocks: ln(sums sumShare /
// UpdateRejectProb) + n ln cap.
func (c *SumChecker) u(n int) float64 {
	return math.Log(c.sums*sumShare/UpdateRejectProb) + float64(n)*math.Log(float64(max(c.cap, 1)))
}

// CoordLimit returns the largest |sum_j| an honest sum of n releases
// reaches: the smaller of n (E + h/2) + sqrt(n) s z, z = sqrt(2 (ln 2d +
// u)), and n maxAbs h (the ring's bound).
func (c *SumChecker) CoordLimit(n int) float64 {
	fn := float64(n)
	z := math.Sqrt(2 * (math.Log(2*float64(c.d)) + c.u(n)))
	return min(fn*(c.e+c.half)+math.Sqrt(fn)*c.s*z, fn*float64(c.maxAbs)*c.step)
}

// BlockLimit returns the largest L2 norm an honest sum of n releases
// reaches on a block of k consecutive coordinates (k = d: the whole sum,
// SumBound).
func (c *SumChecker) BlockLimit(k, n int) float64 {
	fn := float64(n)
	u := c.u(n)
	if k < c.d {
		u += math.Log(float64(c.nb))
	}
	return fn*(c.e+c.half*math.Sqrt(float64(k))) + math.Sqrt(fn)*c.s*chiRoot(k, u)
}

// SumBound returns the largest L2 norm of an honest sum of n releases of
// a "shared" session with parameters p and model dimension d, and a
// one-line derivation for logs and docs: E and h the estimate bound and
// grid step, s the proxy per coordinate of one release's noise (the new
// share minus the cancelled one, at the release cap),
//
//	B = n (E + h sqrt(d)/2) + sqrt(n) s sqrt(d + 2 sqrt(d u) + 2u),
//
// the signal of n rounded estimates plus the noise of n independent
// releases: ||noise||^2 / (n s^2) is at most a chi-square with d degrees
// of freedom, P(chi2_d >= d + 2 sqrt(d u) + 2u) <= exp(-u) (Laurent and
// Massart 2000, Lemma 1; Hsu, Kakade and Zhang 2012 for subgaussian
// coordinates), with u = ln(sums 3 / UpdateRejectProb) + n ln cap over
// every sum of the session and every choice of the shares cancelled
// (SumChecker). An honest sum exceeds it with probability at most
// UpdateRejectProb/3 over the whole session.
func SumBound(p optim.Params, d, n int) (float64, string, error) {
	c, err := NewSumChecker(p, d)
	if err != nil {
		return 0, "", err
	}
	if n < 1 {
		return 0, "", fmt.Errorf("optim: sum bound of %d releases", n)
	}
	B := c.BlockLimit(d, n)
	why := fmt.Sprintf("%d x (estimate %.4g + grid %.4g) + sqrt(%d) x noise %.4g x %.4g", n, c.e, c.half*math.Sqrt(float64(d)), n, c.s, chiRoot(d, c.u(n)))
	return B, why, nil
}

// Check tests the decoded sum of n releases: every coordinate finite and
// within CoordLimit, every block within BlockLimit, the norm within
// SumBound. It returns nil or a *Rejection with Sum = n
// (errors.Is(err, ErrImplausible)).
func (c *SumChecker) Check(sum []float64, n int) error {
	if len(sum) != c.d {
		return fmt.Errorf("optim: sum of dimension %d, want %d", len(sum), c.d)
	}
	if n < 1 {
		return &Rejection{Test: TestNorm, Sum: n, Hi: c.d, Value: float64(n), Limit: 1}
	}
	coord := c.CoordLimit(n)
	levels := append(c.levels[:len(c.levels):len(c.levels)], c.d)
	var all float64
	for j, v := range sum {
		if !(math.Abs(v) <= coord) {
			return &Rejection{Test: TestCoordinate, Sum: n, Lo: j, Hi: j + 1, Value: v, Limit: coord}
		}
		all += v * v
	}
	for _, k := range levels[:len(levels)-1] {
		whole := c.BlockLimit(k, n)
		for lo := 0; lo < c.d; lo += k {
			hi := min(lo+k, c.d)
			var ss float64
			for _, v := range sum[lo:hi] {
				ss += v * v
			}
			lim := whole
			if hi-lo != k {
				lim = c.BlockLimit(hi-lo, n)
			}
			if nb := math.Sqrt(ss); !(nb <= lim) {
				return &Rejection{Test: TestBlock, Sum: n, Lo: lo, Hi: hi, Value: nb, Limit: lim}
			}
		}
	}
	if norm, lim := math.Sqrt(all), c.BlockLimit(c.d, n); !(norm <= lim) {
		return &Rejection{Test: TestNorm, Sum: n, Hi: c.d, Value: norm, Limit: lim}
	}
	return nil
}
