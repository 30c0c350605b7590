package optim

import (
	"errors"
	"fmt"
	"math"

	"browserfl/shared/mechanism"
)

// ErrImplausible is matched (errors.Is) by every rejection a Checker
// makes: the message, or the device's running sum with it, is not one an
// honest device sends except with probability at most UpdateRejectProb.
var ErrImplausible = errors.New("optim: implausible update")

// The tests a Checker applies, as named in a Rejection.
const (
	TestNorm       = "norm"       // L2 norm of the whole message (UpdateBound)
	TestCoordinate = "coordinate" // one coordinate
	TestBlock      = "block"      // L2 norm of a block of consecutive coordinates
)

// rejectShare is the number of tests UpdateRejectProb is shared between:
// the norm, coordinate and block tests of each message, and the
// coordinate and block tests of the running sum (docs/security.md,
// "Plausibility of a message").
const rejectShare = 5

// blockSizes are the block lengths of the block test, smallest first:
// contiguous blocks [0, k), [k, 2k), ... of each size below d (the last
// block of a level may be shorter). Small blocks catch a shift
// concentrated on a few coordinates; the norm test covers the whole
// vector.
var blockSizes = [...]int{8, 64, 512}

// Rejection is the error of a Checker that refused a message: which test,
// on which coordinates, the value seen and the largest value an honest
// device reaches. It matches ErrImplausible.
type Rejection struct {
	Test    string // TestNorm, TestCoordinate or TestBlock
	History bool   // the test was of the device's running sum
	Rounds  int    // messages in the running sum (History)
	Lo, Hi  int    // coordinates [Lo, Hi) tested
	Value   float64
	Limit   float64
}

func (r *Rejection) Error() string {
	what := "the update"
	if r.History {
		what = fmt.Sprintf("the sum of this device's last %d included updates", r.Rounds)
	}
	switch r.Test {
	case TestCoordinate:
		return fmt.Sprintf("rejected: %s has %.4g at coordinate %d, above the largest an honest device reaches, %.4g", what, r.Value, r.Lo, r.Limit)
	case TestBlock:
		return fmt.Sprintf("rejected: %s has norm %.4g on coordinates %d-%d, above the largest an honest device reaches, %.4g", what, r.Value, r.Lo, r.Hi-1, r.Limit)
	default:
		return fmt.Sprintf("rejected: %s has norm %.4g, above the session's bound %.4g", what, r.Value, r.Limit)
	}
}

// Is reports whether target is ErrImplausible.
func (r *Rejection) Is(target error) bool { return target == ErrImplausible }

// Words says why, for a teacher's screen: no symbols, no jargon.
func (r *Rejection) Words() string {
	switch {
	case r.History:
		return fmt.Sprintf("its updates kept pushing the model the same way, far more than real training can (%d rounds)", r.Rounds)
	case r.Test == TestNorm:
		return "its update was far bigger than real training can make"
	default:
		return "its update pushed a few numbers of the model far harder than real training can"
	}
}

// History is the running sum of one device's included messages, for the
// history tests. The zero value is an empty history. It is not safe for
// concurrent use; the coordinator keeps one per device under its lock.
type History struct {
	sum []float64
	n   int
}

// Len returns the number of messages in the history.
func (h *History) Len() int { return h.n }

// Add adds an included message x to the history.
func (h *History) Add(x []float64) {
	if h.sum == nil {
		h.sum = make([]float64, len(x))
	}
	for i, v := range x {
		h.sum[i] += v
	}
	h.n++
}

// Reset empties the history (keeping its buffer).
func (h *History) Reset() {
	clear(h.sum)
	h.n = 0
}

// Checker tests decoded device messages against what an honest device's
// message can be, from the session's public parameters alone. Build it
// once per session with NewChecker; it is read-only afterwards and safe
// for concurrent use.
//
// Model. An honest message of "nc" and of the fresh-noise algorithms
// (noisysgd, cdpsgd, soteria-sgd/svrg/saga without shift) is, before
// compression, x = h (round(v/h) + z) where v is the device's estimate
// with ||v|| <= E (clipping), h the public grid step, and z a vector of
// independent integer noises per coordinate: in "nc" y_n - Y (two
// independent discrete Gaussians of sigma_Z(n) and sigma_Z(N), N < n <=
// ReleaseCap), in the others one discrete Gaussian of the fresh sigma_Z.
// A discrete Gaussian of parameter sigma is sigma^2-subgaussian
// (Canonne, Kamath and Steinke 2020, Corollary 9), so each coordinate of
// h z is subgaussian with variance proxy s^2 = h^2 (sigma_Z(cap)^2 +
// sigma_Z(cap-1)^2) in "nc" (h^2 sigma_Z^2 in the others). The proofs of
// the thresholds are in docs/security.md.
type Checker struct {
	d       int
	norm    float64 // UpdateBound; +Inf: finiteness only
	normWhy string
	shape   bool    // coordinate and block tests apply
	history bool    // history tests apply
	fresh   bool    // history noise adds up over messages (no cancellation)
	f       float64 // compressor's coordinate factor: |m_j| <= f |x_j|
	e       float64 // E, the bound on ||v||
	half    float64 // h/2, the grid rounding per coordinate
	s       float64 // subgaussian proxy (standard deviation) per coordinate of one message's noise
	zc      float64 // coordinate quantile: sqrt(2 ln(2 d R / p))
	u       float64 // block tail exponent: ln(blocks R / p)
	levels  []int   // block sizes in use
	why     string
}

// NewChecker returns the checker of a session with parameters p and
// model dimension d.
func NewChecker(p Params, d int) (*Checker, error) {
	norm, why, err := UpdateBound(p, d)
	if err != nil {
		return nil, err
	}
	c := &Checker{d: d, norm: norm, normWhy: why}
	a, _ := Lookup(p.Algorithm)
	k := a.kind
	spec, _ := mechanism.ParseSpec(p.Compressor)
	switch {
	case math.IsInf(norm, 1):
		c.why = "finiteness only: " + why
		return c, nil
	case k.noise != noiseNC && k.noise != noiseDevice:
		c.why = "norm test only: no device noise (the norm bound is the clipping bound)"
		return c, nil
	case k.est == estLocal:
		c.why = "norm test only: local steps are projected, so a message is not a sum of independent noises"
		return c, nil
	case spec.EF:
		c.why = "norm test only: error feedback's residual has no known distribution"
		return c, nil
	}
	const f32 = 1 + 1.0/(1<<23)
	switch q := spec.C.(type) {
	case mechanism.Dense64:
		c.f, c.history = 1, true
	case mechanism.Dense32:
		c.f, c.history = f32, true
	case mechanism.TopK:
		c.f = f32
	case mechanism.RandK:
		c.f = float64(d) / float64(fracKOf(q.Frac, q.K, d)) * f32
	default:
		c.why = "norm test only: compressor " + spec.String() + " does not keep coordinates"
		return c, nil
	}
	sens := Sensitivity(p)
	step, err := mechanism.GridStep(sens, d)
	if err != nil {
		return nil, fmt.Errorf("optim: checker grid: %w", err)
	}
	cap := p.ReleaseCap()
	var sz float64
	switch k.noise {
	case noiseNC:
		hi, err := mechanism.DiscreteSigma(NCSigma(p, cap), sens, step, d)
		if err != nil {
			return nil, fmt.Errorf("optim: checker noise: %w", err)
		}
		lo := int64(0)
		if cap > 1 {
			if lo, err = mechanism.DiscreteSigma(NCSigma(p, cap-1), sens, step, d); err != nil {
				return nil, fmt.Errorf("optim: checker noise: %w", err)
			}
		}
		sz = math.Sqrt(float64(hi)*float64(hi) + float64(lo)*float64(lo))
	case noiseDevice:
		fs, err := FreshSigma(p)
		if err != nil {
			return nil, err
		}
		z, err := mechanism.DiscreteSigma(fs, sens, step, d)
		if err != nil {
			return nil, fmt.Errorf("optim: checker noise: %w", err)
		}
		sz = float64(z)
		c.fresh = true
	}
	c.shape = true
	c.e = signalBound(p)
	c.half = step / 2
	c.s = step * sz
	prob := UpdateRejectProb / rejectShare
	R := float64(cap)
	c.zc = math.Sqrt(2 * math.Log(2*float64(d)*R/prob))
	nb := 0
	for _, k := range blockSizes {
		if k < d {
			c.levels = append(c.levels, k)
			nb += (d + k - 1) / k
		}
	}
	c.u = math.Log(float64(max(nb, 1)) * R / prob)
	c.why = fmt.Sprintf("norm, coordinate and block tests (E %.4g, noise %.4g per coordinate, compressor factor %.6g)", c.e, c.s, c.f)
	if c.history {
		c.why += " and the same on each device's running sum"
	}
	return c, nil
}

// fracKOf is mechanism's k of a random-k or top-k compressor.
func fracKOf(frac float64, k, d int) int {
	if k > 0 {
		return min(k, d)
	}
	return min(max(int(math.Ceil(frac*float64(d)-1e-9)), 1), d)
}

// signalBound is E, the largest L2 norm of an honest device's estimate
// before noise: S for the mean of clipped per-sample quantities, 3S for
// the SVRG and SAGA estimators (two minibatch terms and one full term).
func signalBound(p Params) float64 {
	a, _ := Lookup(p.Algorithm)
	if a.kind.est == estSVRG || a.kind.est == estSAGA {
		return 3 * p.S()
	}
	return p.S()
}

// NormBound returns UpdateBound's B for the session.
func (c *Checker) NormBound() float64 { return c.norm }

// Describe says which tests the checker applies, for logs and docs.
func (c *Checker) Describe() string { return c.why }

// Shape reports whether the coordinate and block tests apply.
func (c *Checker) Shape() bool { return c.shape }

// Tracks reports whether the running-sum tests apply (Check uses its
// History argument).
func (c *Checker) Tracks() bool { return c.history }

// CoordLimit returns the largest |x_j| an honest message reaches.
func (c *Checker) CoordLimit() float64 {
	return c.f * (c.e + c.half + c.s*c.zc)
}

// BlockLimit returns the largest L2 norm of k consecutive coordinates an
// honest message reaches.
func (c *Checker) BlockLimit(k int) float64 {
	return c.f * (c.e + c.half*math.Sqrt(float64(k)) + c.s*chiRoot(k, c.u))
}

// chiRoot is sqrt(k + 2 sqrt(k u) + 2u): a subgaussian vector of k
// coordinates with unit proxy exceeds it in norm with probability at
// most exp(-u) (Hsu, Kakade and Zhang 2012, Theorem 1 with A = I).
func chiRoot(k int, u float64) float64 {
	fk := float64(k)
	return math.Sqrt(fk + 2*math.Sqrt(fk*u) + 2*u)
}

// histNoise is the subgaussian proxy per coordinate of the noise in the
// sum of n included messages: in "nc" the noises telescope to Y_last -
// Y_first (two draws, as one message); otherwise n independent draws.
func (c *Checker) histNoise(n int) float64 {
	if c.fresh {
		return c.s * math.Sqrt(float64(n))
	}
	return c.s
}

// HistCoordLimit returns the largest |sum_j| the running sum of n honest
// messages reaches. Each message's compressor rounding (relative f - 1)
// is added on top, at most twice the coordinate limit per message.
func (c *Checker) HistCoordLimit(n int) float64 {
	fn := float64(n)
	return fn*(c.e+c.half) + c.histNoise(n)*c.zc + 2*fn*(c.f-1)*c.CoordLimit()
}

// HistBlockLimit returns the largest norm of k consecutive coordinates
// of the running sum of n honest messages.
func (c *Checker) HistBlockLimit(k, n int) float64 {
	fn := float64(n)
	return fn*(c.e+c.half*math.Sqrt(float64(k))) + c.histNoise(n)*chiRoot(k, c.u) + 2*fn*(c.f-1)*c.BlockLimit(k)
}

// Check tests a decoded message x (already finite and of the session's
// dimension: mechanism.DecodeNorm checks both) with its L2 norm, and,
// when h is not nil and the history tests apply, the running sum h plus
// x. It returns nil or a *Rejection (errors.Is(err, ErrImplausible)). It
// does not change h: on inclusion the caller adds x with h.Add.
func (c *Checker) Check(x []float64, norm float64, h *History) error {
	if len(x) != c.d {
		return fmt.Errorf("optim: message of dimension %d, want %d", len(x), c.d)
	}
	if !(norm <= c.norm) {
		return &Rejection{Test: TestNorm, Hi: c.d, Value: norm, Limit: c.norm}
	}
	if !c.shape {
		return nil
	}
	if r := c.scan(x, nil, 1, false); r != nil {
		return r
	}
	if h == nil || !c.history || h.n == 0 {
		return nil
	}
	if len(h.sum) != c.d {
		return fmt.Errorf("optim: history of dimension %d, want %d", len(h.sum), c.d)
	}
	if r := c.scan(x, h.sum, h.n+1, true); r != nil {
		return r
	}
	return nil
}

// scan runs the coordinate and block tests on x (plus base, when not
// nil) against the limits of one message or of a running sum of n.
func (c *Checker) scan(x, base []float64, n int, hist bool) *Rejection {
	at := func(i int) float64 {
		if base != nil {
			return base[i] + x[i]
		}
		return x[i]
	}
	var coord float64
	if hist {
		coord = c.HistCoordLimit(n)
	} else {
		coord = c.CoordLimit()
	}
	for i := range x {
		if v := at(i); !(math.Abs(v) <= coord) {
			return &Rejection{Test: TestCoordinate, History: hist, Rounds: n, Lo: i, Hi: i + 1, Value: v, Limit: coord}
		}
	}
	for _, k := range c.levels {
		for lo := 0; lo < c.d; lo += k {
			hi := min(lo+k, c.d)
			var ss float64
			for i := lo; i < hi; i++ {
				v := at(i)
				ss += v * v
			}
			var lim float64
			if hist {
				lim = c.HistBlockLimit(hi-lo, n)
			} else {
				lim = c.BlockLimit(hi - lo)
			}
			if nb := math.Sqrt(ss); !(nb <= lim) {
				return &Rejection{Test: TestBlock, History: hist, Rounds: n, Lo: lo, Hi: hi, Value: nb, Limit: lim}
			}
		}
	}
	return nil
}
