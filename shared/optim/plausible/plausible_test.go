package plausible

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
)

// spiky is the honest worst case for the coordinate and block tests: every
// per-sample gradient lies on one coordinate, so after clipping the whole
// estimate (norm S) sits there, round after round.
type spiky struct {
	model.Model
	at int
}

func (m spiky) Grad(dst, x []float64, s dataset.Sample) float64 {
	clear(dst)
	dst[m.at] = 1e6
	return 0
}

func (m spiky) Clone() model.Model { return m }

// TestCheckerPassesHonestDevices runs honest devices through every round
// of a session, each message included, for every algorithm and
// compressor pair, with the worst-case models (the whole clipped estimate
// on one coordinate, or in one fixed dense direction), and puts every
// message and every running sum through the Checker as the coordinator
// does. Each device-session is rejected with probability at most
// UpdateRejectProb = 1e-9 by construction (the tests' tail bounds), so
// the false-failure rate of this test is below 1e-7 over its cases; a
// failure is a wrong derivation, not bad luck.
func TestCheckerPassesHonestDevices(t *testing.T) {
	base, _ := model.New("logreg", 5, 3)
	data := synthData(mechanism.NewStream(testSeed(2), 0), 2)
	cases := []struct {
		alg, comp string
		shape     bool // coordinate and block tests apply
		history   bool
	}{
		{"nc", "", true, true}, {"nc", "f64", true, true}, {"nc", "randk:0.3", true, false},
		{"nc", "topk:0.5", true, false}, {"nc", "ef+topk:0.2", false, false}, {"nc", "quant:4bit", false, false},
		{"noisysgd", "", true, true}, {"cdpsgd", "", true, true}, {"cdpsgd", "randk:0.5", true, false},
		{"noisysgd", "f64", true, true}, {"noisysgd", "randk:0.5", true, false}, {"noisysgd", "topk:0.5", true, false},
		{"nc", "randk:k=5", true, false}, {"nc", "ef+randk:0.3", false, false}, {"nc", "qinf:3bit", false, false},
		{"soteria-svrg", "", false, false}, // shifted compression: finiteness only
		{"soteria-sgd", "randk:0.5", false, false},
		{"trusted", "", false, false}, {"mu2", "", false, false}, {"sgd", "", false, false}, {"local", "", false, false},
	}
	models := []struct {
		name string
		m    model.Model
	}{
		{"spike", spiky{Model: base, at: 4}},
		{"dense", wild{Model: base, scale: 1e6}},
	}
	for _, tc := range cases {
		p := baseParams(tc.alg)
		p.Compressor = tc.comp
		if tc.alg == "mu2" || tc.alg == "sgd" {
			p.Clip = 1
		}
		c, err := NewChecker(p, base.Dim())
		if err != nil {
			t.Fatalf("%s %q: %v", tc.alg, tc.comp, err)
		}
		if c.Shape() != tc.shape || c.Tracks() != tc.history {
			t.Errorf("%s %q: shape %v history %v, want %v %v (%s)", tc.alg, tc.comp, c.Shape(), c.Tracks(), tc.shape, tc.history, c.Describe())
		}
		for _, mc := range models {
			dv, err := optim.NewDevice(p, mc.m, mechanism.NewStream(testSeed(9), 0))
			if err != nil {
				t.Fatal(err)
			}
			if ls, ok := dv.(optim.LocalDataSetter); ok && lookup(tc.alg).NeedsLocalData() {
				if err := ls.SetLocalData(synthData(mechanism.NewStream(testSeed(3), 0), p.LocalSize)); err != nil {
					t.Fatal(err)
				}
			}
			x := make([]float64, base.Dim())
			dec := make([]float64, base.Dim())
			h := History{FromStart: true}
			sent := 0
			for r := 1; r <= p.Rounds; r++ {
				u, err := dv.Prepare(optim.Round{T: r, X: x, XPrev: x}, data)
				if err != nil {
					break // budget of the fresh-noise algorithms
				}
				norm, err := mechanism.DecodeNorm(dec, u.Payload)
				if err != nil {
					t.Fatal(err)
				}
				h.Ask()
				if err := c.Check(dec, norm, &h); err != nil {
					t.Fatalf("%s %q %s round %d: honest message refused: %v", tc.alg, tc.comp, mc.name, r, err)
				}
				h.Add(dec)
				sent++
				if err := dv.Commit(r); err != nil {
					t.Fatal(err)
				}
			}
			if sent < 2 {
				t.Fatalf("%s %q: only %d messages", tc.alg, tc.comp, sent)
			}
		}
	}
}

// lookup is Lookup without the error, for table tests.
func lookup(alg string) algo.Algorithm {
	a, _ := algo.Lookup(alg)
	return a
}

// TestCheckerPassesHonestDevicesAtScale is the same at the product's
// dimension (logistic regression on 28x28 images, d = 7850) for the
// default "nc" with dense float32 and with the fewest rounds allowed to
// run quickly: the union bounds grow with d, so a derivation wrong by a
// constant shows here first.
func TestCheckerPassesHonestDevicesAtScale(t *testing.T) {
	base, _ := model.New("logreg", 784, 10)
	p := optim.Params{Algorithm: "nc", Model: "logreg", Features: 784, Classes: 10, M: 10, Cohort: 10, Rounds: 40,
		Batch: 4, Clip: 1, Eta: 0.05, Rho: 2}
	c, err := NewChecker(p, base.Dim())
	if err != nil {
		t.Fatal(err)
	}
	data := make([]dataset.Sample, p.Batch)
	for i := range data {
		data[i] = dataset.Sample{X: make([]float32, 784), Label: i % 10}
	}
	for _, m := range []model.Model{spiky{Model: base, at: 7849}, wild{Model: base, scale: 1e6}} {
		dv, err := optim.NewDevice(p, m, mechanism.NewStream(testSeed(11), 0))
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float64, base.Dim())
		dec := make([]float64, base.Dim())
		h := History{FromStart: true}
		for r := 1; r <= p.Rounds; r++ {
			u, err := dv.Prepare(optim.Round{T: r, X: x, XPrev: x}, data)
			if err != nil {
				t.Fatal(err)
			}
			norm, err := mechanism.DecodeNorm(dec, u.Payload)
			if err != nil {
				t.Fatal(err)
			}
			h.Ask()
			if err := c.Check(dec, norm, &h); err != nil {
				t.Fatalf("round %d: honest message refused: %v", r, err)
			}
			h.Add(dec)
			if err := dv.Commit(r); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// ncRef returns, computed here from the published formulas rather than by
// the Checker, the per-coordinate noise proxy s of one "nc" message, the
// grid step, and R for p at dimension d.
func ncRef(t *testing.T, p optim.Params, d int) (s, step float64) {
	t.Helper()
	sens := 2 * p.S() / float64(p.Batch)
	step, err := mechanism.GridStep(sens, d)
	if err != nil {
		t.Fatal(err)
	}
	K := p.ReleaseCap()
	hi, err := mechanism.DiscreteSigma(algo.NCSigma(p, K), sens, step, d)
	if err != nil {
		t.Fatal(err)
	}
	lo, err := mechanism.DiscreteSigma(algo.NCSigma(p, K-1), sens, step, d)
	if err != nil {
		t.Fatal(err)
	}
	return step * math.Hypot(float64(hi), float64(lo)), step
}

// TestCheckerLimitsAreTight guards the dangerous direction: limits above
// the derivation's let a hostile device push harder. At the classroom's
// dimension it recomputes each limit from the formulas of
// docs/security.md (the union bound's quantile written out: 2 d R
// coordinates, blocks of 8, 64 and 512, 1e-9 shared by six tests) and
// requires the Checker's to be no larger (and no more than 0.1% smaller,
// which would reject honest messages); then it checks that a message or a
// running sum 1% over each limit is refused and one 1% under passes.
func TestCheckerLimitsAreTight(t *testing.T) {
	const d = 7850
	p := optim.Params{Algorithm: "nc", M: 30, Cohort: 10, Rounds: 200, Batch: 16, Clip: 1, Eta: 0.5, Rho: 1.5}
	c, err := NewChecker(p, d)
	if err != nil {
		t.Fatal(err)
	}
	s, step := ncRef(t, p, d)
	const f = 1 + 1.0/(1<<23)
	R := 200.0
	prob := 1e-9 / 6
	zc := math.Sqrt(2 * math.Log(2*d*R*R/prob))                          // every pair of releases (the cancelled draw is selected)
	blocks := math.Ceil(d/8.) + math.Ceil(d/64.) + math.Ceil(d/512.) + 1 // and the running sum's norm
	u := math.Log(blocks * R * R / prob)
	chi := func(k float64) float64 { return math.Sqrt(k + 2*math.Sqrt(k*u) + 2*u) }
	E := 1.0
	wantCoord := f * (E + step/2 + s*zc)
	wantBlock := func(k float64) float64 { return f * (E + step/2*math.Sqrt(k) + s*chi(k)) }
	wantHist := func(n float64) float64 { return n*(E+step/2) + s*zc + 2*n*(f-1)*wantCoord }
	near := func(name string, got, want float64) {
		if !(got <= want*(1+1e-12) && got >= want*0.999) {
			t.Errorf("%s limit %.6g, derivation gives %.6g", name, got, want)
		}
	}
	near("coordinate", c.CoordLimit(0), wantCoord)
	for _, k := range []float64{8, 64, 512} {
		near("block", c.BlockLimit(int(k), 0), wantBlock(k))
	}
	near("history coordinate", c.HistCoordLimit(5, 0), wantHist(5))
	wantHistNorm := func(n float64) float64 {
		return n*(E+step/2*math.Sqrt(d)) + s*chi(d) + 2*n*(f-1)*wantBlock(d)
	}
	near("history norm", c.HistBlockLimit(d, 7, 0), wantHistNorm(7))
	t.Logf("noise per coordinate %.4g; coordinate limit %.4g; blocks of 8, 64, 512: %.4g %.4g %.4g; L2 %.4g",
		s, c.CoordLimit(0), c.BlockLimit(8, 0), c.BlockLimit(64, 0), c.BlockLimit(512, 0), c.NormBound())

	x := make([]float64, d)
	try := func(name string, h *History, wantErr bool) {
		t.Helper()
		err := c.Check(x, mechanism.Norm(x), h)
		if wantErr && !errors.Is(err, ErrImplausible) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
		if !wantErr && err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
	// A spike on one coordinate (the spike attack, scaled to the
	// new limit).
	x[7849] = 1.01 * wantCoord
	try("spike 1.01 x coordinate limit", nil, true)
	x[7849] = 0.99 * wantCoord
	try("spike 0.99 x coordinate limit", nil, false)
	// A shift spread evenly over 8 coordinates, each under the
	// coordinate limit, over the block limit.
	clear(x)
	for i := 8; i < 16; i++ {
		x[i] = 1.01 * wantBlock(8) / math.Sqrt(8)
	}
	try("block of 8 at 1.01 x its limit", nil, true)
	for i := 8; i < 16; i++ {
		x[i] = 0.99 * wantBlock(8) / math.Sqrt(8)
	}
	try("block of 8 at 0.99 x its limit", nil, false)
	// A shift over 64 coordinates.
	clear(x)
	for i := 64; i < 128; i++ {
		x[i] = 1.01 * wantBlock(64) / 8
	}
	try("block of 64 at 1.01 x its limit", nil, true)
	// History: the same coordinate pushed every round, each message under
	// the coordinate limit; the fifth running sum is 1% over its limit.
	clear(x)
	var h History
	push := 1.01 * wantHist(5) / 5
	if push > wantCoord {
		t.Fatalf("test setting: per-round push %.4g is above the message limit %.4g", push, wantCoord)
	}
	x[3] = push
	for n := 1; n <= 4; n++ {
		try("history under its limit", &h, false)
		h.Add(x)
	}
	try("history of 5 at 1.01 x its limit", &h, true)
	var rej *Rejection
	if err := c.Check(x, mechanism.Norm(x), &h); !errors.As(err, &rej) || !rej.History || rej.Rounds != 5 || rej.Lo != 3 {
		t.Errorf("history rejection %+v (%v)", rej, err)
	}
	h.Reset()
	x[3] = 0.99 * wantHist(5) / 5
	for n := 1; n <= 4; n++ {
		h.Add(x)
	}
	try("history of 5 at 0.99 x its limit", &h, false)
	// A dense drift: the same direction every round, spread so thin that
	// no coordinate or block test of the sum sees it; the sum's norm does.
	h.Reset()
	n := 12
	a := 1.01 * wantHistNorm(float64(n)) / float64(n) / math.Sqrt(d)
	for i := range x {
		x[i] = a
	}
	if a*math.Sqrt(d) > c.NormBound() {
		t.Fatalf("test setting: drift %.4g above the norm bound", a*math.Sqrt(d))
	}
	for range n - 1 {
		try("drift under its limit", &h, false)
		h.Add(x)
	}
	try("drift of 12 rounds at 1.01 x the running sum's norm limit", &h, true)

	// Persistence: a push hidden in the first message, as large as a
	// noise draw, then nothing; the running sum keeps it. The limit from
	// the derivation (PersistLimit's doc) with its quantiles written out.
	_, _ = ncRef(t, p, d)
	sens := 2 * p.S() / float64(p.Batch)
	hiZ, _ := mechanism.DiscreteSigma(algo.NCSigma(p, 200), sens, step, d)
	s1 := step * float64(hiZ)
	chiY := math.Sqrt(d + 2*math.Sqrt(d*math.Log(2*R/prob)) + 2*math.Log(2*R/prob))
	zp := math.Sqrt(2 * math.Log(12*R/prob))
	ep := E + step/2*math.Sqrt(d)
	wantPersist := func(n float64) float64 {
		r := n * (f - 1) * c.NormBound()
		return (n-1)*n*ep*ep + 2*(n-1)*ep*s1*zp + ep*s1*chiY + s1*s1*chiY*zp + r*(2*n*c.NormBound()+r)
	}
	near("persistence", c.PersistLimit(2, 0), wantPersist(2))
	t.Logf("persistence limit at n = 2: %.4g (a kept push of norm %.4g); one draw's norm %.4g", c.PersistLimit(2, 0), math.Sqrt(c.PersistLimit(2, 0)), s1*chiY)
	for _, tc := range []struct {
		scale   float64
		refused bool
	}{{1.01, true}, {0.99, false}} {
		h = History{FromStart: true}
		beta := tc.scale * math.Sqrt(wantPersist(2))
		for i := range x {
			x[i] = beta / math.Sqrt(d)
		}
		try("first message", &h, false)
		h.Add(x)
		clear(x)
		try("nothing after a kept push", &h, tc.refused)
		if !tc.refused {
			continue
		}
		h.FromStart = false
		try("the same without the history's start", &h, false)
	}
}

// TestCheckerRejectsWithReason checks the error's contract: errors.Is
// matches ErrImplausible, the teacher's words carry no symbols, and the
// norm test is the same as UpdateBound.
func TestCheckerRejectsWithReason(t *testing.T) {
	p := baseParams("nc")
	c, err := NewChecker(p, 18)
	if err != nil {
		t.Fatal(err)
	}
	B, _, _ := UpdateBound(p, 18)
	if c.NormBound() != B {
		t.Errorf("norm bound %v, UpdateBound %v", c.NormBound(), B)
	}
	x := make([]float64, 18)
	x[0] = 2 * B
	err = c.Check(x, 2*B, nil)
	var rej *Rejection
	if !errors.Is(err, ErrImplausible) || !errors.As(err, &rej) || rej.Test != TestNorm {
		t.Fatalf("norm: %v", err)
	}
	for _, r := range []Rejection{{Test: TestNorm}, {Test: TestCoordinate}, {Test: TestBlock}, {Test: TestBlock, History: true, Rounds: 4}} {
		w := r.Words()
		if w == "" || containsAny(w, "=<>^_|") {
			t.Errorf("%+v: words %q", r, w)
		}
	}
	if err := c.Check(x[:3], 1, nil); err == nil || errors.Is(err, ErrImplausible) {
		t.Errorf("short message: %v", err)
	}
}

func containsAny(s, chars string) bool {
	for _, r := range s {
		for _, c := range chars {
			if r == c {
				return true
			}
		}
	}
	return false
}

// TestCheckerFollowsAsks checks the noise allowed to a device asked a few
// times: the limits of its a-th answer are those of the a-th release's
// noise (sigma_Z(a) and sigma_Z(a-1) by the device's own rule), much
// tighter than at the release cap early on; a device whose history is not
// from the start, or that was never recorded as asked, gets the cap's.
// An honest device answering every ask is covered by
// TestCheckerPassesHonestDevices (it calls Ask before each Check); here a
// spike 1% over the limit of the first answer is refused, and the same
// spike passes where the asks are unknown.
func TestCheckerFollowsAsks(t *testing.T) {
	const d = 7850
	p := optim.Params{Algorithm: "nc", M: 30, Cohort: 10, Rounds: 200, Batch: 16, Clip: 1, Eta: 0.5, Rho: 1.5}
	c, err := NewChecker(p, d)
	if err != nil {
		t.Fatal(err)
	}
	sens := 2 * p.S() / float64(p.Batch)
	step, _ := mechanism.GridStep(sens, d)
	z1, err := mechanism.DiscreteSigma(algo.NCSigma(p, 1), sens, step, d)
	if err != nil {
		t.Fatal(err)
	}
	const f = 1 + 1.0/(1<<23)
	zc := math.Sqrt(2 * math.Log(2*d*200*200/(1e-9/6)))
	want := f * (p.S() + step/2 + step*float64(z1)*zc) // sigma_Z(0) = 0: nothing to cancel
	if got := c.CoordLimit(1); !(got <= want*(1+1e-12) && got >= 0.999*want) {
		t.Errorf("coordinate limit of a first answer %.6g, derivation %.6g", got, want)
	}
	if !(c.CoordLimit(1) < c.CoordLimit(50) && c.CoordLimit(50) < c.CoordLimit(0)) || c.CoordLimit(0) != c.CoordLimit(200) {
		t.Errorf("limits by asks: 1 %.4g, 50 %.4g, cap %.4g, unknown %.4g", c.CoordLimit(1), c.CoordLimit(50), c.CoordLimit(200), c.CoordLimit(0))
	}
	t.Logf("coordinate limit: first answer %.4g, 50th %.4g, cap %.4g", c.CoordLimit(1), c.CoordLimit(50), c.CoordLimit(0))
	x := make([]float64, d)
	x[100] = 1.01 * want
	h := History{FromStart: true}
	h.Ask()
	if err := c.Check(x, mechanism.Norm(x), &h); !errors.Is(err, ErrImplausible) {
		t.Errorf("spike over the first answer's limit accepted: %v", err)
	}
	for _, other := range []History{{FromStart: false}, {FromStart: true}} {
		if err := c.Check(x, mechanism.Norm(x), &other); err != nil {
			t.Errorf("asks unknown (%+v): the cap's limits apply, but refused: %v", other, err)
		}
	}
	x[100] = 0.99 * want
	if err := c.Check(x, mechanism.Norm(x), &h); err != nil {
		t.Errorf("spike under the first answer's limit refused: %v", err)
	}
}

// TestCheckerSignalBound guards the assumed signal bound
// (Params.SignalBound): with D stated, the running-sum limits are the
// derivation's with the sum of n estimates bounded by E + (n - 1) D in
// place of n E, no looser (a checker that ignores D, or uses 1.1 D,
// fails); the per-message limits and the norm bound are unchanged; a
// dense drift held at 0.99 x the running sum's limit passes for 12 rounds
// and one at 1.01 x is refused, where the checker without D accepts it.
func TestCheckerSignalBound(t *testing.T) {
	const d = 7850
	base := optim.Params{Algorithm: "nc", M: 30, Cohort: 10, Rounds: 200, Batch: 16, Clip: 1, Eta: 0.5, Rho: 1.5}
	const D, E = 0.2, 1.0
	p := base
	p.SignalBound = D
	c, err := NewChecker(p, d)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewChecker(base, d)
	if err != nil {
		t.Fatal(err)
	}
	same := func(name string, got, want float64) {
		t.Helper()
		if !(math.Abs(got-want) <= 1e-12*want) {
			t.Errorf("%s: %.10g, want %.10g", name, got, want)
		}
	}
	// The per-message tests and the norm test keep E.
	same("coordinate", c.CoordLimit(0), plain.CoordLimit(0))
	same("block of 64", c.BlockLimit(64, 9), plain.BlockLimit(64, 9))
	same("norm", c.NormBound(), plain.NormBound())
	// A running sum of n: n E replaced by E + (n - 1) D, everything else
	// (rounding, noise, compressor) the same.
	for _, n := range []int{1, 2, 5, 40} {
		fn := float64(n)
		less := fn*E - min(fn*E, E+(fn-1)*D)
		same(fmt.Sprintf("running sum's coordinate, n = %d", n), c.HistCoordLimit(n, 0), plain.HistCoordLimit(n, 0)-less)
		same(fmt.Sprintf("running sum's block of 512, n = %d", n), c.HistBlockLimit(512, n, 7), plain.HistBlockLimit(512, n, 7)-less)
		same(fmt.Sprintf("running sum's norm, n = %d", n), c.HistBlockLimit(d, n, 0), plain.HistBlockLimit(d, n, 0)-less)
	}
	// Persistence: ||V_k|| <= E + (k - 1) D + k h sqrt(d)/2 in place of
	// k E' in the first two terms (PersistLimit's derivation).
	_, step := ncRef(t, p, d)
	sens := 2 * p.S() / float64(p.Batch)
	hiZ, err := mechanism.DiscreteSigma(algo.NCSigma(p, 200), sens, step, d)
	if err != nil {
		t.Fatal(err)
	}
	s1 := step * float64(hiZ)
	zp := math.Sqrt(2 * math.Log(12*200/(1e-9/6)))
	r := step / 2 * math.Sqrt(d)
	for _, n := range []float64{2, 3, 30} {
		plainV := func(k float64) float64 { return k * (E + r) }
		withD := func(k float64) float64 { return E + (k-1)*D + k*r }
		want := plain.PersistLimit(int(n), 0) - plainV(n-1)*plainV(n) - 2*plainV(n-1)*s1*zp + withD(n-1)*withD(n) + 2*withD(n-1)*s1*zp
		if !(math.Abs(c.PersistLimit(int(n), 0)-want) <= 1e-9*want) {
			t.Errorf("persistence limit at n = %v: %.10g, want %.10g", n, c.PersistLimit(int(n), 0), want)
		}
	}

	// A dense drift at the limit of D: refused at 1.01 x, accepted at
	// 0.99 x, and accepted at 1.01 x by the checker without D.
	x := make([]float64, d)
	const rounds = 12
	for _, tc := range []struct {
		scale   float64
		chk     *Checker
		refused bool
	}{{1.01, c, true}, {0.99, c, false}, {1.01, plain, false}} {
		a := tc.scale * c.HistBlockLimit(d, rounds, 0) / rounds / math.Sqrt(d)
		for i := range x {
			x[i] = a
		}
		var h History
		var err error
		for r := 1; r <= rounds && err == nil; r++ {
			if err = tc.chk.Check(x, mechanism.Norm(x), &h); err == nil {
				h.Add(x)
			}
		}
		if refused := errors.Is(err, ErrImplausible); refused != tc.refused {
			t.Errorf("drift at %.2f x the running sum's limit with D (checker with D: %v): refused %v (%v), want %v", tc.scale, tc.chk == c, refused, err, tc.refused)
		}
	}

	// D at or above E changes nothing; a bad D is refused.
	for _, big := range []float64{1, 5} {
		q := base
		q.SignalBound = big
		cq, err := NewChecker(q, d)
		if err != nil {
			t.Fatal(err)
		}
		if cq.HistBlockLimit(d, 4, 0) != plain.HistBlockLimit(d, 4, 0) || cq.PersistLimit(4, 0) != plain.PersistLimit(4, 0) {
			t.Errorf("D = %v >= E changed the limits", big)
		}
	}
	q := base
	for _, bad := range []float64{-1, math.Inf(1), math.NaN()} {
		q.SignalBound = bad
		if algo.Validate(q) == nil {
			t.Errorf("signal bound %v accepted", bad)
		}
	}
}
