// Package plausible holds the server's tests of a device message, from
// the session's public parameters alone (docs/security.md, "Plausibility
// of a message"): UpdateBound, the largest L2 norm an honest message
// reaches; the Checker, which adds per-coordinate and block tests of the
// message and, with a History (the device's running sum of included
// messages), the same tests of the running sum and the persistence test
// of "nc"; and SharedGrid, the integer range of a "shared" release, from
// the same quantiles. An honest device's message fails any of them with
// probability at most UpdateRejectProb over the whole session. The
// coordinator, its edges and the simulator run the same tests.
package plausible

import (
	"errors"
	"fmt"
	"math"

	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
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
	TestPersist    = "persist"    // inner product of the running sum before and after the message ("nc")
)

// rejectShare is the number of tests UpdateRejectProb is shared between:
// the norm, coordinate and block tests of each message, the coordinate
// and block tests of the running sum, and the persistence test
// (docs/security.md, "Plausibility of a message").
const rejectShare = 6

// blockSizes are the block lengths of the block test, smallest first:
// contiguous blocks [0, k), [k, 2k), ... of each size below d (the last
// block of a level may be shorter). Small blocks catch a shift
// concentrated on a few coordinates; the norm test covers the whole
// vector (for the running sum, a block of length d does).
var blockSizes = [...]int{8, 64, 512}

// Rejection is the error of a Checker that refused a message: which test,
// on which coordinates, the value seen and the largest value an honest
// device reaches. It matches ErrImplausible.
type Rejection struct {
	Test    string // TestNorm, TestCoordinate, TestBlock or TestPersist
	History bool   // the test was of the device's running sum
	Rounds  int    // messages in the running sum (History)
	Sum     int    // releases in the round's sum (SumChecker); 0 for one device's message
	Lo, Hi  int    // coordinates [Lo, Hi) tested
	Value   float64
	Limit   float64
}

func (r *Rejection) Error() string {
	what := "the update"
	if r.Sum > 0 {
		what = fmt.Sprintf("the round's sum of %d updates", r.Sum)
	}
	if r.History {
		what = fmt.Sprintf("the sum of this device's last %d included updates", r.Rounds)
	}
	switch r.Test {
	case TestCoordinate:
		return fmt.Sprintf("rejected: %s has %.4g at coordinate %d, above the largest an honest device reaches, %.4g", what, r.Value, r.Lo, r.Limit)
	case TestBlock:
		return fmt.Sprintf("rejected: %s has norm %.4g on coordinates %d-%d, above the largest an honest device reaches, %.4g", what, r.Value, r.Lo, r.Hi-1, r.Limit)
	case TestPersist:
		return fmt.Sprintf("rejected: %s keeps a part of the one before it (inner product %.4g), more than honest noise, which cancels, can (%.4g)", what, r.Value, r.Limit)
	default:
		return fmt.Sprintf("rejected: %s has norm %.4g, above the session's bound %.4g", what, r.Value, r.Limit)
	}
}

// Is reports whether target is ErrImplausible.
func (r *Rejection) Is(target error) bool { return target == ErrImplausible }

// Words says why, for a teacher's screen: no symbols, no jargon.
func (r *Rejection) Words() string {
	switch {
	case r.Sum > 0:
		return "the round's total was far bigger than real training can make, so the round was dropped"
	case r.History:
		return fmt.Sprintf("its updates kept pushing the model the same way, far more than real training can (%d rounds)", r.Rounds)
	case r.Test == TestNorm:
		return "its update was far bigger than real training can make"
	default:
		return "its update pushed a few numbers of the model far harder than real training can"
	}
}

// TeacherWords says why an update was refused (err, from Checker.Check or
// the norm bound), for the teacher's view: the norm bound's numbers
// (NormWords), or the other tests' words (Rejection.Words).
func TeacherWords(err error, norm, bound float64) string {
	var r *Rejection
	if errors.As(err, &r) && r.Test != TestNorm {
		return r.Words()
	}
	return NormWords(norm, bound)
}

// NormWords says in plain words why an update of the given norm was
// rejected against bound (the device and the teacher read it).
func NormWords(norm, bound float64) string {
	return fmt.Sprintf("the update was bigger than the session allows (size %.3g, limit %.3g)", norm, bound)
}

// History is the running sum of one device's included messages, for the
// history tests. The zero value is an empty history. It is not safe for
// concurrent use; the coordinator keeps one per device under its lock.
//
// The sum is kept in float32 (4 d bytes a device instead of 8 d: at
// d = 7,850 and 3,000 devices, 94 MB instead of 188), with bounds on what
// that rounding can have moved it: each Add stores the float64 sum
// w = T + x rounded to float32, off by at most 2^-24 |w_j| (2^-150 below
// float32's normal range) per coordinate, so after n adds the stored T is
// within Slack(k) of the exact sum on every block of k coordinates that
// the tests read (k = 1, 8, 64, 512, d). Check adds each to its test's
// limit: the honest side's guarantee is unchanged, and a hostile device
// gains at most about 2^-23 n times that test's own limit
// (docs/security.md, "The stored running sum").
type History struct {
	sum []float32
	// slack[l] bounds the stored sum's error on one block of the l-th
	// size: coordinates, blockSizes, then the whole vector.
	slack [len(blockSizes) + 2]float64
	n     int
	// FromStart is set by the caller when the history holds every
	// included message of the device since its first release in the
	// session (its noise state Y was 0 when the history began), and Ask
	// was called for every round the device was asked since then. Only
	// then does the persistence test apply, and the noise allowed is that
	// of the rounds asked rather than of the most releases a device
	// makes; the zero value skips both.
	FromStart bool
	asks      int
}

// histRound bounds, relative to |w_j|, how far storing w = T + x in
// float32 moves a coordinate: the float64 addition (2^-53) and the
// float32 rounding (2^-24) are each relative, (2^-24 + 2^-53 + 2^-77) in
// all; 2^-23 also covers the float64 rounding of the block norms. histTiny
// is the absolute error of a coordinate below float32's normal range
// (half its smallest step, 2^-150, plus float64's), per coordinate.
const (
	histRound = 1.0 / (1 << 23)
	histTiny  = 0x1p-149
)

// Ask records that the device was asked for a round (before its answer
// is checked). An honest device releases only when asked, so the asks
// bound its releases, and so its noise ("nc" draws grow with them).
func (h *History) Ask() { h.asks++ }

// Asks returns the rounds recorded by Ask.
func (h *History) Asks() int { return h.asks }

// Len returns the number of messages in the history.
func (h *History) Len() int { return h.n }

// Slack returns the bound on the distance (L2 norm) between the stored
// running sum and the exact sum of the messages added, on any block of k
// consecutive coordinates as the tests cut them: k = 1 (one coordinate),
// one of blockSizes, or d (the whole vector; any other k too).
func (h *History) Slack(k int) float64 {
	return h.slack[slackLevel(k)]
}

// slackLevel is the index in History.slack of blocks of k coordinates.
func slackLevel(k int) int {
	if k == 1 {
		return 0
	}
	for i, b := range blockSizes {
		if k == b {
			return 1 + i
		}
	}
	return len(blockSizes) + 1
}

// Add adds an included message x, one the Checker has passed, to the
// history.
func (h *History) Add(x []float64) {
	if len(h.sum) != len(x) {
		if h.n > 0 {
			panic(fmt.Sprintf("optim: History.Add of dimension %d to a history of %d", len(x), len(h.sum)))
		}
		h.sum = make([]float32, len(x)) // first, or after a Reset at another dimension
	}
	sum := h.sum
	// One pass: each coordinate's new sum w, the largest |w_j|, and the
	// largest sum of squares of w over the blocks of each size (the
	// sizes nest: 8 divides 64 divides 512), closed as in Checker.scan.
	const nb = len(blockSizes)
	var top float64      // largest |w_j|
	var open [nb]float64 // sums of squares of the open block of each size
	var most [nb]float64 // largest closed block's
	var all float64
	var count [nb]int // coordinates in the open block of each size
	k0 := blockSizes[0]
	for lo := 0; lo < len(x); lo += k0 {
		hi := min(lo+k0, len(x))
		var ss float64
		for i := lo; i < hi; i++ {
			w := float64(sum[i]) + x[i]
			sum[i] = float32(w)
			ss += w * w
			// Not the built-in max, whose NaN and signed-zero cases
			// cost a third of the pass; w is never NaN for a finite x
			// (and a NaN sum fails every test anyway).
			if a := math.Abs(w); a > top {
				top = a
			}
		}
		all += ss
		last := hi == len(x)
		for l, k := range blockSizes {
			open[l] += ss
			count[l] += hi - lo
			if count[l] == k || last {
				if open[l] > most[l] {
					most[l] = open[l]
				}
				open[l], count[l] = 0, 0
			}
		}
	}
	h.slack[0] += histRound*top + histTiny
	for l, k := range blockSizes {
		h.slack[1+l] += histRound*math.Sqrt(most[l]) + histTiny*math.Sqrt(float64(k))
	}
	h.slack[nb+1] += histRound*math.Sqrt(all) + histTiny*math.Sqrt(float64(len(x)))
	h.n++
}

// Reset empties the history (keeping its buffer).
func (h *History) Reset() {
	clear(h.sum)
	h.slack = [len(h.slack)]float64{}
	h.n = 0
}

// Checker tests decoded device messages against what an honest device's
// message can be, from the session's public parameters alone. Build it
// once per session with NewChecker; it is read-only afterwards and safe
// for concurrent use.
//
// Model. An honest message of "nc" and of the fresh-noise algorithms
// (noisysgd, cdpsgd) is, before
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
	dsum    float64 // Params.SignalBound D: n estimates sum to at most E + (n-1) D (0: n E)
	half    float64 // h/2, the grid rounding per coordinate
	s       float64 // subgaussian proxy (standard deviation) per coordinate of one message's noise, at the release cap
	cap     int     // the most releases a device makes
	sigZ    []int64 // "nc": sigma_Z of the n-th release, n = 0..cap (sigZ[0] = 0)
	step    float64 // grid step h
	zc      float64 // coordinate quantile: sqrt(2 ln(2 d R^2 / p))
	u       float64 // block tail exponent: ln(blocks R^2 / p)
	levels  []int   // block sizes in use
	why     string
	// The persistence test ("nc" with a history from the start).
	persist bool
	s1      float64 // proxy per coordinate of one draw y_k at the cap (h sigma_Z(cap))
	chiY    float64 // ||y_k|| <= s1 chiY for every draw
	zp      float64 // quantile of the three subgaussian inner products
}

// NewChecker returns the checker of a session with parameters p and
// model dimension d.
func NewChecker(p optim.Params, d int) (*Checker, error) {
	norm, why, err := UpdateBound(p, d)
	if err != nil {
		return nil, err
	}
	c := &Checker{d: d, norm: norm, normWhy: why}
	a, _ := algo.Lookup(p.Algorithm)
	spec, _ := mechanism.ParseSpec(p.Compressor)
	switch {
	case math.IsInf(norm, 1):
		c.why = "finiteness only: " + why
		return c, nil
	case !a.CancelsNoise() && !a.FreshNoise():
		c.why = "norm test only: no device noise (the norm bound is the clipping bound)"
		return c, nil
	case a.HiddenSteps():
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
	sens := algo.Sensitivity(p)
	step, err := mechanism.GridStep(sens, d)
	if err != nil {
		return nil, fmt.Errorf("optim: checker grid: %w", err)
	}
	cap := p.ReleaseCap()
	var sz float64
	switch {
	case a.CancelsNoise():
		// The device's own rule (its sigma_Z of algo.NCSigma) for every release
		// count, so that a device asked A times is allowed the noise of
		// its A-th release, not of the cap.
		c.sigZ = make([]int64, cap+1)
		nc := algo.NewNC(p) // rho_p solved from the budget once, not at every release
		for n := 1; n <= cap; n++ {
			if c.sigZ[n], err = mechanism.DiscreteSigma(nc.Sigma(n), sens, step, d); err != nil {
				return nil, fmt.Errorf("optim: checker noise of release %d: %w", n, err)
			}
		}
		hi, lo := float64(c.sigZ[cap]), float64(c.sigZ[cap-1])
		sz = math.Sqrt(hi*hi + lo*lo)
		c.persist = true
		c.s1 = step * hi
	case a.FreshNoise():
		fs, err := algo.FreshSigma(p)
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
	c.cap, c.step = cap, step
	c.e = signalBound(p)
	c.dsum = p.SignalBound
	c.half = step / 2
	c.s = step * sz
	prob := UpdateRejectProb / rejectShare
	R := float64(cap)
	// The message's noise is y_n - Y: the new draw minus the draw of the
	// device's last included release, and which release that was may
	// depend on its own noise (a late answer is excluded, and the exact
	// sampler's running time depends on what it draws). So the tails are
	// taken over every pair of releases (n, N), R^2 of them, not over the
	// R messages; likewise for a running sum's Y_last - Y_first.
	R2 := R * R
	c.zc = math.Sqrt(2 * math.Log(2*float64(d)*R2/prob))
	nb := 0
	for _, k := range blockSizes {
		if k < d {
			c.levels = append(c.levels, k)
			nb += (d + k - 1) / k
		}
	}
	// The history also tests the whole running sum's norm (one block of
	// length d), counted here too.
	c.u = math.Log(float64(nb+1) * R2 / prob)
	// Persistence: half the share for the R draws' norms, half for the
	// 3 R two-sided inner products.
	c.persist = c.persist && c.history
	c.chiY = chiRoot(d, math.Log(2*R/prob))
	c.zp = math.Sqrt(2 * math.Log(12*R/prob))
	c.why = fmt.Sprintf("norm, coordinate and block tests (E %.4g, noise %.4g per coordinate, compressor factor %.6g)", c.e, c.s, c.f)
	if c.history {
		c.why += " and the same on each device's running sum"
	}
	if c.persist {
		c.why += ", and the persistence test of the running sum"
	}
	if c.history && c.dsum > 0 && c.dsum < c.e {
		c.why += fmt.Sprintf("; running sums held to E + (n-1) D, D = %.4g (an assumed signal bound)", c.dsum)
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
func signalBound(p optim.Params) float64 {
	a, _ := algo.Lookup(p.Algorithm)
	if a.NeedsLocalData() { // the SVRG and SAGA estimators
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

// noise returns the subgaussian proxies per coordinate for a device asked
// a times (0: unknown, the release cap): of one message's noise (the new
// draw minus the cancelled one, in "nc") and of one draw.
func (c *Checker) noise(a int) (msg, draw float64) {
	if c.sigZ == nil || a <= 0 || a >= c.cap {
		return c.s, c.s1
	}
	hi, lo := float64(c.sigZ[a]), float64(c.sigZ[a-1])
	return c.step * math.Sqrt(hi*hi+lo*lo), c.step * hi
}

// CoordLimit returns the largest |x_j| an honest message reaches, for a
// device asked a times (0: unknown).
func (c *Checker) CoordLimit(a int) float64 {
	s, _ := c.noise(a)
	return c.f * (c.e + c.half + s*c.zc)
}

// BlockLimit returns the largest L2 norm of k consecutive coordinates an
// honest message reaches, for a device asked a times (0: unknown).
func (c *Checker) BlockLimit(k, a int) float64 {
	s, _ := c.noise(a)
	return c.f * (c.e + c.half*math.Sqrt(float64(k)) + s*chiRoot(k, c.u))
}

// chiRoot is sqrt(k + 2 sqrt(k u) + 2u): a subgaussian vector of k
// coordinates with unit proxy exceeds it in norm with probability at
// most exp(-u) (Hsu, Kakade and Zhang 2012, Theorem 1 with A = I).
func chiRoot(k int, u float64) float64 {
	fk := float64(k)
	return math.Sqrt(fk + 2*math.Sqrt(fk*u) + 2*u)
}

// histNoise is the subgaussian proxy per coordinate of the noise in the
// sum of n included messages of a device asked a times: in "nc" the
// noises telescope to Y_last - Y_first (two draws, as one message: the
// last of release at most a, the first of an earlier one); otherwise n
// independent draws.
func (c *Checker) histNoise(n, a int) float64 {
	s, _ := c.noise(a)
	if c.fresh {
		return s * math.Sqrt(float64(n))
	}
	return s
}

// sumSignal bounds the norm of the sum of n honest estimates (before
// rounding and noise): n E, or, with an assumed signal bound D
// (Params.SignalBound), E + (n - 1) D when that is smaller.
func (c *Checker) sumSignal(n int) float64 {
	fn := float64(n)
	if c.dsum > 0 {
		return min(fn*c.e, c.e+(fn-1)*c.dsum)
	}
	return fn * c.e
}

// HistCoordLimit returns the largest |sum_j| the running sum of n honest
// messages reaches (device asked a times; 0: unknown). Each message's
// compressor rounding (relative f - 1) is added on top, at most twice
// the coordinate limit per message.
func (c *Checker) HistCoordLimit(n, a int) float64 {
	fn := float64(n)
	return c.sumSignal(n) + fn*c.half + c.histNoise(n, a)*c.zc + 2*fn*(c.f-1)*c.CoordLimit(a)
}

// HistBlockLimit returns the largest norm of k consecutive coordinates
// of the running sum of n honest messages (device asked a times).
func (c *Checker) HistBlockLimit(k, n, a int) float64 {
	fn := float64(n)
	return c.sumSignal(n) + fn*c.half*math.Sqrt(float64(k)) + c.histNoise(n, a)*chiRoot(k, c.u) + 2*fn*(c.f-1)*c.BlockLimit(k, a)
}

// PersistLimit returns the largest |<R_(n-1), R_n>| for an honest "nc"
// device whose history holds its first n included messages (R_n their
// sum), asked a times (0: unknown). With V_k the sum of the first k
// rounded estimates (||V_k|| <= k E', E' = E + h sqrt(d)/2) and y_k the
// k-th included message's draw (proxy s1 = h sigma_Z(a) or less),
// R_k = V_k + y_k, and
//
//	<R_(n-1), R_n> = <V_(n-1), V_n> + <V_(n-1), y_n> + <y_(n-1), V_(n-1)>
//	               + <y_(n-1), v_n> + <y_(n-1), y_n>,
//
// bounded in turn by (n-1) n E'^2 (with an assumed signal bound D,
// ||V_k|| <= E + (k-1) D + k h sqrt(d)/2 in place of k E' here and in
// the next two terms); (n-1) E' s1 z and (n-1) E' s1 z (y_n,
// and y_(n-1), are drawn after V_(n-1) is fixed, so each product is
// subgaussian with proxy ||V_(n-1)||^2 s1^2); E' s1 chiY (Cauchy-Schwarz:
// v_n may depend on y_(n-1) through the model); and s1^2 chiY z (y_n is
// independent of y_(n-1)). A hostile device that keeps a push b in its
// running sum makes the product about ||b||^2, so the push it can keep is
// about the square root of this limit instead of a whole noise draw.
// The compressor's rounding is added on top.
func (c *Checker) PersistLimit(n, a int) float64 {
	_, s1 := c.noise(a)
	r := c.half * math.Sqrt(float64(c.d)) // one estimate's rounding
	ep := c.e + r
	// ||V_k|| <= k E', or E + (k-1) D + k h sqrt(d)/2 with a signal bound.
	vk := func(k int) float64 { return c.sumSignal(k) + float64(k)*r }
	fn := float64(n)
	lim := vk(n-1)*vk(n) + 2*vk(n-1)*s1*c.zp + ep*s1*c.chiY + s1*s1*c.chiY*c.zp
	// Rounding: each sum is off by at most n (f-1) B (B the norm bound),
	// so the product by at most that times the two sums' norms plus its
	// square; bounded with both sums at n B.
	rf := fn * (c.f - 1) * c.norm
	return lim + rf*(2*fn*c.norm+rf)
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
	a := 0 // rounds asked: known only for a history from the start
	if h != nil && h.FromStart {
		a = h.asks
	}
	if r := c.scan(x, nil, nil, 1, a, false); r != nil {
		return r
	}
	if h == nil || !c.history {
		return nil
	}
	// The running sum with x, including a first message (n = 1: its
	// limits are the message's without the norm bound's margin).
	var base []float32
	if h.n > 0 {
		if len(h.sum) != c.d {
			return fmt.Errorf("optim: history of dimension %d, want %d", len(h.sum), c.d)
		}
		// A history of checked messages has a slack of at most about
		// 2^-23 n times the running sum's norm limit; a larger one (or an
		// infinite one, which would lift every limit) is refused.
		e := h.slack[len(h.slack)-1]
		if lim := 8 * histRound * float64(h.n) * c.HistBlockLimit(c.d, h.n, 0); !(e <= lim) {
			return &Rejection{Test: TestNorm, History: true, Rounds: h.n + 1, Hi: c.d, Value: e, Limit: lim}
		}
		base = h.sum
	}
	if r := c.scan(x, base, &h.slack, h.n+1, a, true); r != nil {
		return r
	}
	if c.persist && h.FromStart && h.n > 0 {
		// The stored sums T and T + x are each within the slack e of the
		// exact ones S and S + x (in L2 norm), so <T, T + x> is within
		// e (||T|| + ||T + x||) + 3 e^2 of <S, S + x>.
		var dot, tt, uu float64
		for i, v32 := range h.sum {
			v := float64(v32)
			w := v + x[i]
			dot += v * w
			tt += v * v
			uu += w * w
		}
		e := h.Slack(c.d)
		lim := c.PersistLimit(h.n+1, a) + e*(math.Sqrt(tt)+math.Sqrt(uu)) + 3*e*e
		if !(math.Abs(dot) <= lim) {
			return &Rejection{Test: TestPersist, History: true, Rounds: h.n + 1, Hi: c.d, Value: dot, Limit: lim}
		}
	}
	return nil
}

// scan runs the coordinate and block tests on x (plus base, when not
// nil) against the limits of one message or of a running sum of n, each
// raised by its slack, base's distance from the exact sum on a block of
// that size (History.slack; nil for one message).
func (c *Checker) scan(x []float64, base []float32, slack *[len(blockSizes) + 2]float64, n, a int, hist bool) *Rejection {
	var coord float64
	if hist {
		coord = c.HistCoordLimit(n, a) + slack[0]
	} else {
		coord = c.CoordLimit(a)
	}
	if base != nil {
		base = base[:len(x)]
	}
	levels := c.levels
	if hist {
		// The running sum's norm too: without it each block would get
		// its own n E, and a dense drift could grow by several E a
		// round.
		levels = append(levels[:len(levels):len(levels)], c.d)
	}
	// The limit of a block of k coordinates at level l (of size
	// levels[l], or shorter at the end); a running sum's adds the
	// slack of that level's blocks.
	limit := func(k, l int) float64 {
		if hist {
			return c.HistBlockLimit(k, n, a) + slack[slackLevel(levels[l])]
		}
		return c.BlockLimit(k, a)
	}
	// One pass: each coordinate, then the blocks. The block sizes nest
	// (8, 64, 512, and d last), so the smallest blocks are summed a chunk
	// at a time and each larger block's sum of squares is its sub-blocks'
	// added up as they close; the limits of whole blocks are computed
	// once per call.
	var sums, whole [5]float64
	var count [5]int // elements in the open block of each size
	for l, k := range levels {
		whole[l] = limit(k, l)
	}
	k0 := c.d
	if len(levels) > 0 {
		k0 = levels[0]
	}
	for lo := 0; lo < c.d; lo += k0 {
		hi := min(lo+k0, c.d)
		var ss float64
		for i, v := range x[lo:hi] {
			if base != nil {
				v += float64(base[lo+i])
			}
			if !(math.Abs(v) <= coord) {
				return &Rejection{Test: TestCoordinate, History: hist, Rounds: n, Lo: lo + i, Hi: lo + i + 1, Value: v, Limit: coord}
			}
			ss += v * v
		}
		sums[0] += ss
		count[0] += hi - lo
		last := hi == c.d
		for l, k := range levels {
			if count[l] != k && !last {
				break // the block of size k (and every larger one) is still open
			}
			size, lim := count[l], whole[l]
			if size != k {
				lim = limit(size, l) // the last block, shorter
			}
			if nb := math.Sqrt(sums[l]); !(nb <= lim) {
				return &Rejection{Test: TestBlock, History: hist, Rounds: n, Lo: hi - size, Hi: hi, Value: nb, Limit: lim}
			}
			if l+1 < len(levels) {
				sums[l+1] += sums[l]
				count[l+1] += count[l]
			}
			sums[l], count[l] = 0, 0
		}
	}
	return nil
}
