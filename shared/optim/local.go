package optim

import (
	"errors"
	"fmt"
	"io"
	"math"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
	"browserfl/shared/privacy"
)

// "local": private local training. A device chosen at round t starts from
// the query point x_t and runs E = Params.LocalEpochs passes (default 1)
// over the round's b samples taken in order, in K = Params.LocalSteps step
// batches of b/K (cyclic: K E hidden SGD steps), and releases only
// (x_t - x_{KE})/eta. The server takes the SGD-family step x_{t+1} =
// Pi_K(x_t - eta (1/m) sum msg), i.e. it averages the devices' last
// iterates (FedAvg with server step 1; a missing device counts as no move).
//
// The device runs in one of two modes (algo.LocalOutputPerturbation decides):
//
//   - Output perturbation, when the model certifies convexity and nothing
//     is clipped or projected and a step is nonexpansive:
//     the K E hidden steps run without noise, x_j = x_{j-1} - eta
//     gbar_j(x_{j-1}), and the release is (x_t - x_{KE})/eta rounded onto
//     the release grid plus ONE exact discrete Gaussian vector,
//     calibrated to the last iterate's replace-one sensitivity
//     E Delta (1 + 1e-4)
//     (algo.LocalReleaseSensitivity): an ordinary zCDP charge of the whole
//     budget, by construction, for every E.
//   - Per-step noise otherwise: each hidden step releases
//     round_grid(mean of b/K clipped gradients) + Z_j, Z_j discrete
//     Gaussian, and moves x_j = Pi_K(x_{j-1} - eta v_j). Every hidden
//     release is a noisy-SGD release of its step batch (sensitivity
//     2S/(b/K), algo.Sensitivity); a round costs E of them (composition), one
//     for E = 1.
//
// Rounds use disjoint samples, so a device's whole session costs one
// round's charge (ParallelComposition). docs/privacy.md, section 4b,
// proves both.
type localDevice struct {
	p       Params
	a       algo.Algorithm
	spec    mechanism.Spec
	m       model.Model
	dim     int
	entropy io.Reader
	budget  float64 // zCDP
	relSens float64 // sensitivity each noise vector is calibrated to (algo.LocalReleaseSensitivity)
	sigma   float64 // continuous calibration of each noise vector (algo.FreshSigma)
	step    float64 // release grid step
	sigmaZ  int64   // discrete sigma in release grid units
	k, bs   int     // K local steps, b/K samples per step
	epochs  int     // E passes over the K step batches
	charge  float64 // zCDP of one round
	op      bool    // output perturbation (algo.LocalOutputPerturbation)
	radius  float64

	ledger privacy.Ledger
	n      int // releases prepared
	lastT  int
	pendOK bool
	pendT  int

	clean   []float64 // the message without its noise
	cleanOK bool

	x, v, g, msg, dec []float64
	est               estimator // the step estimate (SGD: gradients at the local iterate)
	sum               []int64   // the sum of the steps' releases (per-step mode), the release (output perturbation); in grid units
	nz                []int64   // a noise vector, in grid units
	buf               []byte
	noise, comp       *mechanism.Stream
}

func newLocalDevice(p Params, a algo.Algorithm, m model.Model, entropy io.Reader) (*localDevice, error) {
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
		return nil, fmt.Errorf("%w: %v", algo.ErrUnsafe, err)
	}
	dv := &localDevice{p: p, a: a, spec: spec, m: m, dim: d, entropy: entropy,
		k: p.LocalK(), bs: p.StepBatch(), epochs: p.LocalE(), radius: p.Diameter / 2,
		op: algo.LocalOutputPerturbation(p)}
	var err error
	if dv.budget, err = algo.ZCDPBudget(p); err != nil {
		return nil, err
	}
	dv.relSens = algo.LocalReleaseSensitivity(p)
	if dv.sigma, err = algo.FreshSigma(p); err != nil {
		return nil, err
	}
	if dv.step, err = mechanism.GridStep(dv.relSens, d); err != nil {
		return nil, fmt.Errorf("%w: %v", algo.ErrUnsafe, err)
	}
	// The sensitivity of output perturbation rests on the session's
	// model certificate.
	if dv.op && m.Name() != p.Model {
		return nil, fmt.Errorf("%w: output perturbation is certified for model %q, the device runs %q", algo.ErrUnsafe, p.Model, m.Name())
	}
	if dv.sigmaZ, err = mechanism.DiscreteSigma(dv.sigma, dv.relSens, dv.step, d); err != nil {
		return nil, fmt.Errorf("%w: %v", algo.ErrUnsafe, err)
	}
	dv.charge = algo.LocalCharge(p) * dv.relSens * dv.relSens / (2 * dv.sigma * dv.sigma)
	for _, v := range []*[]float64{&dv.clean, &dv.x, &dv.v, &dv.g, &dv.msg, &dv.dec} {
		*v = make([]float64, d)
	}
	dv.est = estimator{m: m, g: dv.g}
	dv.sum, dv.nz = make([]int64, d), make([]int64, d)
	dv.buf = make([]byte, 0, spec.C.Size(d))
	return dv, nil
}

func (dv *localDevice) Ledger() privacy.Ledger { return dv.ledger }
func (dv *localDevice) Participations() int    { return dv.n }

// NextCost is one round's zCDP, algo.LocalCharge steps of Delta^2/(2 sigma^2)
// each, less what is already charged: rounds use disjoint samples, so the
// transcript costs the largest round (parallel composition), and only the
// first release adds.
func (dv *localDevice) NextCost() float64 {
	return max(0, dv.charge-dv.ledger.Rho())
}

// NextSpent is the ledger after the next release.
func (dv *localDevice) NextSpent() (privacy.Spent, error) {
	l := dv.ledger
	if err := l.ChargeRho(dv.NextCost()); err != nil {
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

// Clean writes the last Prepare's message without its noise: under output
// perturbation the noiseless last iterate's message rounded onto the
// release grid; in per-step mode the sum over the K E steps of the
// rounded, un-noised step estimates (without projection, the message
// minus the noise).
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
		return Update{}, fmt.Errorf("%w: %v", algo.ErrUnsafe, err)
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
	if dv.op {
		if err := dv.outputPerturbation(r, batch); err != nil {
			return Update{}, err
		}
	} else if err := dv.perStep(r, batch, S, eta); err != nil {
		return Update{}, err
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
	// still counts: rounds use disjoint samples) and advance.
	if err := dv.ledger.ChargeRho(cost); err != nil {
		return Update{}, fmt.Errorf("optim: ledger: %w", err)
	}
	dv.n++
	dv.lastT = r.T
	dv.pendOK, dv.pendT = true, r.T
	return Update{T: r.T, Payload: append([]byte(nil), payload...)}, nil
}

// perStep runs the K E hidden steps with a noise vector each and writes
// the message (per-step mode).
func (dv *localDevice) perStep(r Round, batch []dataset.Sample, S, eta float64) error {
	x := dv.x
	// E passes over the K step batches, in order (cyclic).
	for step := 0; step < dv.k*dv.epochs; step++ {
		j := step % dv.k
		v := dv.v
		clear(v)
		// The step's estimate: the mean of its step batch's gradients at
		// the local iterate, each clipped to S (the one-step algorithms'
		// estimator; ghost clipping for logistic regression).
		if err := dv.est.mean(v, r, x, batch[j*dv.bs:(j+1)*dv.bs], S); err != nil {
			return fmt.Errorf("optim: local step %d: %w", j+1, err)
		}
		// One vector of draws a step (FillDiscreteGaussian: the same
		// distribution as d single draws, at 0.4x their cost), drawn
		// before the pass below, which then does the rest of the step
		// in one sweep over d.
		dv.noise.FillDiscreteGaussian(dv.nz, dv.sigmaZ)
		if i, err := dv.release(x, r.X, v, eta); err != nil {
			return fmt.Errorf("%w: local step %d: %v", algo.ErrUnsafe, j+1, mechanism.GridError(v[i], i, dv.step))
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
	return nil
}

// outputPerturbation runs the K E hidden steps without noise
// (hiddenSteps), then rounds the message (x_t - x_{KE})/eta onto the
// release grid and adds one exact discrete Gaussian vector
// (docs/privacy.md 4b).
func (dv *localDevice) outputPerturbation(r Round, batch []dataset.Sample) error {
	if err := dv.hiddenSteps(r, batch); err != nil {
		return err
	}
	dv.noise.FillDiscreteGaussian(dv.nz, dv.sigmaZ)
	for i, mi := range dv.msg {
		u, ok := mechanism.OnGrid(mi, dv.step)
		if !ok {
			return fmt.Errorf("%w: local update: %v", algo.ErrUnsafe, mechanism.GridError(mi, i, dv.step))
		}
		dv.clean[i] = dv.step * float64(u)
		dv.sum[i] = u + dv.nz[i]
	}
	mechanism.FromGrid(dv.msg, dv.sum, dv.step)
	return nil
}

// hiddenSteps runs the K E noiseless hidden steps of output perturbation,
// x_j = x_{j-1} - eta gbar_j(x_{j-1}) (gbar_j the mean gradient of step
// batch (j-1) mod K, nothing clipped), and writes the unrounded message
// (x_t - x_{KE})/eta into dv.msg. It refuses, before any step, a query
// point so large that floating point could add more than its allowance to
// the message's sensitivity (algo.LocalFloatSlack): the refusal depends on
// the public x_t only.
func (dv *localDevice) hiddenSteps(r Round, batch []dataset.Sample) error {
	x, x0, eta, S := dv.x, r.X, dv.p.Eta, dv.p.S()
	copy(x, x0)
	var x0norm float64
	for _, xi := range x0 {
		x0norm += xi * xi
	}
	x0norm = math.Sqrt(x0norm)
	if fs, room := algo.LocalFloatSlack(dv.p, dv.dim, x0norm); !(fs <= room) {
		return fmt.Errorf("%w: query point of norm %g: floating point could add %g to the update's sensitivity, over its allowance %g", algo.ErrUnsafe, x0norm, fs, room)
	}
	fm, ghost := dv.m.(model.Factored)
	for step := 0; step < dv.k*dv.epochs; step++ {
		j := step % dv.k
		sb := batch[j*dv.bs : (j+1)*dv.bs]
		if ghost && dv.bs == 1 {
			// One sample a step: its gradient at x, added to x itself
			// (the estimator's ghost path, with eta folded in).
			n := fm.FactorGradDiff(1, x, 0, nil, sb[0])
			if !(n <= math.MaxFloat64) {
				return fmt.Errorf("optim: local step %d: gradient: non-finite norm %v", j+1, n)
			}
			fm.AddFactor(x, -eta*mechanism.ClipFactor(n, S))
			continue
		}
		v := dv.v
		clear(v)
		// The step batch's mean gradient at x; the bound S >= G clips
		// nothing (algo.LocalOutputPerturbation).
		if err := dv.est.mean(v, r, x, sb, S); err != nil {
			return fmt.Errorf("optim: local step %d: %w", j+1, err)
		}
		for i, vi := range v {
			x[i] -= eta * vi
		}
	}
	for i := range dv.msg {
		dv.msg[i] = (x0[i] - x[i]) / eta
	}
	return nil
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
	dv.ledger, dv.n, dv.lastT, dv.pendOK, dv.pendT = ledger, n, lastT, ok, pt
	dv.cleanOK = false
	return nil
}
