package optim

import (
	"errors"
	"math"
	"slices"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
	"browserfl/shared/privacy"
)

// localParams is a "local" session: b = 6 samples per round in K = 3 step
// batches of 2.
func localParams() Params {
	p := baseParams("local")
	p.Batch, p.LocalSteps = 6, 3
	p.Diameter = 0 // no projection: the message is the sum of the steps' releases
	return p
}

func newLocal(t *testing.T, p Params, m model.Model, seed byte) *localDevice {
	t.Helper()
	d, err := NewDevice(p, m, mechanism.NewStream(testSeed(seed), mechanism.PurposeSeeds))
	if err != nil {
		t.Fatal(err)
	}
	return d.(*localDevice)
}

func TestLocalSensitivityAndCharge(t *testing.T) {
	// Each hidden step averages b/K clipped gradients: replace-one
	// sensitivity 2S/(b/K), recomputed here from the parameters. The
	// first release charges one step's cost Delta^2/(2 sigma^2) and that
	// is the whole budget (parallel composition); the discrete release's
	// own cost, with the grid's rounding slack (CKS 2020, Thm. 14), must
	// not exceed the charge.
	for _, K := range []int{1, 2, 3, 6} {
		p := localParams()
		p.LocalSteps = K
		m, _ := model.New("logreg", 5, 3)
		dv := newLocal(t, p, m, 1)
		wantSens := 2 * p.Clip / float64(p.Batch/K)
		if math.Abs(dv.relSens-wantSens) > 1e-12*wantSens {
			t.Fatalf("K=%d: sensitivity %v, want %v", K, dv.relSens, wantSens)
		}
		budget, _ := algo.ZCDPBudget(p)
		data := synthData(mechanism.NewStream(testSeed(2), 0), p.Batch)
		x := make([]float64, dv.dim)
		if _, err := dv.Prepare(Round{T: 1, X: x}, data); err != nil {
			t.Fatal(err)
		}
		charged := dv.ledger.Rho()
		if cost := wantSens * wantSens / (2 * dv.sigma * dv.sigma); charged < cost*(1-1e-12) {
			t.Errorf("K=%d: charged %v, one step costs %v", K, charged, cost)
		}
		if math.Abs(charged-budget) > 1e-9*budget {
			t.Errorf("K=%d: charged %v, want the whole budget %v", K, charged, budget)
		}
		dz := wantSens/dv.step + math.Sqrt(float64(dv.dim))
		if got := dz * dz / (2 * float64(dv.sigmaZ) * float64(dv.sigmaZ)); got > charged {
			t.Errorf("K=%d: the discrete step release costs %v, the ledger charges %v", K, got, charged)
		}
		// Later releases are free but counted.
		dv.Commit(1)
		if _, err := dv.Prepare(Round{T: 2, X: x}, data); err != nil {
			t.Fatal(err)
		}
		if dv.ledger.Rho() != charged || dv.n != 2 {
			t.Errorf("K=%d: second release: ledger %v (want %v), releases %d", K, dv.ledger.Rho(), charged, dv.n)
		}
	}
}

func TestLocalNoiseMatchesCharge(t *testing.T) {
	// Ties the noise a device draws to what its ledger charges. The
	// message minus Clean is the sum of the noise vectors a release adds:
	// K E per-step vectors (per-step mode, no projection) or one vector
	// (output perturbation). From its sample variance we get the cost the
	// drawn noise pays for at the true sensitivity, recomputed here from
	// the parameters: per-step vectors of sensitivity Delta = 2S/(b/K),
	// a round worth 1 step (one pass) or E (composition); one vector on
	// the last iterate of sensitivity E Delta (the slack left out, which
	// only raises the charge). It must not exceed the charge.
	//
	// N = 64 rounds x d = 1010 coordinates = 64,640 draws; the variance
	// estimate has relative sd sqrt(2/N) = 0.56%. The check allows 4%
	// (7 sd: false-failure rate < 1e-11); noise 10% too small gives a
	// cost 23% above the charge (37 sd beyond the threshold: power ~1),
	// and output perturbation calibrated without the factor E a cost E^2
	// times the charge.
	for _, tc := range []struct {
		K, E    int
		model   string
		vectors int     // noise vectors in a message
		units   float64 // the round's cost in Delta^2/(2 var) of one vector
	}{
		{1, 1, "logreg", 1, 1}, {3, 1, "logreg", 3, 1},
		{3, 2, "logreg", 6, 2},          // not certified: E steps
		{3, 1, "logreg-unit", 1, 1},     // certified: output perturbation
		{3, 4, "logreg-unit", 1, 4 * 4}, // sensitivity E Delta
		{2, 3, "logreg-unit", 1, 3 * 3},
	} {
		K := tc.K
		p := localParams()
		p.LocalSteps, p.LocalEpochs, p.Model = K, tc.E, tc.model
		if tc.model == "logreg-unit" {
			p.Clip, p.Eta = 2, 2
		}
		p.Rounds = 64
		p.Features, p.Classes = 100, 10
		m, _ := model.New(tc.model, 100, 10)
		dv := newLocal(t, p, m, 3)
		if dv.op != (tc.model == "logreg-unit") {
			t.Fatalf("K=%d E=%d %s: output perturbation %v", K, tc.E, tc.model, dv.op)
		}
		rng := mechanism.NewStream(testSeed(4), 0)
		data := make([]dataset.Sample, p.Batch)
		for i := range data {
			x := make([]float32, 100)
			for j := range x {
				x[j] = float32(rng.NormFloat64())
			}
			data[i] = dataset.Sample{X: x, Label: rng.Intn(10)}
		}
		x := make([]float64, dv.dim)
		msg := make([]float64, dv.dim)
		clean := make([]float64, dv.dim)
		var sum, sumSq float64
		var n int
		for r := 1; r <= p.Rounds; r++ {
			for i := range x {
				x[i] = 0.1 * rng.NormFloat64()
			}
			u, err := dv.Prepare(Round{T: r, X: x}, data)
			if err != nil {
				t.Fatal(err)
			}
			if err := mechanism.Decode(msg, u.Payload); err != nil {
				t.Fatal(err)
			}
			dv.Clean(clean)
			for i := range msg {
				z := msg[i] - clean[i]
				sum += z
				sumSq += z * z
				n++
			}
			dv.Commit(r)
		}
		mean := sum / float64(n)
		varMsg := sumSq/float64(n) - mean*mean
		sens := 2 * p.Clip / float64(p.Batch/K)
		drawnCost := tc.units * float64(tc.vectors) * sens * sens / (2 * varMsg)
		charged := dv.ledger.Rho()
		if drawnCost > charged*1.04 {
			t.Errorf("K=%d E=%d %s: noise drawn (sd %.4g a message) costs %.4g a round, the ledger charges %.4g", K, tc.E, tc.model, math.Sqrt(varMsg), drawnCost, charged)
		}
		// The noise is not wildly larger either (a calibration far above
		// the charge wastes the budget): within 10% of the charge here,
		// where the grid rounding slack is below 1%.
		if drawnCost < charged*0.9 {
			t.Errorf("K=%d E=%d %s: noise drawn costs %.4g, far below the charge %.4g", K, tc.E, tc.model, drawnCost, charged)
		}
	}
}

// TestLocalCharge checks which sessions run by output perturbation and
// what a round is charged: a certified session (a certified model, no
// clipping, eta <= 2/beta, no projection) one noise vector calibrated to
// E Delta (1 + 1e-4), every E; otherwise one step's cost per pass. The
// sensitivity is checked against the proof's value, recomputed here. The
// device's ledger
// after its first release holds an ordinary charge of the whole budget.
func TestLocalCharge(t *testing.T) {
	cert := func() Params {
		p := localParams()
		p.Model, p.Clip, p.Eta = "logreg-unit", 2, 2
		p.LocalSteps, p.LocalEpochs = 3, 5
		return p
	}
	for _, tc := range []struct {
		name   string
		mod    func(*Params)
		op     bool
		factor float64
	}{
		{"certified", func(*Params) {}, true, 1},
		{"certified one pass", func(p *Params) { p.LocalEpochs = 1 }, true, 1},
		{"certified K = 1", func(p *Params) { p.LocalSteps = 1 }, true, 1},
		{"certified linear", func(p *Params) { p.Model, p.Clip, p.Eta = "linear-unit", 1, 100 }, true, 1},
		{"logreg one pass", func(p *Params) { p.Model, p.LocalEpochs = "logreg", 1 }, false, 1},
		{"zero means one pass", func(p *Params) { p.Model, p.LocalEpochs = "logreg", 0 }, false, 1},
		{"logreg has no certificate", func(p *Params) { p.Model = "logreg" }, false, 5},
		{"mlp has no certificate", func(p *Params) { p.Model = "mlp" }, false, 5},
		{"clipping binds", func(p *Params) { p.Clip = 1.99 }, false, 5},
		{"step too long", func(p *Params) { p.Eta = 2.01 }, false, 5},
		{"projection", func(p *Params) { p.Diameter = 10 }, false, 5},
	} {
		p := cert()
		tc.mod(&p)
		if got, f := algo.LocalOutputPerturbation(p), algo.LocalCharge(p); got != tc.op || f != tc.factor {
			t.Errorf("%s: output perturbation %v, charge %v; want %v, %v", tc.name, got, f, tc.op, tc.factor)
		}
		E := float64(max(1, p.LocalEpochs))
		delta := 2 * p.Clip / float64(p.Batch/p.LocalSteps)
		feat := 5
		m, err := model.New(p.Model, feat, 3)
		if p.Model == "linear-unit" {
			m = model.NewUnitLinear(feat)
		} else if err != nil {
			t.Fatal(err)
		}
		dv := newLocal(t, p, m, 1)
		if tc.op {
			// The proof's bound: E Delta plus the floating-point
			// allowance 1e-4 E Delta (docs/privacy.md 4b).
			want := E * delta * (1 + 1e-4)
			if got := algo.LocalReleaseSensitivity(p); math.Abs(got-want) > 1e-12*want || dv.relSens != got {
				t.Errorf("%s: release sensitivity %v (device %v), want E Delta (1 + 1e-4) = %v", tc.name, got, dv.relSens, want)
			}
		} else if got := algo.LocalReleaseSensitivity(p); got != delta {
			t.Errorf("%s: release sensitivity %v, want one step's %v", tc.name, got, delta)
		}
		next, err := dv.NextSpent()
		if err != nil {
			t.Fatal(err)
		}
		data := synthData(mechanism.NewStream(testSeed(2), 0), p.Batch)
		if p.Model == "linear-unit" {
			for i := range data {
				data[i].Label = 0
			}
		}
		if _, err := dv.Prepare(Round{T: 1, X: make([]float64, dv.dim)}, data); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		spent := dv.ledger.Spent()
		if spent.LastIterate || next != spent {
			t.Errorf("%s: ledger %+v (announced %+v), want an ordinary charge", tc.name, spent, next)
		}
		one := dv.relSens * dv.relSens / (2 * dv.sigma * dv.sigma)
		budget, _ := algo.ZCDPBudget(p)
		if got := dv.ledger.Rho(); math.Abs(got-tc.factor*one) > 1e-9*got || math.Abs(got-budget) > 1e-9*budget {
			t.Errorf("%s: ledger %v after the first release, want %v vectors of %v = the budget %v", tc.name, got, tc.factor, one, budget)
		}
	}
	// A device whose model is not the one the session certifies refuses.
	p := cert()
	m, _ := model.New("logreg", 5, 3)
	if _, err := NewDevice(p, m, mechanism.NewStream(testSeed(1), mechanism.PurposeSeeds)); !errors.Is(err, algo.ErrUnsafe) {
		t.Errorf("certified session on a logreg device: %v, want algo.ErrUnsafe", err)
	}
	// Epochs only for "local", and bounded.
	q := baseParams("noisysgd")
	q.LocalEpochs = 2
	if algo.Validate(q) == nil {
		t.Error("noisysgd with local epochs validates")
	}
	p = cert()
	p.LocalEpochs = -1
	if algo.Validate(p) == nil {
		t.Error("negative local epochs validate")
	}
}

// countingModel records, for every Grad call, the sample's first feature
// (the tests give every sample a distinct one).
type countingModel struct {
	model.Model
	seen *[]float32
}

func (c countingModel) Grad(dst, x []float64, s dataset.Sample) float64 {
	*c.seen = append(*c.seen, s.X[0])
	return c.Model.Grad(dst, x, s)
}

func (c countingModel) Clone() model.Model { return c }

func TestLocalStepsUseEachSampleOnce(t *testing.T) {
	// One pass: K steps over b/K consecutive samples each, every sample of
	// the round exactly once and in order (the replace-one analysis puts a
	// sample in exactly one hidden step).
	p := localParams()
	base, _ := model.New("logreg", 5, 3)
	var seen []float32
	dv := newLocal(t, p, countingModel{base, &seen}, 5)
	data := synthData(mechanism.NewStream(testSeed(6), 0), p.Batch)
	for i := range data {
		data[i].X = append([]float32(nil), data[i].X...)
		data[i].X[0] = float32(i)
	}
	if _, err := dv.Prepare(Round{T: 1, X: make([]float64, dv.dim)}, data); err != nil {
		t.Fatal(err)
	}
	if len(seen) != p.Batch {
		t.Fatalf("%d gradient evaluations, want b = %d", len(seen), p.Batch)
	}
	for i, v := range seen {
		if v != float32(i) {
			t.Fatalf("evaluation %d used sample %v, want %d (in order, once)", i, v, i)
		}
	}
}

func TestLocalRunsKSteps(t *testing.T) {
	// With little noise the device's message is the sum of K clipped
	// gradient steps taken from x_t: replay them here with the model. The
	// noise cannot be below privacy.MinDiscreteSigma grid units per step,
	// so the tolerance is 6 of its standard deviations over K steps.
	p := localParams()
	p.Rho = 1e5
	m, _ := model.New("logreg", 5, 3)
	dv := newLocal(t, p, m, 7)
	data := synthData(mechanism.NewStream(testSeed(8), 0), p.Batch)
	x0 := make([]float64, dv.dim)
	for i := range x0 {
		x0[i] = 0.3 * math.Sin(float64(i))
	}
	u, err := dv.Prepare(Round{T: 1, X: x0}, data)
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]float64, dv.dim)
	mechanism.Decode(msg, u.Payload)
	x := append([]float64(nil), x0...)
	g := make([]float64, dv.dim)
	bs := p.StepBatch()
	for j := 0; j < p.LocalSteps; j++ {
		v := make([]float64, dv.dim)
		for _, s := range data[j*bs : (j+1)*bs] {
			m.Grad(g, x, s)
			mechanism.Clip(g, p.Clip)
			for i := range v {
				v[i] += g[i] / float64(bs)
			}
		}
		for i := range x {
			x[i] -= p.Eta * v[i]
		}
	}
	step, err := mechanism.GridStep(algo.Sensitivity(p), dv.dim)
	if err != nil {
		t.Fatal(err)
	}
	tol := 6 * math.Sqrt(float64(p.LocalSteps)) * privacy.MinDiscreteSigma * step
	if tol > 0.1 {
		t.Fatalf("tolerance %v: the noise is not small against the gradients", tol)
	}
	for i := range msg {
		want := (x0[i] - x[i]) / p.Eta
		if math.Abs(msg[i]-want) > tol {
			t.Fatalf("coordinate %d: message %v, replayed K steps give %v", i, msg[i], want)
		}
	}
}

func TestLocalRefusals(t *testing.T) {
	p := localParams()
	p.Rounds = 3
	m, _ := model.New("logreg", 5, 3)
	dv := newLocal(t, p, m, 9)
	data := synthData(mechanism.NewStream(testSeed(10), 0), p.Batch)
	x := make([]float64, dv.dim)
	if _, err := dv.Prepare(Round{T: 1, X: x}, data[:p.Batch-1]); err == nil {
		t.Error("accepted a batch of b-1 samples")
	}
	if _, err := dv.Prepare(Round{T: 1, X: []float64{math.NaN()}}, data); err == nil {
		t.Error("accepted a malformed query point")
	}
	if dv.ledger.Rho() != 0 || dv.n != 0 {
		t.Fatal("a refused release was charged")
	}
	if _, err := dv.Prepare(Round{T: 1, X: x}, data); err != nil {
		t.Fatal(err)
	}
	if _, err := dv.Prepare(Round{T: 2, X: x}, data); !errors.Is(err, ErrPending) {
		t.Errorf("second round while pending: %v", err)
	}
	// Abort reopens the round; each answer is a release counted towards T.
	dv.Abort(1)
	for r := 1; r <= 2; r++ {
		if _, err := dv.Prepare(Round{T: r, X: x}, data); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		dv.Commit(r)
	}
	// Three releases made (round 1 twice): the fourth is refused.
	if _, err := dv.Prepare(Round{T: 3, X: x}, data); !errors.Is(err, ErrBudget) {
		t.Errorf("release T+1: err = %v, want ErrBudget", err)
	}
	// A device whose ledger was already charged by another party's view
	// (a budget below one step) refuses before drawing anything.
	q := localParams()
	dv2 := newLocal(t, q, m, 11)
	dv2.budget = dv2.NextCost() * 0.99
	if _, err := dv2.Prepare(Round{T: 1, X: x}, data); !errors.Is(err, ErrBudget) {
		t.Errorf("budget below one step: err = %v, want ErrBudget", err)
	}
}

func TestLocalStateRoundTrip(t *testing.T) {
	p := localParams()
	m, _ := model.New("logreg", 5, 3)
	dv := newLocal(t, p, m, 12)
	data := synthData(mechanism.NewStream(testSeed(13), 0), p.Batch)
	x := make([]float64, dv.dim)
	if _, err := dv.Prepare(Round{T: 1, X: x}, data); err != nil {
		t.Fatal(err)
	}
	b := mustMarshal(t, dv)
	dv2 := newLocal(t, p, m, 14)
	if err := dv2.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if dv2.PendingRound() != 1 || dv2.ledger.Rho() != dv.ledger.Rho() || dv2.n != 1 {
		t.Fatalf("restored: pending %d, ledger %v, n %d", dv2.PendingRound(), dv2.ledger.Rho(), dv2.n)
	}
	if err := dv2.Commit(1); err != nil {
		t.Fatal(err)
	}
	// Another algorithm's state, a truncated one and a state with a
	// pending round other than the last are refused.
	other := newTestDevice(t, baseParams("noisysgd"), 15)
	for name, bad := range map[string][]byte{
		"noisysgd state": mustMarshal(t, other),
		"truncated":      b[:len(b)-3],
	} {
		if err := newLocal(t, p, m, 16).UnmarshalBinary(bad); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

// FuzzLocalDeviceState: arbitrary bytes never panic, and an accepted state
// round-trips.
func FuzzLocalDeviceState(f *testing.F) {
	p := localParams()
	m, _ := model.New("logreg", 5, 3)
	seeds := mechanism.NewStream(testSeed(1), mechanism.PurposeSeeds)
	dv, _ := NewDevice(p, m, seeds)
	data := synthData(mechanism.NewStream(testSeed(2), 0), p.Batch)
	f.Add(mustMarshal(f, dv))
	dv.Prepare(Round{T: 1, X: make([]float64, m.Dim())}, data)
	f.Add(mustMarshal(f, dv))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, _ := NewDevice(p, m, seeds)
		if err := d.UnmarshalBinary(b); err != nil {
			return
		}
		if string(mustMarshal(t, d)) != string(b) {
			t.Fatal("accepted state does not round-trip")
		}
	})
}

// TestLocalReleaseSameAsPasses: the one-pass hidden-step release of
// "local" (localDevice.release) gives, bit for bit, what the six passes
// it replaced gave (kept here: ToGrid, FromGrid, the clean sum, the noise
// added, the integer sum, the iterate), with and without projection; a
// value off the grid's range is refused at its index.
func TestLocalReleaseSameAsPasses(t *testing.T) {
	const d = 1000
	rng := mechanism.NewStream(testSeed(41), 0)
	for _, radius := range []float64{0, 0.5} {
		dv := &localDevice{dim: d, radius: radius, step: 0x1p-20,
			clean: make([]float64, d), sum: make([]int64, d), nz: make([]int64, d)}
		x, x0, v := make([]float64, d), make([]float64, d), make([]float64, d)
		rng.FillNormal(x0, 1)
		copy(x, x0)
		// The reference's state, updated by the old passes.
		rclean, rsum, rx := make([]float64, d), make([]int64, d), slices.Clone(x)
		vz := make([]int64, d)
		for step := range 5 {
			rng.FillNormal(v, 0.01)
			v[step] = math.Copysign(0, -1) // a negative zero rounds as before too
			v[step+1] = 3 * dv.step / 2
			rng.FillDiscreteGaussian(dv.nz, 5000)
			// The six passes.
			ref := slices.Clone(v)
			if err := mechanism.ToGrid(vz, ref, dv.step); err != nil {
				t.Fatal(err)
			}
			mechanism.FromGrid(ref, vz, dv.step)
			for i, c := range ref {
				rclean[i] += c
			}
			for i, n := range dv.nz {
				vz[i] += n
				rsum[i] += vz[i]
			}
			if radius > 0 {
				mechanism.FromGrid(ref, vz, dv.step)
				for i, vi := range ref {
					rx[i] -= 0.3 * vi
				}
			} else {
				for i, n := range rsum {
					rx[i] = x0[i] - 0.3*(dv.step*float64(n))
				}
			}
			if _, err := dv.release(x, x0, v, 0.3); err != nil {
				t.Fatal(err)
			}
			for i := range d {
				if math.Float64bits(x[i]) != math.Float64bits(rx[i]) || math.Float64bits(dv.clean[i]) != math.Float64bits(rclean[i]) || dv.sum[i] != rsum[i] {
					t.Fatalf("radius %g, step %d, coordinate %d: x %v / %v, clean %v / %v, sum %d / %d", radius, step, i, x[i], rx[i], dv.clean[i], rclean[i], dv.sum[i], rsum[i])
				}
			}
			if radius > 0 {
				project(x, radius)
				project(rx, radius)
			}
		}
		for _, bad := range []float64{math.NaN(), math.Inf(-1), 0x1p53 * dv.step} {
			v[7] = bad
			if i, err := dv.release(x, x0, v, 0.3); err == nil || i != 7 {
				t.Errorf("value %g: index %d, error %v", bad, i, err)
			}
		}
	}
}

// TestEstimatorAtItsPoint: the SGD estimator's mean (the hidden steps of
// "local" take it at the local iterate, not at the round's x_t) is the
// mean of each sample's gradient at the point it is given, clipped, on
// the ghost path (logistic regression) and on the formed one (the MLP),
// within float64 rounding; a point where the gradient is not finite is
// refused.
func TestEstimatorAtItsPoint(t *testing.T) {
	rng := mechanism.NewStream(testSeed(43), 0)
	batch := mnistLike(rng, 6)
	for _, name := range []string{"logreg", "logreg-unit", "mlp"} {
		m, err := model.New(name, 784, 10)
		if err != nil {
			t.Fatal(err)
		}
		d := m.Dim()
		at, x := make([]float64, d), make([]float64, d)
		rng.FillNormal(at, 0.3)
		rng.FillNormal(x, 0.3)
		r := Round{T: 3, X: x}
		for _, S := range []float64{0.05, 1, 100} {
			got := make([]float64, d)
			e := estimator{m: m, g: make([]float64, d)}
			if err := e.mean(got, r, at, batch, S); err != nil {
				t.Fatal(err)
			}
			want, g := make([]float64, d), make([]float64, d)
			for _, s := range batch {
				m.Grad(g, at, s)
				mechanism.Clip(g, S)
				for i := range g {
					want[i] += g[i] / float64(len(batch))
				}
			}
			var diff, norm float64
			for i := range want {
				diff += (got[i] - want[i]) * (got[i] - want[i])
				norm += want[i] * want[i]
			}
			if !(math.Sqrt(diff) <= 1e-12*S) || !(norm > 0) {
				t.Errorf("%s, S = %g: |mean - reference| = %g (reference norm %g)", name, S, math.Sqrt(diff), math.Sqrt(norm))
			}
		}
		huge := make([]float64, d)
		for i := range huge {
			huge[i] = 1e308
		}
		if err := (estimator{m: m, g: make([]float64, d)}).mean(make([]float64, d), r, huge, batch, 1); err == nil {
			t.Errorf("%s: a point whose gradient is not finite was accepted", name)
		}
	}
}

// TestLocalCleanAfterFailedRelease: a release of "local" that fails
// half-way (a gradient that is not finite at its query point) leaves no
// clean sum to read: Clean refuses until a release succeeds, instead of
// returning the partial (or the cleared) sum as the last release's.
func TestLocalCleanAfterFailedRelease(t *testing.T) {
	p := localParams()
	m, _ := model.New("logreg", 5, 3)
	dv := newLocal(t, p, m, 11)
	data := synthData(mechanism.NewStream(testSeed(12), 0), p.Batch)
	x := make([]float64, dv.dim)
	if _, err := dv.Prepare(Round{T: 1, X: x}, data); err != nil {
		t.Fatal(err)
	}
	if err := dv.Commit(1); err != nil {
		t.Fatal(err)
	}
	clean := make([]float64, dv.dim)
	if err := dv.Clean(clean); err != nil {
		t.Fatal(err)
	}
	huge := make([]float64, dv.dim)
	for i := range huge {
		huge[i] = 1e308
	}
	if _, err := dv.Prepare(Round{T: 2, X: huge}, data); err == nil {
		t.Fatal("a release whose gradients are not finite succeeded")
	}
	if err := dv.Clean(clean); err == nil {
		t.Error("Clean after a failed release returned a sum")
	}
	if _, err := dv.Prepare(Round{T: 2, X: x}, data); err != nil {
		t.Fatal(err)
	}
	if err := dv.Clean(clean); err != nil {
		t.Errorf("Clean after a successful release: %v", err)
	}
}
