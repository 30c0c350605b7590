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
)

// opParams is a certified "local" session (output perturbation) of
// logreg-unit in 5 features and 3 classes: b = 6, K = 3 steps of 2, E = 4
// passes, S = 2 (nothing clipped), eta = 2 = 2/beta.
func opParams() Params {
	p := localParams()
	p.Model, p.Clip, p.Eta = "logreg-unit", 2, 2
	p.LocalSteps, p.LocalEpochs = 3, 4
	return p
}

// messageGap runs the noiseless hidden steps of dv on two batches from
// the query point x and returns |m - m'|, the distance of the two
// unrounded messages (x_t - x_{KE})/eta, before the release grid and the
// noise.
func messageGap(t *testing.T, dv *localDevice, x []float64, a, b []dataset.Sample) float64 {
	t.Helper()
	r := Round{T: 1, X: x}
	if err := dv.hiddenSteps(r, a); err != nil {
		t.Fatal(err)
	}
	ma := slices.Clone(dv.msg)
	if err := dv.hiddenSteps(r, b); err != nil {
		t.Fatal(err)
	}
	var s float64
	for i := range ma {
		d := ma[i] - dv.msg[i]
		s += d * d
	}
	return math.Sqrt(s)
}

// TestLocalOPSensitivity runs neighbouring datasets (one sample of the
// round replaced, at every position) through the noiseless hidden steps
// and checks that the messages differ by at most the sensitivity the
// noise is calibrated to (LocalReleaseSensitivity), for logreg-unit (a
// contracting convex loss) and for the linear loss linear-unit (every
// step a translation: the record's E shifts reach the last iterate whole,
// so the bound must be nearly attained: at least 0.999 of it, which
// shows it is not loose). Deterministic.
func TestLocalOPSensitivity(t *testing.T) {
	rng := mechanism.NewStream(testSeed(61), 0)
	// logreg-unit: 600 random neighbouring pairs, the replacement an
	// arbitrary sample (random features, any label), with one sample a
	// step (b = 3: the folded one-sample path) and two (b = 6).
	for _, nb := range []int{3, 6} {
		p := opParams()
		p.Batch = nb
		m, _ := model.New(p.Model, 5, 3)
		dv := newLocal(t, p, m, 1)
		bound := algo.LocalReleaseSensitivity(p)
		worst := 0.0
		for trial := 0; trial < 600; trial++ {
			a := synthData(rng, p.Batch)
			b := slices.Clone(a)
			x := make([]float32, 5)
			for j := range x {
				x[j] = float32(3 * rng.NormFloat64())
			}
			b[trial%p.Batch] = dataset.Sample{X: x, Label: rng.Intn(3)}
			x0 := make([]float64, dv.dim)
			rng.FillNormal(x0, 0.5)
			gap := messageGap(t, dv, x0, a, b)
			if gap > bound {
				t.Fatalf("b = %d, trial %d: |m - m'| = %v exceeds the sensitivity %v", nb, trial, gap, bound)
			}
			worst = max(worst, gap/bound)
		}
		t.Logf("logreg-unit, b = %d: largest |m - m'| is %.4f of the sensitivity", nb, worst)
	}

	// linear-unit: the record's gradient +e_1, its replacement -e_1.
	q := opParams()
	q.Model, q.Clip, q.Eta, q.Classes = "linear-unit", 1, 1, 1
	lin := model.NewUnitLinear(5)
	dl := newLocal(t, q, lin, 1)
	bound := algo.LocalReleaseSensitivity(q)
	for pos := 0; pos < q.Batch; pos++ {
		a := make([]dataset.Sample, q.Batch)
		for i := range a {
			x := make([]float32, 5)
			for j := range x {
				x[j] = float32(rng.NormFloat64())
			}
			a[i] = dataset.Sample{X: x}
		}
		b := slices.Clone(a)
		a[pos] = dataset.Sample{X: []float32{1, 0, 0, 0, 0}}
		b[pos] = dataset.Sample{X: []float32{-1, 0, 0, 0, 0}}
		gap := messageGap(t, dl, make([]float64, dl.dim), a, b)
		if gap > bound || gap < 0.999*bound {
			t.Errorf("linear, record at %d: |m - m'| = %v, want within [0.999, 1] of the sensitivity %v", pos, gap, bound)
		}
	}
}

// TestLocalOPChain recomputes the hidden steps of output perturbation
// from their definition, x_j = x_{j-1} - eta gbar_j(x_{j-1}) with the
// step batches in order and E passes, the message (x_t - x_{KE})/eta and
// its rounding onto the release grid, and checks the device's clean
// message against it: within one grid unit in every coordinate (the
// device folds eta into its one-sample steps, so the floating-point
// operations differ) and equal in at least 99% of them. A skipped or
// repeated step, another step batch, or eta applied twice are caught.
func TestLocalOPChain(t *testing.T) {
	for _, b := range []int{3, 6} { // one sample a step (the folded path), two
		p := opParams()
		p.Batch = b
		m, _ := model.New(p.Model, 5, 3)
		dv := newLocal(t, p, m, 1)
		rng := mechanism.NewStream(testSeed(62), 0)
		data := synthData(rng, p.Batch)
		x0 := make([]float64, dv.dim)
		rng.FillNormal(x0, 0.5)
		if _, err := dv.Prepare(Round{T: 1, X: x0}, data); err != nil {
			t.Fatal(err)
		}
		clean := make([]float64, dv.dim)
		if err := dv.Clean(clean); err != nil {
			t.Fatal(err)
		}
		est := estimator{m: m.Clone(), g: make([]float64, dv.dim)}
		x, v := slices.Clone(x0), make([]float64, dv.dim)
		K, bs := p.LocalSteps, p.StepBatch()
		for step := 0; step < K*p.LocalEpochs; step++ {
			clear(v)
			j := step % K
			if err := est.mean(v, Round{T: 1, X: x0}, x, data[j*bs:(j+1)*bs], p.S()); err != nil {
				t.Fatal(err)
			}
			for i := range v {
				x[i] -= p.Eta * v[i]
			}
		}
		same := 0
		for i := range x {
			want := dv.step * math.RoundToEven((x0[i]-x[i])/p.Eta/dv.step)
			if math.Abs(clean[i]-want) > dv.step*1.0000001 {
				t.Fatalf("b = %d, coordinate %d: clean %v, want %v from the definition", b, i, clean[i], want)
			}
			if clean[i] == want {
				same++
			}
		}
		if same < dv.dim*99/100 {
			t.Errorf("b = %d: %d of %d coordinates equal to the definition's", b, same, dv.dim)
		}
	}
}

// TestLocalOPRefusesHugeQueryPoint: a query point so large that floating
// point could add more than its allowance to the sensitivity
// (algo.LocalFloatSlack) is refused before any step (and charges nothing); an
// ordinary one passes.
func TestLocalOPRefusesHugeQueryPoint(t *testing.T) {
	p := opParams()
	m, _ := model.New(p.Model, 5, 3)
	dv := newLocal(t, p, m, 1)
	data := synthData(mechanism.NewStream(testSeed(63), 0), p.Batch)
	x := make([]float64, dv.dim)
	x[0] = 1e9
	if _, err := dv.Prepare(Round{T: 1, X: x}, data); !errors.Is(err, algo.ErrUnsafe) || dv.ledger.Rho() != 0 {
		t.Errorf("query point of norm 1e9: %v (ledger %v), want algo.ErrUnsafe and nothing charged", err, dv.ledger.Rho())
	}
	x[0] = 10
	if _, err := dv.Prepare(Round{T: 1, X: x}, data); err != nil {
		t.Errorf("query point of norm 10: %v", err)
	}
}
