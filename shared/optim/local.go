package optim

import (
	"errors"
	"fmt"
	"io"
	"math"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/privacy"
)

// "local": private local training. A device chosen at round t starts from
// the query point x_t and runs E = Params.LocalEpochs passes (default 1)
// over the round's b samples taken in order, in K = Params.LocalSteps step
// batches of b/K (cyclic: K E hidden noisy SGD steps),
//
//	v_j     = step * (round_grid(mean of b/K clipped gradients at x_{j-1}) + Z_j),  Z_j discrete Gaussian
//	x_j     = Pi_K(x_{j-1} - eta v_j)
//
// and releases only (x_t - x_{KE})/eta (the sum of the v_j when nothing is
// projected; then the iterate is kept as x_t minus eta times an integer
// sum on the grid). The server takes the SGD-family step x_{t+1} =
// Pi_K(x_t - eta (1/m) sum msg), i.e. it averages the devices' last
// iterates (FedAvg with server step 1; a missing device counts as no move).
//
// Privacy (docs/privacy.md, section 4b): every hidden v_j is an exact
// discrete Gaussian release of its step batch (replace-one sensitivity
// 2S/(b/K), Sensitivity), calibrated like a noisy-SGD release (FreshSigma,
// DiscreteSigma). With one pass every sample enters one step of one round,
// so the device's whole transcript costs one step's zCDP
// (ParallelComposition). With E passes a round costs LocalCharge steps:
// E by composition, or, when the model certifies convexity and nothing is
// clipped or projected, the last-iterate bound privacy.ShiftedCyclicCost
// (about 1 + (E-1)/K), proven in section 4b. Kong and Ribero's Theorems
// 4.4-4.5 are not used: they do not hold for this construction (clipped
// steps, the last batch, lattice noise; see privacy.LastIterate's doc).
type localDevice struct {
	p       Params
	a       Algorithm
	spec    mechanism.Spec
	m       model.Model
	dim     int
	entropy io.Reader
	budget  float64 // zCDP
	sens    float64 // per-step replace-one sensitivity 2S/(b/K)
	sigma   float64 // per-step continuous calibration (FreshSigma)
	step    float64 // grid step
	sigmaZ  int64   // per-step discrete sigma in grid units
	k, bs   int     // K local steps, b/K samples per step
	epochs  int     // E passes over the K step batches
	charge  float64 // zCDP of one round (LocalCharge steps)
	li      bool    // the charge is the last-iterate one (Gaussian DP plus tv)
	tv      float64 // the round's coupling term, localTV (li only)
	radius  float64

	ledger privacy.Ledger
	n      int // releases prepared
	lastT  int
	pendOK bool
	pendT  int

	clean   []float64 // sum over the steps of the rounded un-noised estimates
	cleanOK bool

	x, v, g, msg, dec []float64
	est               estimator // the step estimate (SGD: gradients at the local iterate)
	sum               []int64   // the sum of the steps' releases, in grid units
	nz                []int64   // a step's noise vector, in grid units
	buf               []byte
	noise, comp       *mechanism.Stream
}

// localSteps is K for "local" (LocalSteps, or Batch when 0).
func (p Params) localSteps() int {
	if p.LocalSteps > 0 {
		return p.LocalSteps
	}
	return p.Batch
}

// StepBatch is the number of samples in each hidden local step of
// "local" (Batch / K); Batch for every other algorithm.
func (p Params) StepBatch() int {
	if p.Algorithm != "local" {
		return p.Batch
	}
	k := p.localSteps()
	if k < 1 {
		return p.Batch
	}
	return p.Batch / k
}

// localEpochs is E for "local" (LocalEpochs, or 1 when 0).
func (p Params) localEpochs() int { return max(1, p.LocalEpochs) }

// HiddenSteps is the number of hidden steps behind one release of
// "local" (K E: E passes over K step batches); 1 for every other
// algorithm.
func (p Params) HiddenSteps() int {
	if p.Algorithm != "local" {
		return 1
	}
	return p.localSteps() * p.localEpochs()
}

// localGridRefine makes the grid of "local" finer than other releases'
// (GridStep of Delta/localGridRefine): its steps' roundings then add
// less to the last-iterate charge (localShiftSlack), about 0.5% at 2,000
// hidden steps instead of 9%.
const localGridRefine = 16

// localShiftSlack bounds, in units of one step's shift Delta/s (grid
// units), what a step of "local" can add to the distance between two runs
// besides the record's own change: two roundings onto the grid, sqrt(d)
// each (the step's estimate and the iterate), where the grid makes
// Delta/s >= localGridRefine GridFactor sqrt(d); the factor 1.001 covers
// the float64 rounding of the gradients, far below a grid step
// (docs/privacy.md 4b).
const localShiftSlack = 2 * 1.001 / (localGridRefine * mechanism.GridFactor)

// LocalCharge is the zCDP one round of "local" costs, in units of one
// hidden step's Delta^2/(2 sigma^2), and whether the last-iterate bound
// gives it. With E = 1 every sample enters one step: 1. With E > 1 passes
// every sample enters E steps, which composition charges E; when the
// model certifies convexity (model.Convexity: the per-sample losses are
// convex and beta-smooth with gradients of norm at most G), nothing is
// clipped (S >= G), a step is nonexpansive (eta <= 2/beta) and nothing is
// projected (D = 0), the released last iterate costs
// privacy.ShiftedCyclicCost(K, E, 1, localShiftSlack) instead, about
// 1 + (E-1)/K (privacy amplification by iteration; docs/privacy.md 4b).
// The smaller of the two is charged. Rounds use disjoint samples, so a
// device's whole session costs one round's charge.
func LocalCharge(p Params) (factor float64, lastIterate bool, err error) {
	e := p.localEpochs()
	if e == 1 {
		return 1, false, nil
	}
	if !certifiedLocal(p) {
		return float64(e), false, nil
	}
	k := p.localSteps()
	f, err := privacy.ShiftedCyclicCost(k, e, 1, localShiftSlack)
	if err != nil {
		return 0, false, fmt.Errorf("optim: local charge: %w", err)
	}
	if f >= float64(e) {
		return float64(e), false, nil
	}
	return f, true, nil
}

// certifiedLocal reports whether every hidden step of "local" under p is
// a nonexpansive map of the iterate plus the record's bounded change: a
// certified model, no clipping, eta <= 2/beta, no projection.
func certifiedLocal(p Params) bool {
	G, beta, ok := model.Convexity(p.Model)
	return ok && p.S() >= G && p.Eta > 0 && p.Eta*beta <= 2 && p.Diameter == 0
}

// validateLocal checks the fields only "local" uses.
func validateLocal(p Params, k kind, spec mechanism.Spec) []error {
	var errs []error
	if k.est != estLocal {
		if p.LocalSteps != 0 {
			errs = append(errs, fmt.Errorf("local steps = %d: only \"local\" runs local steps", p.LocalSteps))
		}
		if p.LocalEpochs != 0 {
			errs = append(errs, fmt.Errorf("local epochs = %d: only \"local\" runs local passes", p.LocalEpochs))
		}
		return errs
	}
	K := p.localSteps()
	switch {
	case p.LocalSteps < 0:
		errs = append(errs, fmt.Errorf("local steps = %d, want >= 0 (0 = b)", p.LocalSteps))
	case p.Batch >= 1 && (K > p.Batch || p.Batch%K != 0):
		errs = append(errs, fmt.Errorf("local steps K = %d must divide the batch b = %d (b/K samples per step)", K, p.Batch))
	}
	switch E := p.localEpochs(); {
	case p.LocalEpochs < 0 || p.LocalEpochs > MaxLocalEpochs:
		errs = append(errs, fmt.Errorf("local epochs = %d, want 0 to %d (0 = 1)", p.LocalEpochs, MaxLocalEpochs))
	case K >= 1 && K > privacy.MaxShiftedSteps/E:
		errs = append(errs, fmt.Errorf("local steps K = %d and epochs E = %d: %d hidden steps a round, at most %d", K, E, K*E, privacy.MaxShiftedSteps))
	}
	if spec.EF {
		errs = append(errs, fmt.Errorf("compressor %q: error feedback is not implemented for \"local\"", p.Compressor))
	}
	return errs
}

func newLocalDevice(p Params, a Algorithm, m model.Model, entropy io.Reader) (*localDevice, error) {
	if m == nil {
		return nil, fmt.Errorf("optim: nil model")
	}
	if entropy == nil {
		return nil, fmt.Errorf("optim: nil entropy source")
	}
	d := m.Dim()
	if d < 1 || d > mechanism.MaxDim {
		return nil, fmt.Errorf("optim: model dimension %d", d)
	}
	spec, _ := mechanism.ParseSpec(p.Compressor)
	if err := mechanism.PostProcessing(spec.C); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsafe, err)
	}
	dv := &localDevice{p: p, a: a, spec: spec, m: m, dim: d, entropy: entropy,
		k: p.localSteps(), bs: p.StepBatch(), epochs: p.localEpochs(), radius: p.Diameter / 2}
	var err error
	if dv.budget, err = p.ZCDPBudget(); err != nil {
		return nil, err
	}
	dv.sens = Sensitivity(p)
	if dv.sigma, err = FreshSigma(p); err != nil {
		return nil, err
	}
	if dv.step, err = mechanism.GridStep(dv.sens/localGridRefine, d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsafe, err)
	}
	if dv.sigmaZ, err = mechanism.DiscreteSigma(dv.sigma, dv.sens, dv.step, d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsafe, err)
	}
	factor, li, err := LocalCharge(p)
	if err != nil {
		return nil, err
	}
	dv.charge = factor * dv.sens * dv.sens / (2 * dv.sigma * dv.sigma)
	if li {
		// The last-iterate proof couples the noise of every step from
		// the record's first use to the last (K E at most) with a
		// rounded continuous Gaussian: their total variation must stay
		// within the ledger's slack (DiscreteSigma checked one step's).
		if m.Name() != p.Model {
			return nil, fmt.Errorf("%w: the last-iterate charge is certified for model %q, the device runs %q", ErrUnsafe, p.Model, m.Name())
		}
		tv := localTV(dv.k, dv.epochs, d, dv.sigmaZ)
		if !(tv <= privacy.DiscretisationSlack*dv.charge) {
			return nil, fmt.Errorf("%w: %d steps of discrete noise sigma_Z = %d: total variation %.3g over the slack %.3g", ErrUnsafe, dv.k*dv.epochs, dv.sigmaZ, tv, privacy.DiscretisationSlack*dv.charge)
		}
		dv.li, dv.tv = true, tv
	}
	for _, v := range []*[]float64{&dv.clean, &dv.x, &dv.v, &dv.g, &dv.msg, &dv.dec} {
		*v = make([]float64, d)
	}
	dv.est = estimator{m: m, g: dv.g}
	dv.sum, dv.nz = make([]int64, d), make([]int64, d)
	dv.buf = make([]byte, 0, spec.C.Size(d))
	return dv, nil
}

// localTV is the coupling term of one round of "local" with the
// last-iterate charge: K E d RoundedGaussianTV(sigma_Z), the total
// variation of replacing the discrete noise of its K E hidden steps by
// rounded continuous Gaussians (docs/privacy.md 4b, step 1). It is what
// the ledger records with the charge (privacy.Ledger.ChargeLastIterate).
func localTV(k, e, d int, sigmaZ int64) float64 {
	return float64(k*e) * float64(d) * privacy.RoundedGaussianTV(float64(sigmaZ))
}

// LocalTV is the coupling term one round of "local" records in the
// ledger with a last-iterate charge, for a model of dimension d (0 when
// LocalCharge is not the last-iterate one): the planner states the
// figure a device's ledger will hold. It derives sigma_Z as the device
// does (FreshSigma, GridStep, DiscreteSigma).
func LocalTV(p Params, d int) (float64, error) {
	_, li, err := LocalCharge(p)
	if err != nil || !li {
		return 0, err
	}
	sens := Sensitivity(p)
	sigma, err := FreshSigma(p)
	if err != nil {
		return 0, err
	}
	step, err := mechanism.GridStep(sens/localGridRefine, d)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnsafe, err)
	}
	sz, err := mechanism.DiscreteSigma(sigma, sens, step, d)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnsafe, err)
	}
	return localTV(p.localSteps(), p.localEpochs(), d, sz), nil
}

func (dv *localDevice) Ledger() privacy.Ledger { return dv.ledger }
func (dv *localDevice) Participations() int    { return dv.n }

// NextCost is one round's zCDP, LocalCharge steps of Delta^2/(2 sigma^2)
// each, less what is already charged: rounds use disjoint samples, so the
// transcript costs the largest round (parallel composition), and only the
// first release adds.
func (dv *localDevice) NextCost() float64 {
	return max(0, dv.charge-dv.ledger.Rho())
}

// chargeTo adds a release of zCDP cost to l as this device records it:
// the round's last-iterate charge with its coupling term, or an ordinary
// one (every release of a one-pass or composed session, and the later
// rounds' zero).
func (dv *localDevice) chargeTo(l *privacy.Ledger, cost float64) error {
	if dv.li && cost > 0 {
		return l.ChargeLastIterate(cost, dv.tv)
	}
	return l.ChargeRho(cost)
}

// NextSpent is the ledger after the next release.
func (dv *localDevice) NextSpent() (privacy.Spent, error) {
	l := dv.ledger
	if err := dv.chargeTo(&l, dv.NextCost()); err != nil {
		return privacy.Spent{}, fmt.Errorf("optim: next release: %w", err)
	}
	return l.Spent(), nil
}

func (dv *localDevice) PendingRound() int {
	if !dv.pendOK {
		return 0
	}
	return dv.pendT
}

// Noise writes zeros: "local" keeps no noise state across rounds.
func (dv *localDevice) Noise(dst []float64) error { return dv.zeros(dst) }

// Residual writes zeros: "local" has no error feedback.
func (dv *localDevice) Residual(dst []float64) error { return dv.zeros(dst) }

func (dv *localDevice) zeros(dst []float64) error {
	if len(dst) != dv.dim {
		return fmt.Errorf("optim: buffer length %d, want %d", len(dst), dv.dim)
	}
	clear(dst)
	return nil
}

// Clean writes the sum over the last Prepare's K steps of the rounded,
// un-noised step estimates: without projection the message minus the
// noise.
func (dv *localDevice) Clean(dst []float64) error {
	if len(dst) != dv.dim {
		return fmt.Errorf("optim: buffer length %d, want %d", len(dst), dv.dim)
	}
	if !dv.cleanOK {
		return fmt.Errorf("optim: no estimate prepared yet")
	}
	copy(dst, dv.clean)
	return nil
}

func (dv *localDevice) Prepare(r Round, batch []dataset.Sample) (Update, error) {
	if dv.pendOK {
		return Update{}, fmt.Errorf("%w: round %d (commit or abort it first)", ErrPending, dv.pendT)
	}
	if r.T <= dv.lastT {
		return Update{}, fmt.Errorf("optim: round %d is not after the last prepared round %d", r.T, dv.lastT)
	}
	if r.T > dv.p.Rounds {
		return Update{}, fmt.Errorf("optim: round %d beyond T = %d", r.T, dv.p.Rounds)
	}
	if dv.n >= dv.p.Rounds {
		return Update{}, fmt.Errorf("%w: %d releases made, the most a device makes in a session of T = %d rounds", ErrBudget, dv.n, dv.p.Rounds)
	}
	if len(r.X) != dv.dim {
		return Update{}, fmt.Errorf("optim: x has dimension %d, want %d", len(r.X), dv.dim)
	}
	if err := mechanism.CheckFinite(r.X); err != nil {
		return Update{}, fmt.Errorf("optim: x: %w", err)
	}
	if len(batch) != dv.p.Batch {
		return Update{}, fmt.Errorf("optim: batch of %d samples, want b = %d (the sensitivity assumes exactly b/K per step)", len(batch), dv.p.Batch)
	}
	for j, s := range batch {
		if err := model.CheckSample(dv.m, s); err != nil {
			return Update{}, fmt.Errorf("optim: sample %d: %w", j, err)
		}
	}
	// Privacy first: refuse before computing anything.
	cost := dv.NextCost()
	if dv.ledger.Rho()+cost > dv.budget*budgetSlack {
		return Update{}, fmt.Errorf("%w: spent %.6g of %.6g, next release costs %.6g", ErrBudget, dv.ledger.Rho(), dv.budget, cost)
	}
	if err := mechanism.PostProcessing(dv.spec.C); err != nil {
		return Update{}, fmt.Errorf("%w: %v", ErrUnsafe, err)
	}
	seed, err := mechanism.NewSeed(dv.entropy)
	if err != nil {
		return Update{}, fmt.Errorf("optim: release seed: %w", err)
	}
	dv.noise = streamFor(dv.noise, seed, mechanism.PurposeNoise)
	S, eta := dv.p.S(), dv.p.Eta
	x := dv.x
	copy(x, r.X)
	// Clean describes this Prepare from here on, and only once it has
	// succeeded: a release that fails half-way leaves no partial sum
	// behind it.
	dv.cleanOK = false
	clear(dv.clean)
	clear(dv.sum)
	// E passes over the K step batches, in order (cyclic).
	for step := 0; step < dv.k*dv.epochs; step++ {
		j := step % dv.k
		v := dv.v
		clear(v)
		// The step's estimate: the mean of its step batch's gradients at
		// the local iterate, each clipped to S (the one-step algorithms'
		// estimator; ghost clipping for logistic regression).
		if err := dv.est.mean(v, r, x, batch[j*dv.bs:(j+1)*dv.bs], S); err != nil {
			return Update{}, fmt.Errorf("optim: local step %d: %w", j+1, err)
		}
		// One vector of draws a step (FillDiscreteGaussian: the same
		// distribution as d single draws, at 0.4x their cost), drawn
		// before the pass below, which then does the rest of the step
		// in one sweep over d.
		dv.noise.FillDiscreteGaussian(dv.nz, dv.sigmaZ)
		if i, err := dv.release(x, r.X, v, eta); err != nil {
			return Update{}, fmt.Errorf("%w: local step %d: %v", ErrUnsafe, j+1, mechanism.GridError(v[i], i, dv.step))
		}
		if dv.radius > 0 {
			project(x, dv.radius)
		}
	}
	if dv.radius > 0 {
		for i := range dv.msg {
			dv.msg[i] = (r.X[i] - x[i]) / eta
		}
	} else {
		mechanism.FromGrid(dv.msg, dv.sum, dv.step)
	}
	if err := mechanism.CheckFinite(dv.msg); err != nil {
		return Update{}, fmt.Errorf("optim: local update: %w", err)
	}
	dv.cleanOK = true
	dv.comp = streamFor(dv.comp, seed, mechanism.PurposeCompress)
	payload, err := dv.spec.C.Compress(dv.buf, dv.dec, dv.msg, dv.comp)
	if err != nil {
		return Update{}, fmt.Errorf("optim: compress: %w", err)
	}
	dv.buf = payload
	// The message leaves now: charge (0 after the first release, which
	// still counts) and advance. A last-iterate charge is recorded with
	// its round's coupling term, once: rounds use disjoint samples, so a
	// sample is coupled over its own round's steps only.
	if err := dv.chargeTo(&dv.ledger, cost); err != nil {
		return Update{}, fmt.Errorf("optim: ledger: %w", err)
	}
	dv.n++
	dv.lastT = r.T
	dv.pendOK, dv.pendT = true, r.T
	return Update{T: r.T, Payload: append([]byte(nil), payload...)}, nil
}

// release makes one hidden step's release and its post-processing, in
// one pass over the coordinates (package doc, "Floating point"): the
// step's estimate v is rounded onto the grid (mechanism.OnGrid), its
// rounded clean value added to dv.clean, the step's exact discrete noise
// dv.nz added to it and the noisy step to the integer sum dv.sum, and the
// iterate x moved: without projection x = x0 - eta step sum exactly, the
// sum kept in integers (the last-iterate proof follows that lattice
// chain); with projection x -= eta step (noisy step), projected by the
// caller. Each coordinate's arithmetic is the one of the six passes it
// replaced, so the outputs are the same bit for bit
// (TestLocalReleaseSameAsPasses). On a value the grid cannot hold it
// stops and returns its index.
func (dv *localDevice) release(x, x0, v []float64, eta float64) (int, error) {
	st := dv.step
	clean, sum, nz := dv.clean[:len(v)], dv.sum[:len(v)], dv.nz[:len(v)]
	x, x0 = x[:len(v)], x0[:len(v)]
	proj := dv.radius > 0
	for i, vi := range v {
		k, ok := mechanism.OnGrid(vi, st)
		if !ok {
			return i, errNotOnGrid
		}
		clean[i] += st * float64(k)
		k += nz[i]
		sum[i] += k
		if proj {
			x[i] -= eta * (st * float64(k))
		} else {
			x[i] = x0[i] - eta*(st*float64(sum[i]))
		}
	}
	return 0, nil
}

var errNotOnGrid = errors.New("optim: a value off the grid's range")

func (dv *localDevice) Commit(t int) error {
	if !dv.pendOK || dv.pendT != t {
		return fmt.Errorf("optim: commit of round %d, pending round is %d", t, dv.PendingRound())
	}
	dv.pendOK, dv.pendT = false, 0
	return nil
}

// Abort discards round t; as for every device, the round may be asked
// again and each answer is a release (charged, and counted towards T).
func (dv *localDevice) Abort(t int) error {
	if !dv.pendOK || dv.pendT != t {
		return fmt.Errorf("optim: abort of round %d, pending round is %d", t, dv.PendingRound())
	}
	dv.pendOK, dv.pendT = false, 0
	dv.lastT = t - 1
	return nil
}

const localMagic = "BFLL"
const localVersion = 1

// MarshalBinary encodes the ledger, the release count, the last round and
// the pending round ("local" keeps no vectors across rounds).
func (dv *localDevice) MarshalBinary() ([]byte, error) {
	var w wbuf
	w.b = append(w.b, localMagic...)
	w.u8(localVersion)
	w.str(dv.a.Name)
	w.i64(dv.dim)
	lb, err := dv.ledger.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("optim: device ledger: %w", err)
	}
	w.bytes(lb)
	w.i64(dv.n)
	w.i64(dv.lastT)
	w.bool(dv.pendOK)
	w.i64(dv.pendT)
	return w.b, nil
}

// UnmarshalBinary restores a state written by MarshalBinary into a device
// built with the same Params and model; it validates everything and leaves
// the device unchanged on error.
func (dv *localDevice) UnmarshalBinary(b []byte) error {
	r := rbuf{b: b}
	if string(r.take(len(localMagic))) != localMagic {
		return fmt.Errorf("optim: local device state: bad magic")
	}
	if v := r.u8(); r.err == nil && v != localVersion {
		return fmt.Errorf("optim: local device state version %d, want %d", v, localVersion)
	}
	name := string(r.bytes(64))
	dim := r.count("dimension", mechanism.MaxDim)
	lb := r.bytes(1 << 10)
	n := r.count("releases", dv.p.Rounds)
	lastT := r.count("last round", dv.p.Rounds)
	ok := r.bool()
	pt := r.count("pending round", dv.p.Rounds)
	if err := r.done(); err != nil {
		return fmt.Errorf("optim: local device state: %w", err)
	}
	switch {
	case name != dv.a.Name || dim != dv.dim:
		return fmt.Errorf("optim: device state is for %q dimension %d, device runs %q dimension %d", name, dim, dv.a.Name, dv.dim)
	case ok && (pt < 1 || pt != lastT), !ok && pt != 0:
		return fmt.Errorf("optim: local device state: pending round %d, last prepared %d", pt, lastT)
	}
	var ledger privacy.Ledger
	if err := ledger.UnmarshalBinary(lb); err != nil {
		return fmt.Errorf("optim: local device state: %w", err)
	}
	if n > 0 && !(ledger.Rho() > 0) || math.IsNaN(ledger.Rho()) {
		return fmt.Errorf("optim: local device state: %d releases but ledger %v", n, ledger.Rho())
	}
	if dv.li && ledger.Rho() > 0 && !ledger.Spent().LastIterate {
		return fmt.Errorf("optim: local device state: a last-iterate session's ledger without its last-iterate charge")
	}
	dv.ledger, dv.n, dv.lastT, dv.pendOK, dv.pendT = ledger, n, lastT, ok, pt
	dv.cleanOK = false
	return nil
}
