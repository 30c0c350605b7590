package optim

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
	"browserfl/shared/privacy"
)

// ErrBudget is wrapped by Prepare when a release would take the device's
// ledger beyond the session's per-device budget.
var ErrBudget = errors.New("optim: privacy budget exhausted")

// ErrPending is wrapped by Prepare when the previous round is still
// pending (neither committed nor aborted).
var ErrPending = errors.New("optim: a round is pending")

const deviceMagic = "BFLD"
const deviceVersion = 2

// budgetSlack absorbs the floating-point rounding of the harmonic sum in
// the budget comparison (relative 1e-9; the ledger stays exact).
const budgetSlack = 1 + 1e-9

// device is the device half of every registered algorithm.
type device struct {
	p       Params
	a       algo.Algorithm
	spec    mechanism.Spec
	m       model.Model
	dim     int
	entropy io.Reader
	budget  float64 // zCDP; 0 for non-private
	gamma   float64
	nc      algo.NC // calibration of "nc" and "shared"
	fresh   float64 // per-release sigma (fresh-noise algorithms)
	sens    float64 // per-release sensitivity
	step    float64 // grid step of the discrete release (private algorithms)
	freshZ  int64   // fresh: discrete sigma in grid units

	// committed state
	ledger privacy.Ledger
	n      int // participations (N_i), advanced at Prepare
	lastT  int // last round prepared (replays are refused)
	y      mechanism.NCState
	e      []float64 // error-feedback residual
	h      []float64 // SoteriaFL shift
	vr     reducer   // SVRG and SAGA (its snapshot, table and mean are committed state)

	// caches (not marshalled)
	yvec    []int64 // Y_i in grid units when yOK
	yOK     bool
	clean   []float64 // un-noised estimate of the last Prepare
	cleanOK bool

	pend pending

	// scratch
	v, g, dec   []float64
	vz          []int64 // the estimate on the grid, then the released integers
	vzT         int     // the round whose released integers vz holds (0: none; GridRelease)
	nz          []int64 // fresh noise: the release's draws, in grid units
	buf         []byte
	noise, comp *mechanism.Stream
	coins       *mechanism.Stream

	// refMean, when set (by tests only), replaces batchMean: the
	// benchmarks run the code it replaced against it in one process.
	refMean func(v []float64, r Round, batch []dataset.Sample, bound float64) error
}

type pending struct {
	ok    bool
	t     int
	seed  mechanism.Seed
	sigma int64     // discrete sigma of the new Y_i, grid units (nc)
	yvec  []int64   // the new Y_i (nc)
	e, h  []float64 // new residual / shift
	snap  []float64 // new SVRG snapshot (nil: unchanged)
	idx   []int     // SAGA rows replaced
	rows  []float64 // SAGA new rows, len(idx) x d
}

func newDevice(p Params, a algo.Algorithm, m model.Model, entropy io.Reader) (*device, error) {
	if m == nil {
		return nil, fmt.Errorf("optim: nil model")
	}
	if entropy == nil {
		return nil, fmt.Errorf("optim: nil entropy source")
	}
	spec, _ := mechanism.ParseSpec(p.Compressor)
	d := m.Dim()
	if d < 1 || d > mechanism.MaxDim {
		return nil, fmt.Errorf("optim: model dimension %d", d)
	}
	dv := &device{p: p, a: a, spec: spec, m: m, dim: d, entropy: entropy}
	if a.Kind.Noise == algo.NoiseNC || a.Kind.Noise == algo.NoiseDevice {
		var err error
		b, err := algo.ZCDPBudget(p)
		if err != nil {
			return nil, err
		}
		dv.budget = b
		dv.nc = algo.NewNC(p)
		dv.sens = algo.Sensitivity(p)
		if dv.step, err = mechanism.GridStep(dv.sens, d); err != nil {
			return nil, fmt.Errorf("%w: %v", algo.ErrUnsafe, err)
		}
		if err := mechanism.PostProcessing(spec.C); err != nil {
			return nil, fmt.Errorf("%w: %v", algo.ErrUnsafe, err)
		}
		if a.Kind.Noise == algo.NoiseDevice {
			if dv.fresh, err = algo.FreshSigma(p); err != nil {
				return nil, err
			}
			if dv.freshZ, err = mechanism.DiscreteSigma(dv.fresh, dv.sens, dv.step, d); err != nil {
				return nil, fmt.Errorf("%w: %v", algo.ErrUnsafe, err)
			}
		}
		dv.vz = make([]int64, d)
	}
	dv.gamma = shiftStep(p, spec, d)
	dv.v = make([]float64, d)
	dv.g = make([]float64, d)
	dv.dec = make([]float64, d)
	dv.clean = make([]float64, d)
	dv.buf = make([]byte, 0, spec.C.Size(d))
	if spec.EF {
		dv.e = make([]float64, d)
	}
	if a.Kind.Shifted {
		dv.h = make([]float64, d)
	}
	if a.NeedsLocalData() {
		dv.vr = newReducer(p, a, m, d)
	}
	return dv, nil
}

// LocalDataSetter is implemented by devices of algorithms whose estimator
// runs over the device's whole local dataset ("soteria-svrg",
// "soteria-saga"). Such a device samples its own minibatch of b from the
// local data each round (SoteriaFL Algorithm 3, line 3) and ignores the
// batch argument of Prepare. Call SetLocalData after NewDevice and after
// UnmarshalBinary; the data must be the same across calls (len must equal
// Params.LocalSize).
type LocalDataSetter interface {
	SetLocalData(samples []dataset.Sample) error
}

// Accountant is implemented by every device: its ledger and the cost of
// its next release, so a runtime can refuse rounds beyond an owner's own
// budget before calling Prepare. Devices of "trusted", "mu2" and "sgd" add
// no noise and charge nothing (NextCost is 0); in "trusted" the guarantee,
// rho_p^2/2 per device over the whole run, is the server's to keep.
type Accountant interface {
	// Ledger returns a copy of the device's zCDP ledger (standard rho).
	Ledger() privacy.Ledger
	// NextCost is the zCDP rho the next Prepare will charge.
	NextCost() float64
	// NextSpent is what the ledger will hold after the next Prepare
	// (Ledger().Spent() with the next charge, of its kind, added): the
	// figure an owner's budget is compared with before a release.
	NextSpent() (privacy.Spent, error)
	// Participations is N_i, the number of releases prepared so far.
	Participations() int
}

// Resumer is implemented by every device: the round awaiting Commit or
// Abort (0 if none), for a runtime that restarts between sending an update
// and hearing whether it was included.
type Resumer interface {
	PendingRound() int
}

// Introspector exposes device-internal vectors to tests and to the
// simulator's invariant checks. Nothing here goes on the wire.
type Introspector interface {
	// Noise writes the committed Y_i into dst (zeros for algorithms
	// without noise cancellation).
	Noise(dst []float64) error
	// Residual writes the committed error-feedback residual (zeros without
	// error feedback).
	Residual(dst []float64) error
	// Clean writes the un-noised, clipped estimate of the last Prepare
	// (for the private algorithms, rounded onto the release grid: the
	// value that enters the release).
	Clean(dst []float64) error
}

func (dv *device) Ledger() privacy.Ledger { return dv.ledger }
func (dv *device) Participations() int    { return dv.n }

func (dv *device) NextSpent() (privacy.Spent, error) {
	l := dv.ledger
	if err := l.ChargeRho(dv.NextCost()); err != nil {
		return privacy.Spent{}, fmt.Errorf("optim: next release: %w", err)
	}
	return l.Spent(), nil
}

func (dv *device) NextCost() float64 {
	switch dv.a.Kind.Noise {
	case algo.NoiseNC:
		s := dv.nc.ChargeSigma(dv.n + 1)
		return dv.sens * dv.sens / (2 * s * s)
	case algo.NoiseDevice:
		c := dv.sens * dv.sens / (2 * dv.fresh * dv.fresh)
		if dv.p.ParallelComposition() {
			// Disjoint releases: the transcript costs the largest
			// single release, so only the increase over what is
			// already charged is new.
			return max(0, c-dv.ledger.Rho())
		}
		return c
	}
	return 0
}

func (dv *device) Noise(dst []float64) error {
	if len(dst) != dv.dim {
		return fmt.Errorf("optim: buffer length %d, want %d", len(dst), dv.dim)
	}
	if err := dv.ensureY(); err != nil {
		return err
	}
	if !dv.y.Has {
		clear(dst)
		return nil
	}
	mechanism.FromGrid(dst, dv.yvec, dv.step)
	return nil
}

func (dv *device) Residual(dst []float64) error {
	if len(dst) != dv.dim {
		return fmt.Errorf("optim: buffer length %d, want %d", len(dst), dv.dim)
	}
	if dv.e == nil {
		clear(dst)
	} else {
		copy(dst, dv.e)
	}
	return nil
}

func (dv *device) Clean(dst []float64) error {
	if len(dst) != dv.dim {
		return fmt.Errorf("optim: buffer length %d, want %d", len(dst), dv.dim)
	}
	if !dv.cleanOK {
		return fmt.Errorf("optim: no estimate prepared yet")
	}
	copy(dst, dv.clean)
	return nil
}

func (dv *device) SetLocalData(samples []dataset.Sample) error {
	if !dv.a.NeedsLocalData() {
		return fmt.Errorf("optim: %s does not use local data", dv.a.Name)
	}
	if len(samples) != dv.p.LocalSize {
		return fmt.Errorf("optim: %d local samples, Params.LocalSize = %d", len(samples), dv.p.LocalSize)
	}
	for i, s := range samples {
		if err := model.CheckSample(dv.m, s); err != nil {
			return fmt.Errorf("optim: local sample %d: %w", i, err)
		}
	}
	dv.vr.setLocal(samples)
	return nil
}

// ensureY makes yvec hold Y_i (regenerating it from its seed if needed).
func (dv *device) ensureY() error {
	if !dv.y.Has || dv.yOK {
		return nil
	}
	if dv.yvec == nil {
		dv.yvec = make([]int64, dv.dim)
	}
	dv.noise = streamFor(dv.noise, dv.y.Seed, mechanism.PurposeNoise)
	dv.noise.FillDiscreteGaussian(dv.yvec, dv.y.Sigma)
	dv.yOK = true
	return nil
}

// batchMean adds to v the mean over batch of the clipped per-sample
// quantities of the device's estimator at the round's points
// (estimator.mean).
func (dv *device) batchMean(v []float64, r Round, batch []dataset.Sample, bound float64) error {
	return dv.estimator().mean(v, r, r.X, batch, bound)
}

func (dv *device) estimator() estimator {
	return estimator{m: dv.m, g: dv.g, mu2: dv.a.Kind.Est == algo.EstMu2}
}

// estimator computes the clipped per-sample quantities of the estSGD and
// estMu2 estimators (mu2): grad f(at; s), or the mu^2 correction t grad
// f(x_t; s) - (t-1) grad f(x_{t-1}; s) at the round's points; g is
// scratch of the model's dimension. The one home of the per-sample
// clipping of the one-step algorithms and of the hidden steps of "local".
type estimator struct {
	m   model.Model
	g   []float64
	mu2 bool
}

// grad writes into dst the per-sample quantity, checked finite and
// clipped to bound (not clipped when bound <= 0).
func (e estimator) grad(dst []float64, r Round, s dataset.Sample, at []float64, bound float64) error {
	if e.mu2 {
		t := float64(r.T)
		model.GradDiff(e.m, dst, t, r.X, t-1, r.XPrev, s)
	} else {
		e.m.Grad(dst, at, s)
	}
	if !(bound > 0) {
		if err := mechanism.CheckFinite(dst); err != nil {
			return fmt.Errorf("optim: gradient: %w", err)
		}
		return nil
	}
	if _, err := mechanism.ClipFinite(dst, bound); err != nil {
		return fmt.Errorf("optim: gradient: %w", err)
	}
	return nil
}

// mean adds to v the mean over batch of the per-sample quantities, each
// checked finite and clipped to bound (the SGD estimator's at at). For a
// model whose per-sample quantity is rank-one (model.Factored) it clips
// by the norm the model computes from the factors and adds the scaled
// quantity without forming it (ghost clipping; the per-sample quantity is
// what is clipped, exactly as on the other path). Otherwise it forms each
// quantity, checks and clips it in two passes (mechanism.ClipFinite) and
// adds it.
func (e estimator) mean(v []float64, r Round, at []float64, batch []dataset.Sample, bound float64) error {
	b := float64(len(batch))
	fm, ghost := e.m.(model.Factored)
	if !ghost {
		for j, s := range batch {
			if err := e.grad(e.g, r, s, at, bound); err != nil {
				return fmt.Errorf("sample %d: %w", j, err)
			}
			for i, x := range e.g {
				v[i] += x / b
			}
		}
		return nil
	}
	t := float64(r.T)
	for j, s := range batch {
		var n float64
		if e.mu2 {
			n = fm.FactorGradDiff(t, r.X, t-1, r.XPrev, s)
		} else {
			n = fm.FactorGradDiff(1, at, 0, nil, s)
		}
		if !(n <= math.MaxFloat64) {
			return fmt.Errorf("sample %d: optim: gradient: non-finite norm %v", j, n)
		}
		f := 1.0
		if bound > 0 {
			f = mechanism.ClipFactor(n, bound)
		}
		fm.AddFactor(v, f/b)
	}
	return nil
}

// Prepare makes the release of round r from batch, in stages: check the
// round, refuse a release the budget does not allow, draw the release's
// seed, estimate, round onto the grid, privatise, compress, and charge.
// Nothing is charged or kept pending unless every stage succeeds.
func (dv *device) Prepare(r Round, batch []dataset.Sample) (Update, error) {
	if err := dv.checkRound(r); err != nil {
		return Update{}, err
	}
	dv.vzT = 0 // vz is scratch from here on
	// Privacy first: refuse before computing anything.
	cost := dv.NextCost()
	if err := dv.checkBudget(cost); err != nil {
		return Update{}, err
	}
	sigmaZ, err := dv.releaseSigma()
	if err != nil {
		return Update{}, err
	}
	seed, err := mechanism.NewSeed(dv.entropy)
	if err != nil {
		return Update{}, fmt.Errorf("optim: release seed: %w", err)
	}
	dv.coins = streamFor(dv.coins, seed, mechanism.PurposeCoins)
	var p pending
	if err := dv.estimate(r, batch, &p); err != nil {
		return Update{}, err
	}
	if err := dv.roundToGrid(); err != nil {
		return Update{}, err
	}
	if err := dv.privatise(&p, seed, sigmaZ); err != nil {
		return Update{}, err
	}
	payload, err := dv.compress(&p, seed)
	if err != nil {
		return Update{}, err
	}
	if err := dv.charge(cost); err != nil {
		return Update{}, err
	}
	dv.lastT = r.T
	if dv.vz != nil {
		dv.vzT = r.T
	}
	p.ok, p.t, p.seed = true, r.T, seed
	dv.pend = p
	out := make([]byte, len(payload))
	copy(out, payload)
	return Update{T: r.T, Payload: out}, nil
}

// checkRound refuses a round the device must not answer: one while a
// release is pending, one not after the last, one beyond T or the release
// cap, or a model point of the wrong dimension or not finite.
func (dv *device) checkRound(r Round) error {
	if dv.pend.ok {
		return fmt.Errorf("%w: round %d (commit or abort it first)", ErrPending, dv.pend.t)
	}
	if r.T <= dv.lastT {
		return fmt.Errorf("optim: round %d is not after the last prepared round %d", r.T, dv.lastT)
	}
	if r.T > dv.p.Rounds {
		return fmt.Errorf("optim: round %d beyond T = %d", r.T, dv.p.Rounds)
	}
	if dv.n >= dv.p.ReleaseCap() {
		// Every calibration and stated worst case (plan.Compute) counts
		// at most ReleaseCap releases per device (MaxReleases, or T). An
		// aborted round may be asked again (Abort), and each answer is a
		// release: the one after the cap is refused whatever the ledger
		// says, so re-asks never add a release the worst case did not
		// count.
		return fmt.Errorf("%w: %d releases made, the most a device makes in this session (max releases %d, T = %d)", ErrBudget, dv.n, dv.p.ReleaseCap(), dv.p.Rounds)
	}
	if len(r.X) != dv.dim {
		return fmt.Errorf("optim: x has dimension %d, want %d", len(r.X), dv.dim)
	}
	if err := mechanism.CheckFinite(r.X); err != nil {
		return fmt.Errorf("optim: x: %w", err)
	}
	if dv.a.Kind.Mu2 {
		if len(r.XPrev) != dv.dim {
			return fmt.Errorf("optim: x_prev has dimension %d, want %d", len(r.XPrev), dv.dim)
		}
		if err := mechanism.CheckFinite(r.XPrev); err != nil {
			return fmt.Errorf("optim: x_prev: %w", err)
		}
	}
	return nil
}

// checkBudget refuses a release of this cost that would take the ledger
// past the session's per-device budget.
func (dv *device) checkBudget(cost float64) error {
	if dv.budget > 0 && dv.ledger.Rho()+cost > dv.budget*budgetSlack {
		return fmt.Errorf("%w: spent %.6g of %.6g, next release costs %.6g", ErrBudget, dv.ledger.Rho(), dv.budget, cost)
	}
	return nil
}

// releaseSigma returns the discrete sigma (grid units) of the next
// release's noise (0 when the device adds none), after checking that the
// compressor is post-processing of a private release.
func (dv *device) releaseSigma() (int64, error) {
	if dv.vz != nil {
		if err := mechanism.PostProcessing(dv.spec.C); err != nil {
			return 0, fmt.Errorf("%w: %v", algo.ErrUnsafe, err)
		}
	}
	switch dv.a.Kind.Noise {
	case algo.NoiseNC:
		return dv.ncSigmaZ(dv.n + 1)
	case algo.NoiseDevice:
		return dv.freshZ, nil
	}
	return 0, nil
}

// estimate computes the round's clipped estimate into dv.v: the batch
// mean (SGD, mu^2), or the SVRG or SAGA estimate, whose state changes go
// to p.
func (dv *device) estimate(r Round, batch []dataset.Sample, p *pending) error {
	v := dv.v
	clear(v)
	switch dv.a.Kind.Est {
	case algo.EstSGD, algo.EstMu2:
		if len(batch) != dv.p.Batch {
			return fmt.Errorf("optim: batch of %d samples, want b = %d (the sensitivity assumes exactly b)", len(batch), dv.p.Batch)
		}
		for j, s := range batch {
			if err := model.CheckSample(dv.m, s); err != nil {
				return fmt.Errorf("optim: sample %d: %w", j, err)
			}
		}
		mean := dv.batchMean
		if dv.refMean != nil {
			mean = dv.refMean
		}
		return mean(v, r, batch, dv.p.S())
	case algo.EstSVRG:
		return dv.vr.svrg(v, r, p, dv.coins)
	case algo.EstSAGA:
		return dv.vr.saga(v, r, p, dv.coins)
	}
	return nil
}

// roundToGrid rounds a private release's estimate dv.v onto the grid
// (dv.vz; see the package doc, "Floating point"): the rounded estimate is
// what enters the release. dv.clean keeps the estimate.
func (dv *device) roundToGrid() error {
	v := dv.v
	if dv.vz != nil {
		if err := mechanism.ToGrid(dv.vz, v, dv.step); err != nil {
			return fmt.Errorf("%w: %v", algo.ErrUnsafe, err)
		}
		mechanism.FromGrid(v, dv.vz, dv.step)
	}
	copy(dv.clean, v)
	dv.cleanOK = true
	return nil
}

// privatise adds the release's noise in integers (the released vector is
// step * vz) and leaves the released vector in dv.v: "nc" draws Y with
// sigmaZ and cancels the committed Y_i (the new Y goes to p), the other
// private algorithms draw fresh noise.
func (dv *device) privatise(p *pending, seed mechanism.Seed, sigmaZ int64) error {
	switch dv.a.Kind.Noise {
	case algo.NoiseNC:
		if err := dv.ensureY(); err != nil {
			return err
		}
		if dv.pend.yvec == nil {
			dv.pend.yvec = make([]int64, dv.dim)
		}
		p.yvec = dv.pend.yvec
		dv.noise = streamFor(dv.noise, seed, mechanism.PurposeNoise)
		dv.noise.FillDiscreteGaussian(p.yvec, sigmaZ)
		if dv.y.Has {
			for i := range dv.vz {
				dv.vz[i] += p.yvec[i] - dv.yvec[i]
			}
		} else {
			for i := range dv.vz {
				dv.vz[i] += p.yvec[i]
			}
		}
		p.sigma = sigmaZ
		mechanism.FromGrid(dv.v, dv.vz, dv.step)
	case algo.NoiseDevice:
		dv.noise = streamFor(dv.noise, seed, mechanism.PurposeNoise)
		if dv.nz == nil {
			dv.nz = make([]int64, dv.dim)
		}
		dv.noise.FillDiscreteGaussian(dv.nz, sigmaZ)
		for i, n := range dv.nz {
			dv.vz[i] += n
		}
		mechanism.FromGrid(dv.v, dv.vz, dv.step)
	}
	return nil
}

// compress encodes the released vector dv.v (post-processing): shifted
// compression or error feedback keep their new state in p. The payload is
// dv.buf, reused by the next release.
func (dv *device) compress(p *pending, seed mechanism.Seed) ([]byte, error) {
	dv.comp = streamFor(dv.comp, seed, mechanism.PurposeCompress)
	var payload []byte
	var err error
	switch {
	case dv.h != nil:
		p.h = dv.pendVec(dv.pend.h)
		payload, err = mechanism.Shifted(dv.spec.C, dv.buf, dv.dec, p.h, dv.v, dv.h, dv.gamma, dv.comp)
	case dv.e != nil:
		p.e = dv.pendVec(dv.pend.e)
		payload, err = mechanism.ErrorFeedback(dv.spec.C, dv.buf, dv.dec, p.e, dv.v, dv.e, dv.comp)
	default:
		payload, err = dv.spec.C.Compress(dv.buf, dv.dec, dv.v, dv.comp)
	}
	if err != nil {
		return nil, fmt.Errorf("optim: compress: %w", err)
	}
	dv.buf = payload
	return payload, nil
}

// charge records the release as the message leaves: the ledger is charged
// its cost and N_i advances.
func (dv *device) charge(cost float64) error {
	if cost > 0 || dv.p.ParallelComposition() { // a parallel release after the first is charged 0 but counted
		if err := dv.ledger.ChargeRho(cost); err != nil {
			return fmt.Errorf("optim: ledger: %w", err)
		}
	}
	dv.n++
	return nil
}

// ncSigmaZ is the discrete sigma (grid units) of the n-th participation
// in "nc" and "shared": algo.NCSigma (for "shared" the share, ShareScale times
// nc's) calibrated to the grid sensitivity. A value beyond the
// exact sampler's range is refused (algo.ErrUnsafe), before anything is drawn
// or charged.
func (dv *device) ncSigmaZ(n int) (int64, error) {
	z, err := mechanism.DiscreteSigma(dv.nc.Sigma(n), dv.sens, dv.step, dv.dim)
	if err != nil {
		return 0, fmt.Errorf("%w: participation %d: %v", algo.ErrUnsafe, n, err)
	}
	return z, nil
}

// pendVec returns buf, or a new d-vector when buf is nil.
func (dv *device) pendVec(buf []float64) []float64 {
	if buf == nil {
		return make([]float64, dv.dim)
	}
	return buf
}

func (dv *device) Commit(t int) error {
	if !dv.pend.ok || dv.pend.t != t {
		return fmt.Errorf("optim: commit of round %d, pending round is %d", t, dv.PendingRound())
	}
	p := &dv.pend
	if dv.a.Kind.Noise == algo.NoiseNC {
		dv.y = mechanism.NCState{N: dv.n, Has: true, Seed: p.seed, Sigma: p.sigma, Dim: dv.dim}
		if p.yvec != nil {
			dv.yvec, p.yvec = p.yvec, dv.yvec
			dv.yOK = true
		} else {
			dv.yOK = false
		}
	}
	if p.e != nil {
		dv.e, p.e = p.e, dv.e
	}
	if p.h != nil {
		dv.h, p.h = p.h, dv.h
	}
	dv.vr.commit(p)
	dv.clearPending()
	return nil
}

func (dv *device) Abort(t int) error {
	if !dv.pend.ok || dv.pend.t != t {
		return fmt.Errorf("optim: abort of round %d, pending round is %d", t, dv.PendingRound())
	}
	dv.clearPending()
	// A round that was not included may be assigned again (a coordinator
	// that crashed mid-round restarts it from its store), so round t is
	// open again; earlier rounds stay closed. The release already made is
	// charged, so answering again costs budget, never more than it, and
	// counts towards the T releases Prepare allows.
	dv.lastT = t - 1
	return nil
}

// clearPending drops the pending state but keeps its buffers for reuse.
func (dv *device) clearPending() {
	dv.pend = pending{yvec: dv.pend.yvec, e: dv.pend.e, h: dv.pend.h}
}

// PendingRound returns the round whose update awaits Commit or Abort, or 0.
func (dv *device) PendingRound() int {
	if !dv.pend.ok {
		return 0
	}
	return dv.pend.t
}

// GridReleaser is implemented by the device halves of the private
// algorithms whose releases are integers on a grid ("nc", "shared", and
// the fresh-noise ones): GridRelease returns a copy of the integers of
// round t's pending release (the released vector is the grid step times
// them), or an error when round t is not pending.
type GridReleaser interface {
	GridRelease(t int) ([]int64, error)
}

var _ GridReleaser = (*device)(nil)

// GridRelease implements GridReleaser.
func (dv *device) GridRelease(t int) ([]int64, error) {
	if !dv.pend.ok || dv.pend.t != t {
		return nil, fmt.Errorf("optim: grid release of round %d, pending round is %d", t, dv.PendingRound())
	}
	if dv.vz == nil || dv.vzT != t {
		// No integers, or a pending round restored from a saved state,
		// whose integers were never saved.
		return nil, fmt.Errorf("optim: no grid release of round %d held (%q)", t, dv.p.Algorithm)
	}
	return slices.Clone(dv.vz), nil
}
