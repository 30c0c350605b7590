// Package audit measures empirically what one device's released messages
// reveal about one of its samples: a membership experiment with a canary,
// white-box (the auditor sees every message the device releases in a
// session, as the untrusted coordinator does), turned into a lower bound on
// the device's epsilon that holds with a stated confidence. The bound is
// set against the guarantee the product states (plan.SessionFigures): a
// lower bound above it means the mechanism or its accounting is broken.
//
// One trial: a fair coin decides whether the device's first minibatch
// holds the canary or the sample it replaces (the replace-one neighbouring
// relation of the accountant, docs/privacy.md section 1). The device runs
// the product's own device half (optim.NewDevice: the real clipping,
// minibatch mean, grid rounding and exact discrete Gaussian noise of
// shared/mechanism) for all T rounds of the session, chosen in every
// round (the worst case the figure covers); the auditor decodes every
// payload and computes a statistic, the weighted sum over releases of the
// released vector's component along the canary's gradient, with the
// weights of the likelihood-ratio test for the algorithm's noise (see
// Weights). The canary is a gradient canary (see linear): the device's
// loss is f(w; z) = <w, x(z)>, the canary's gradient is +c e_1 and the
// replaced sample's is -c e_1 with c > S, so their clipped gradients are S
// apart in opposite directions, exactly the sensitivity 2S/b the
// accountant charges, and orthogonal to every other sample's.
//
// For "local" the first minibatch is the first round's b samples and the
// canary is in its first step batch (sensitivity 2S/(b/K)); with more than
// one hidden step the audit can also give the other step batches a
// concave loss that turns the hidden steps into a latch (Config.Latch,
// latchLoss), so that they carry the first step's outcome into the
// message instead of only adding their noise.
//
// Trials are split: the first Config.Select choose the threshold
// (SelectThreshold), the rest measure the false-positive and
// false-negative rates at it; their Clopper-Pearson upper bounds give the
// lower bound on epsilon (EpsilonLowerBound). Trials are deterministic
// functions of (Config.Seed, trial index), run on Config.Workers
// goroutines.
package audit

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
)

// Algorithms lists the algorithms the audit knows how to attack (their
// releases' structure fixes the statistic's weights).
var Algorithms = []string{"nc", "noisysgd", "local"}

// Config is one audit cell.
type Config struct {
	// Params are the session's public parameters as the coordinator would
	// announce them (Algorithm, Rounds, Batch, Clip and the privacy
	// target). The audit sets M = m = 1, so the device is chosen in every
	// round, and the model to the audit's linear loss of dimension Dim;
	// Features and Classes are overwritten.
	Params optim.Params
	// Dim is the model dimension (>= 1). The canary lives in coordinate
	// 0; with Dim >= 2 the other samples' gradients lie in coordinate 1.
	Dim int
	// OwnerDelta is the delta the claim is stated at (0: plan.DefaultDelta).
	OwnerDelta float64
	// Select is the number of threshold-selection trials, Trials the
	// number of evaluation trials.
	Select, Trials int
	// Alpha is the probability that the lower bound is wrong for a
	// mechanism that meets its claim (0.05 for a 95% bound).
	Alpha float64
	// Seed makes the run reproducible.
	Seed uint64
	// Workers is the number of goroutines (0: GOMAXPROCS).
	Workers int
	// NoiseFactor multiplies every release's noise standard deviation
	// (0 or 1: the product as built). A value below 1 is a deliberately
	// broken mechanism, used to check that the audit catches it: the
	// device is configured with rho_p / NoiseFactor (every algorithm's
	// noise is proportional to 1/rho_p, see plan.ForNoise) while the claim
	// stays the figure of Params.
	NoiseFactor float64
	// Latch, if positive, audits "local" (K >= 2 hidden steps) with the
	// latch canary instead of the linear one: the samples of the first
	// round's step batches 2..K have the concave loss of latchLoss, whose
	// steps push the iterate away from the point the first step reaches
	// when its estimate is t = Delta/2 - Latch * sigma (the canary's mean
	// along e_1 less Latch per-step noise standard deviations, at the
	// claimed noise: the lower tail where the best threshold test of one
	// step sits). The hidden steps then carry the side of t into the
	// message instead of only adding noise; the test's threshold is
	// searched in the lower half of the statistics only (that side is the
	// informative one, fixed before the trials). 0: the linear canary.
	Latch float64
	// Progress, if set, is called with the number of trials done and the
	// total, from one goroutine at a time.
	Progress func(done, total int)
}

// Result is one audit cell's outcome.
type Result struct {
	Algorithm string
	// Claim is the product's own figure for the session (plan.SessionFigures).
	Claim       plan.Figures
	NoiseFactor float64
	Threshold   float64
	// Bound is the lower bound on epsilon from the evaluation trials, at
	// confidence 1 - Alpha, at the claim's delta.
	Bound Bound
	// Tightness is Bound.Epsilon / Claim.Epsilon.
	Tightness float64
	// MuHat is the observed separation of the statistic: (mean with the
	// canary - mean without) / pooled standard deviation, over every
	// trial. MuClaim = sqrt(2 WorstRho) is the separation of the
	// likelihood-ratio test against a Gaussian mechanism with exactly the
	// claimed zCDP rho; GDPEpsilon is the epsilon at delta of a mechanism
	// whose privacy loss were exactly MuHat-GDP. Both are diagnostics, not
	// bounds.
	MuHat, MuClaim, GDPEpsilon float64
	// MuExpected is the separation this canary and statistic have against
	// a device that draws exactly the claimed noise (ExpectedMu): MuClaim
	// for nc and noisysgd, MuClaim/sqrt(K) for local; 0 with the latch
	// canary (its statistic is not Gaussian).
	MuExpected float64
}

// run holds what every trial shares.
type run struct {
	cfg     Config
	dev     optim.Params // the device's parameters (NoiseFactor applied)
	rounds  []optim.Round
	model   model.Model        // linear, or latchLoss with Config.Latch
	batches [][]dataset.Sample // batches[0] is the no-canary first batch
	first1  []dataset.Sample   // the first batch with the canary
	weights []float64          // statistic weight of each release
}

// Run runs the audit cell cfg.
func Run(ctx context.Context, cfg Config) (Result, error) {
	r, claim, err := setup(cfg)
	if err != nil {
		return Result{}, err
	}
	cfg = r.cfg
	out := make([]Outcome, cfg.Select+cfg.Trials)
	if err := r.trials(ctx, out); err != nil {
		return Result{}, err
	}
	sel, eval := out[:cfg.Select], out[cfg.Select:]
	var evalNeg, evalPos int
	for _, o := range eval {
		if o.Canary {
			evalPos++
		} else {
			evalNeg++
		}
	}
	res := Result{Algorithm: cfg.Params.Algorithm, Claim: claim, NoiseFactor: cfg.NoiseFactor}
	// The latch's informative side is the canary's lower tail (Latch):
	// its threshold is searched there only, so the selection trials
	// cannot pick the other tail by chance.
	if res.Threshold, err = selectThreshold(sel, evalNeg, evalPos, claim.Delta, cfg.Alpha, cfg.Latch > 0); err != nil {
		return Result{}, err
	}
	if res.Bound, err = EpsilonLowerBound(CountAt(eval, res.Threshold), claim.Delta, cfg.Alpha); err != nil {
		return Result{}, err
	}
	res.Tightness = res.Bound.Epsilon / claim.Epsilon
	res.MuHat = separation(out)
	res.MuClaim = math.Sqrt(2 * claim.WorstRho)
	if cfg.Latch == 0 {
		res.MuExpected = ExpectedMu(cfg.Params, res.MuClaim)
	}
	if res.MuHat > 0 {
		if res.GDPEpsilon, err = privacy.GDPToEpsilon(res.MuHat, claim.Delta); err != nil {
			return Result{}, fmt.Errorf("audit: %w", err)
		}
	}
	return res, nil
}

// Check reports what Run would refuse in cfg, without running a trial:
// a command checks every cell before it runs the first.
func Check(cfg Config) error {
	_, _, _, err := check(cfg)
	return err
}

// setup validates cfg, fills its defaults and builds the shared state.
func setup(cfg Config) (*run, plan.Figures, error) {
	cfg, m, claim, err := check(cfg)
	if err != nil {
		return nil, plan.Figures{}, err
	}
	p := cfg.Params
	budget, err := algo.ZCDPBudget(p)
	if err != nil {
		return nil, plan.Figures{}, fmt.Errorf("audit: %w", err)
	}
	r := &run{cfg: cfg, dev: DeviceParams(p, budget, cfg.NoiseFactor), model: m}
	if err := algo.Validate(r.dev); err != nil {
		return nil, plan.Figures{}, fmt.Errorf("audit: device parameters: %w", err)
	}
	if r.weights, err = Weights(p); err != nil {
		return nil, plan.Figures{}, err
	}
	if err := r.buildData(); err != nil {
		return nil, plan.Figures{}, err
	}
	return r, claim, nil
}

// check validates cfg and fills its defaults: the audited session's
// parameters, its loss and the product's claim for it.
func check(cfg Config) (Config, model.Model, plan.Figures, error) {
	fail := func(err error) (Config, model.Model, plan.Figures, error) { return Config{}, nil, plan.Figures{}, err }
	if cfg.Dim < 1 || cfg.Dim > mechanism.MaxDim {
		return fail(fmt.Errorf("audit: dimension %d", cfg.Dim))
	}
	if cfg.Select < 2 || cfg.Trials < 2 {
		return fail(fmt.Errorf("audit: %d selection and %d evaluation trials, want at least 2 of each", cfg.Select, cfg.Trials))
	}
	if !(cfg.Alpha > 0 && cfg.Alpha < 1) {
		return fail(fmt.Errorf("audit: alpha = %v, want 0 < alpha < 1", cfg.Alpha))
	}
	if cfg.NoiseFactor == 0 {
		cfg.NoiseFactor = 1
	}
	if !(cfg.NoiseFactor > 0) || math.IsInf(cfg.NoiseFactor, 0) {
		return fail(fmt.Errorf("audit: noise factor %v, want a finite value > 0", cfg.NoiseFactor))
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	p := cfg.Params
	known := false
	for _, a := range Algorithms {
		known = known || a == p.Algorithm
	}
	if !known {
		return fail(fmt.Errorf("audit: algorithm %q is not audited (audited: %v)", p.Algorithm, Algorithms))
	}
	p.M, p.Cohort = 1, 1
	var m model.Model = linear{d: cfg.Dim}
	if p.Algorithm == "local" && p.LocalEpochs > 1 && cfg.Latch == 0 {
		// Several passes: the certified linear loss, so that the session
		// runs by output perturbation, the release the audit is to check
		// (a translation per step: every step carries the canary's shift
		// to the last iterate whole).
		m = model.NewUnitLinear(cfg.Dim)
	}
	if cfg.Latch != 0 {
		if !(cfg.Latch > 0) || math.IsInf(cfg.Latch, 0) {
			return fail(fmt.Errorf("audit: latch %v, want a finite value >= 0", cfg.Latch))
		}
		if p.Algorithm != "local" || p.Batch < 1 || p.StepBatch() >= p.Batch {
			return fail(fmt.Errorf("audit: the latch canary needs \"local\" with at least 2 hidden steps (%s, b = %d, b/K = %d)", p.Algorithm, p.Batch, p.StepBatch()))
		}
		m = latchLoss{d: cfg.Dim}
	}
	p.Model, p.Features, p.Classes = m.Name(), m.(model.Shaped).Features(), 1
	cfg.Params = p
	claim, err := plan.SessionFigures(p, cfg.OwnerDelta)
	if err != nil {
		return fail(fmt.Errorf("audit: %w", err))
	}
	if !claim.Private {
		return fail(fmt.Errorf("audit: %s gives no guarantee to audit", p.Algorithm))
	}
	return cfg, m, claim, nil
}

// DeviceParams is the device's configuration: p with its target carried
// as rho_p (the same noise as the (epsilon, delta) form, as plan.Compute
// does, without re-solving the conversion in every trial), divided by
// noiseFactor.
func DeviceParams(p optim.Params, budget, noiseFactor float64) optim.Params {
	q := p
	q.Rho, q.Epsilon, q.Delta = privacy.PaperRhoFromZCDP(budget)/noiseFactor, 0, 0
	return q
}

// Weights are the statistic's weight for each of the T releases, for a
// canary in the first minibatch. The statistic is sum_k w_k <m_k, e_1>.
//
//   - "nc": the server can sum a device's messages into its partial sums
//     P_N = sum_{k<=N} m_k = sum_{k<=N} V_k + Y_N, whose noises Y_N are
//     independent with standard deviation sigma_N (algo.NoiseScale); the
//     canary is in every P_N. The likelihood-ratio statistic is
//     sum_N <P_N, e_1> / sigma_N^2, i.e. w_k = sum_{N>=k} 1/sigma_N^2.
//   - "noisysgd": only the first release holds the canary (single pass,
//     fresh noise): w_1 = 1, the others 0.
//   - "local": only the first release holds the canary (it is in the first
//     step batch of the first round; single pass). With the audit's linear
//     loss the gradients do not depend on the iterate, and with no
//     projection (Diameter 0) the first message is exactly
//     m_1 = (x_1 - x_K)/eta = sum_j (r_j + Z_j), the sum of the K hidden
//     steps' rounded estimates r_j and independent noises Z_j (each of
//     standard deviation sigma, the per-step calibration). Only r_1
//     depends on the coin, by the sensitivity along e_1, and every other
//     coordinate and release is independent of it, so the log-likelihood
//     ratio of the whole transcript is affine in <m_1, e_1>: w_1 = 1, the
//     others 0. Its separation is Delta/(sigma sqrt(K)) (ExpectedMu).
//     Under output perturbation (E passes, the certified linear loss) the
//     first message is the rounded sum of the noiseless steps plus one
//     noise vector, and again only its first coordinate depends on the
//     coin.
func Weights(p optim.Params) ([]float64, error) {
	T := p.Rounds
	w := make([]float64, T)
	switch p.Algorithm {
	case "nc":
		acc := 0.0
		for n := T; n >= 1; n-- {
			s, err := algo.NoiseScale(p, n)
			if err != nil {
				return nil, fmt.Errorf("audit: %w", err)
			}
			acc += 1 / (s * s)
			w[n-1] = acc
		}
		// Scale so the first weight is 1 (the statistic's units do not matter).
		for i := range w {
			w[i] /= acc
		}
	case "noisysgd", "local":
		w[0] = 1
	default:
		return nil, fmt.Errorf("audit: no statistic for %q", p.Algorithm)
	}
	return w, nil
}

// ExpectedMu is the separation of the audit's statistic against a device
// that draws exactly the claimed noise, given muClaim = sqrt(2 rho) of the
// claim: muClaim for nc and noisysgd, whose canary-carrying releases are
// the charged releases, and muClaim/sqrt(K) for local, whose charge is one
// hidden step (Delta^2/(2 sigma^2)) while its message adds up the noises
// of all K hidden steps (Weights). The gap is the hidden steps' noise, not
// a flaw of the canary: with a linear loss no statistic of the transcript
// separates better (the likelihood ratio is a function of <m_1, e_1>).
//
// Under output perturbation (algo.LocalOutputPerturbation: the
// certified linear loss, E passes) the hidden steps are noiseless and the
// canary enters E of them: the message moves by E Delta along e_1 against
// one noise vector calibrated to LocalReleaseSensitivity = E Delta (1 +
// slack), so mu expected is mu claimed times E Delta /
// LocalReleaseSensitivity, just below 1. Per-step noise with E passes
// (uncertified) would give E Delta / (sigma sqrt(K E)) against the claim
// sqrt(E) Delta / sigma: 1/sqrt(K).
func ExpectedMu(p optim.Params, muClaim float64) float64 {
	if p.Algorithm == "local" {
		if algo.LocalOutputPerturbation(p) {
			e := float64(max(1, p.LocalEpochs))
			return muClaim * e * algo.Sensitivity(p) / algo.LocalReleaseSensitivity(p)
		}
		k := float64(p.Batch / p.StepBatch())
		return muClaim / math.Sqrt(k)
	}
	return muClaim
}

// canaryScale is the canary's gradient norm in units of S: above 1, so
// clipping is active and the clipped gradient has norm exactly S.
const canaryScale = 4

// buildData builds the device's single-pass data: T minibatches of b
// samples. Sample 0 is the replaced sample (gradient -c e_1) or the
// canary (+c e_1); every other sample has gradient S e_2 (0 when Dim = 1),
// except, with the latch canary, the samples of the first round's step
// batches 2..K (latchLoss, threshold -eta t: the query point is 0 and
// the first step moves the iterate to -eta times its estimate).
func (r *run) buildData() error {
	p, d := r.dev, r.cfg.Dim
	S := p.S()
	nf := r.model.(model.Shaped).Features()
	vec := func(i int, v float64) []float32 {
		x := make([]float32, nf)
		if i < d {
			x[i] = float32(v)
		}
		return x
	}
	other := dataset.Sample{X: vec(1, S)}
	r.batches = make([][]dataset.Sample, p.Rounds)
	for t := range r.batches {
		b := make([]dataset.Sample, p.Batch)
		for j := range b {
			b[j] = other
		}
		r.batches[t] = b
	}
	if r.cfg.Latch > 0 {
		// The threshold is the auditor's choice, made at the claimed
		// noise (cfg.Params), before any trial.
		sigma, err := algo.FreshSigma(r.cfg.Params)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		t := algo.Sensitivity(r.cfg.Params)/2 - r.cfg.Latch*sigma
		x := vec(0, canaryScale*S)
		x[d], x[d+1] = 1, float32(-p.Eta*t)
		for j := p.StepBatch(); j < p.Batch; j++ {
			r.batches[0][j] = dataset.Sample{X: x}
		}
	}
	r.first1 = append([]dataset.Sample(nil), r.batches[0]...)
	r.batches[0][0] = dataset.Sample{X: vec(0, -canaryScale*S)}
	r.first1[0] = dataset.Sample{X: vec(0, canaryScale*S)}
	a, _ := algo.Lookup(p.Algorithm)
	zero := make([]float64, d)
	r.rounds = make([]optim.Round, p.Rounds)
	for t := range r.rounds {
		// The coordinator may send any query point; the linear loss's
		// gradients do not depend on it (the latch's threshold assumes 0).
		r.rounds[t] = optim.Round{T: t + 1, X: zero}
		if a.UsesXPrev() {
			r.rounds[t].XPrev = zero
		}
	}
	return nil
}

// TrialSeed is the seed of trial i of a run seeded with seed: the coin
// comes from its coins stream, the device's entropy from its seeds stream.
func TrialSeed(seed uint64, i int) mechanism.Seed {
	var s mechanism.Seed
	copy(s[:], "flaudit\x00")
	binary.LittleEndian.PutUint64(s[8:], seed)
	binary.LittleEndian.PutUint64(s[16:], uint64(i))
	return s
}

// scratch is one worker's buffers.
type scratch struct {
	msg []float64
	// model is the worker's own copy of the audit's model: models may
	// keep scratch space (model.UnitLinear does), so workers must not
	// share one.
	model model.Model
}

// trial runs trial i: the coin, the device's whole session, the statistic.
func (r *run) trial(sc *scratch, i int) (Outcome, error) {
	seed := TrialSeed(r.cfg.Seed, i)
	canary := mechanism.NewStream(seed, mechanism.PurposeCoins).Uint64()&1 == 1
	dv, err := optim.NewDevice(r.dev, sc.model, mechanism.NewStream(seed, mechanism.PurposeSeeds))
	if err != nil {
		return Outcome{}, fmt.Errorf("audit: trial %d: %w", i, err)
	}
	stat := 0.0
	for t, rd := range r.rounds {
		batch := r.batches[t]
		if t == 0 && canary {
			batch = r.first1
		}
		u, err := dv.Prepare(rd, batch)
		if err != nil {
			return Outcome{}, fmt.Errorf("audit: trial %d round %d: %w", i, rd.T, err)
		}
		if err := dv.Commit(rd.T); err != nil {
			return Outcome{}, fmt.Errorf("audit: trial %d round %d: %w", i, rd.T, err)
		}
		// What the coordinator sees: the payload.
		if err := mechanism.Decode(sc.msg, u.Payload); err != nil {
			return Outcome{}, fmt.Errorf("audit: trial %d round %d: %w", i, rd.T, err)
		}
		stat += r.weights[t] * sc.msg[0]
	}
	return Outcome{Stat: stat, Canary: canary}, nil
}

// chunk is the number of trials a worker takes at a time.
const chunk = 256

// trials fills out[i] with trial i, on cfg.Workers goroutines.
func (r *run) trials(ctx context.Context, out []Outcome) error {
	var next, done atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range r.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := &scratch{msg: make([]float64, r.cfg.Dim), model: r.model.Clone()}
			for ctx.Err() == nil {
				lo := int(next.Add(chunk)) - chunk
				if lo >= len(out) {
					return
				}
				hi := min(lo+chunk, len(out))
				for i := lo; i < hi; i++ {
					o, err := r.trial(sc, i)
					if err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						cancel()
						return
					}
					out[i] = o
				}
				n := int(done.Add(int64(hi - lo)))
				if r.cfg.Progress != nil {
					mu.Lock()
					r.cfg.Progress(n, len(out))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if n := done.Load(); int(n) != len(out) {
		return fmt.Errorf("audit: stopped after %d of %d trials: %w", n, len(out), ctx.Err())
	}
	return nil
}

// separation is (mean with - mean without) / pooled standard deviation.
func separation(out []Outcome) float64 {
	var n [2]float64
	var sum, sq [2]float64
	for _, o := range out {
		k := 0
		if o.Canary {
			k = 1
		}
		n[k]++
		sum[k] += o.Stat
	}
	if n[0] < 2 || n[1] < 2 {
		return 0
	}
	mean := [2]float64{sum[0] / n[0], sum[1] / n[1]}
	for _, o := range out {
		k := 0
		if o.Canary {
			k = 1
		}
		dd := o.Stat - mean[k]
		sq[k] += dd * dd
	}
	pooled := math.Sqrt((sq[0] + sq[1]) / (n[0] + n[1] - 2))
	if !(pooled > 0) {
		return 0
	}
	return (mean[1] - mean[0]) / pooled
}
