package coordinator_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/coordinator"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/store"
	"browserfl/device"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// sumRecorder is a server half that records the sum and count of each
// round it applies.
type sumRecorder struct {
	optim.Server
	mu      sync.Mutex
	sums    map[int][]float64
	ns      map[int]int
	applied map[int]int // ApplySum calls for each round
}

func (s *sumRecorder) ApplySum(t int, sum []float64, n int) error {
	s.mu.Lock()
	s.sums[t], s.ns[t] = slices.Clone(sum), n
	if s.applied == nil {
		s.applied = map[int]int{}
	}
	s.applied[t]++
	s.mu.Unlock()
	return s.Server.(optim.SumApplier).ApplySum(t, sum, n)
}

// releaseRecorder is a device half that records the integers of each
// release its runtime masks (the last of each round).
type releaseRecorder struct {
	optim.Device
	mu  *sync.Mutex
	got map[int][]int64
}

func (r releaseRecorder) GridRelease(t int) ([]int64, error) {
	x, err := r.Device.(optim.GridReleaser).GridRelease(t)
	if err == nil {
		r.mu.Lock()
		r.got[t] = slices.Clone(x)
		r.mu.Unlock()
	}
	return x, err
}

// frameWatch is a transport that checks every binary frame a device
// writes: never an update frame, and a masked input that is not the
// release in the clear.
type frameWatch struct {
	device.Transport
	rec     *releaseRecorder
	updates *atomic.Int64 // update frames written (must stay 0)
	clear   *atomic.Int64 // masked inputs equal to the release in more than half their coordinates
	masked  *atomic.Int64
	// shrink, when set, plays a coordinator that announces a cohort
	// below the threshold to this device (shrinker).
	shrink *shrinker
	// replay, when set, sends the device's first advertisement again,
	// late, just before its next one (replayer).
	replay *replayer
	// spoil, when set, wraps the device's first masked input (spoiler).
	spoil *spoiler
}

// spoiler plays a hostile device that follows the protocol but whose
// first masked input carries, in coordinate 0, half the ring beyond its
// release (the masked input is not authenticated: adding 2^(k-1) to y
// adds it to the decoded sum), so that the round's sum wraps.
type spoiler struct {
	mu    sync.Mutex
	fired bool
	then  func() // run once, at the device's next masked input
}

// rewrite returns b, or b with its masked input spoiled if it is the
// device's first.
func (s *spoiler) rewrite(b []byte) []byte {
	f, err := wire.DecodeSecAggToCoordinator(b, wire.Limits{})
	if err != nil || f.Step != wire.StepMasked {
		return b
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fired {
		if then := s.then; then != nil {
			s.then = nil
			then()
		}
		return b
	}
	s.fired = true
	m := *f.Msg.(*secagg.MaskedInput)
	m.Y = slices.Clone(m.Y)
	m.Y[0] = (m.Y[0] + 1<<(m.Bits-1)) & (1<<m.Bits - 1)
	out, err := wire.EncodeSecAgg(f.T, &m)
	if err != nil {
		panic(err)
	}
	return out
}

// replayer keeps a device's first secure aggregation advertisement and
// writes it again right before the device's second one: a message of
// an earlier attempt arriving late, as from a slow page.
type replayer struct {
	mu       sync.Mutex
	first    []byte
	replayed bool
}

// before returns the stale frame to write before b, if b is the
// device's second advertisement.
func (p *replayer) before(b []byte) []byte {
	f, err := wire.DecodeSecAggToCoordinator(b, wire.Limits{})
	if err != nil || f.Step != wire.StepAdvertise {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.first == nil:
		p.first = slices.Clone(b)
	case !p.replayed:
		p.replayed = true
		return p.first
	}
	return nil
}

// shrinker cuts the directory of the first secure aggregation setup a
// device reads to keep members (its own entry among them), and counts
// what the device writes in answer until its next setup.
type shrinker struct {
	keep     int
	mu       sync.Mutex
	cut      bool // a setup was cut
	answered bool // the device wrote a secure aggregation step after the cut setup, before another
	later    int  // setups read after the cut one
}

// read rewrites b, a frame to the device, when it is the first setup.
func (s *shrinker) read(b []byte) []byte {
	f, err := wire.DecodeSecAggToDevice(b, wire.Limits{})
	if err != nil || f.Step != wire.StepSetup {
		return b
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		s.later++
		return b
	}
	m := *f.Msg.(*wire.SecAggSetup)
	kept := []wire.SecAggMember{}
	for _, e := range m.Members {
		if e.ID == m.You || len(kept) < s.keep-1 {
			kept = append(kept, e)
		}
	}
	m.Members = kept
	out, err := wire.EncodeSecAgg(f.T, &m)
	if err != nil {
		panic(err)
	}
	s.cut = true
	return out
}

// wrote records a secure aggregation step the device wrote.
func (s *shrinker) wrote() {
	s.mu.Lock()
	if s.cut && s.later == 0 {
		s.answered = true
	}
	s.mu.Unlock()
}

type watchConn struct {
	device.Conn
	w frameWatch
}

func (w frameWatch) Dial(ctx context.Context) (device.Conn, error) {
	c, err := w.Transport.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return watchConn{c, w}, nil
}

func (c watchConn) Read(ctx context.Context) (websocket.MessageType, []byte, error) {
	typ, b, err := c.Conn.Read(ctx)
	if err == nil && typ == websocket.MessageBinary && c.w.shrink != nil {
		b = c.w.shrink.read(b)
	}
	return typ, b, err
}

func (c watchConn) Write(ctx context.Context, typ websocket.MessageType, b []byte) error {
	if typ == websocket.MessageBinary && c.w.spoil != nil {
		b = c.w.spoil.rewrite(b)
	}
	if typ == websocket.MessageBinary && c.w.replay != nil {
		if stale := c.w.replay.before(b); stale != nil {
			if err := c.Conn.Write(ctx, typ, stale); err != nil {
				return err
			}
		}
	}
	if typ == websocket.MessageBinary && c.w.shrink != nil {
		if _, err := wire.DecodeSecAggToCoordinator(b, wire.Limits{}); err == nil {
			c.w.shrink.wrote()
		}
	}
	if typ == websocket.MessageBinary {
		kind, _, _ := wire.PeekKind(b)
		if kind == wire.KindUpdate {
			c.w.updates.Add(1)
		}
		if f, err := wire.DecodeSecAggToCoordinator(b, wire.Limits{}); err == nil && f.Step == wire.StepMasked {
			m := f.Msg.(*secagg.MaskedInput)
			c.w.rec.mu.Lock()
			x := c.w.rec.got[f.T]
			c.w.rec.mu.Unlock()
			same := 0
			for i, v := range x {
				if uint64(v)&(1<<m.Bits-1) == m.Y[i] {
					same++
				}
			}
			if 2*same > len(x) {
				c.w.clear.Add(1)
			}
			c.w.masked.Add(1)
		}
	}
	return c.Conn.Write(ctx, typ, b)
}

// sharedRun is a shared-noise session of 10 native devices over real
// websockets (threshold 7), in which gone[t][i] says that device i leaves
// at round t's first attempt, right before (false) or right after (true)
// its masked input.
type sharedRun struct {
	sess    wire.SessionParams
	a       plan.SecAgg
	c       *coordinator.Coordinator
	server  *sumRecorder
	recs    []*releaseRecorder
	rts     []*device.Runtime
	updates atomic.Int64 // update frames the devices wrote (must stay 0)
	clear   atomic.Int64 // masked inputs equal to their release in the clear
	masked  atomic.Int64
	url     string // the coordinator's HTTP server
}

func newSharedRun(t *testing.T, ctx context.Context, rounds int, gone map[int]map[int]bool) *sharedRun {
	return newSharedRunWith(t, ctx, rounds, gone, nil, nil, nil, nil)
}

// newSharedRunWith is newSharedRun with shrink[i] cutting device i's first
// setup (shrinker), onEvent[i] given device i's events, replay[i]
// replaying its first advertisement (replayer) and spoil[i] wrapping its
// first masked input (spoiler).
func newSharedRunWith(t *testing.T, ctx context.Context, rounds int, gone map[int]map[int]bool, shrink map[int]*shrinker, onEvent map[int]func(device.Event), replay map[int]*replayer, spoil map[int]*spoiler) *sharedRun {
	return newSharedClass(t, ctx, 10, 0, rounds, gone, shrink, onEvent, replay, spoil)
}

// newSharedClass is newSharedRunWith for a class of n devices, all in
// every round (threshold 70%); with lobby > 0 the session starts in its
// lobby with a template of that cohort and is sized for the n devices at
// Start (call start).
func newSharedClass(t *testing.T, ctx context.Context, n, lobby, rounds int, gone map[int]map[int]bool, shrink map[int]*shrinker, onEvent map[int]func(device.Event), replay map[int]*replayer, spoil map[int]*spoiler) *sharedRun {
	t.Helper()
	r := &sharedRun{sess: wire.SessionParams{Name: "shared", Dim: 10, DeadlineMillis: 3000, Algorithm: wire.SharedNoiseAlgorithm, Model: "logreg",
		Features: 4, Classes: 2, M: n, Cohort: n, Rounds: rounds, Batch: 8, Clip: 1, Eta: 0.05, Rho: 50, Compressor: "f64", Threshold: (7*n + 9) / 10}}
	var err error
	if r.a, err = plan.SessionSecAgg(r.sess); err != nil {
		t.Fatal(err)
	}
	params := r.sess
	var seed mechanism.Seed
	seed[0] = 1
	inner, err := optim.NewServer(params, make([]float64, r.sess.Dim), mechanism.NewStream(seed, 0))
	if err != nil {
		t.Fatal(err)
	}
	r.server = &sumRecorder{Server: inner, sums: map[int][]float64{}, ns: map[int]int{}}
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := coordinator.Config{Session: r.sess, JoinCode: "join-me", Server: r.server, Store: st,
		MinDevices: n, Seed: 5, TrustNewDevices: true, Logger: quietLogger()}
	if lobby > 0 {
		final := r.sess
		cfg.Session.Cohort, cfg.Session.Threshold, cfg.Server = lobby, lobby, nil
		cfg.Lobby = true
		cfg.NewServer = func(wire.SessionParams) (optim.Server, error) { return r.server, nil }
		cfg.Size = func(wire.SessionParams, int) (wire.SessionParams, error) { return final, nil }
	}
	if r.c, err = coordinator.New(cfg); err != nil {
		t.Fatal(err)
	}
	r.url = newTestServer(t, r.c).URL
	url := "ws" + r.url[4:] + "/ws"
	for i := range r.sess.M {
		var s mechanism.Seed
		s[0], s[1] = 2, byte(i)
		mdl, _ := model.New("logreg", 4, 2)
		dev, err := optim.NewDevice(params, mdl, mechanism.NewStream(s, 0))
		if err != nil {
			t.Fatal(err)
		}
		rec := &releaseRecorder{Device: dev, mu: &sync.Mutex{}, got: map[int][]int64{}}
		r.recs = append(r.recs, rec)
		fired := map[int]bool{}
		leaves := func(t int, after bool) bool {
			a, ok := gone[t][i]
			if !ok || a != after || fired[t] {
				return false
			}
			fired[t] = true
			return true
		}
		cfg := device.Config{JoinCode: "join-me", Storage: &device.MemStorage{}, Unlimited: true,
			Data: blobs(400, uint64(i)), MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
			Transport: frameWatch{Transport: device.WebSocket{URL: url}, rec: rec, updates: &r.updates, clear: &r.clear, masked: &r.masked, shrink: shrink[i], replay: replay[i], spoil: spoil[i]},
			OnEvent:   onEvent[i],
			NewDevice: func(optim.Params) (optim.Device, error) { return rec, nil },
			Hooks: &device.Hooks{
				BeforeSend: func(t int) (time.Duration, bool) { return 0, leaves(t, false) },
				AfterSend:  func(t int) bool { return leaves(t, true) },
			}}
		rt, err := device.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		r.rts = append(r.rts, rt)
	}
	return r
}

// runUntilCommitted runs the coordinator and every device until round n
// commits, then stops them; it fails the test if ctx ends first.
func (r *sharedRun) runUntilCommitted(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	r.runUntil(t, ctx, fmt.Sprintf("round %d committed", n), func() bool { return r.c.Committed() >= n })
}

// runUntilSettled runs the coordinator and every device until round n
// commits and every device has learnt its outcome (nothing pending),
// then stops them; it fails the test if ctx ends first.
func (r *sharedRun) runUntilSettled(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	r.runUntil(t, ctx, fmt.Sprintf("round %d committed and every device settled", n), func() bool {
		if r.c.Committed() < n {
			return false
		}
		for _, rt := range r.rts {
			if rt.State().Pending != 0 {
				return false
			}
		}
		return true
	})
}

// runUntil runs the coordinator and every device until done, then stops
// them; it fails the test if ctx ends first.
func (r *sharedRun) runUntil(t *testing.T, ctx context.Context, what string, done func() bool) {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- r.c.Run(runCtx) }()
	for _, rt := range r.rts {
		go rt.Run(runCtx) //nolint:errcheck // stopped by runCtx
	}
	for !done() && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-runErr
	if ctx.Err() != nil {
		t.Fatalf("%s: never", what)
	}
}

// checkSum compares round t's committed sum bit for bit with the sum of
// the releases (grid integers times the grid step) of devices inc, and
// the count the server half was given with theirs.
func (r *sharedRun) checkSum(t *testing.T, round int, inc []int) {
	t.Helper()
	want := make([]float64, r.sess.Dim)
	for _, i := range inc {
		x := r.recs[i].got[round]
		for k := range want {
			want[k] += float64(x[k]) * r.a.Step
		}
	}
	r.server.mu.Lock()
	got, n := r.server.sums[round], r.server.ns[round]
	r.server.mu.Unlock()
	if n != len(inc) || !slices.Equal(got, want) {
		t.Errorf("round %d: sum of %d releases %v, want the %d of devices %v: %v", round, n, got, len(inc), inc, want)
	}
}

// checkFrames: no device wrote an update frame, none a masked input equal
// to its release in the clear (in more than half its coordinates; a
// uniform mask leaves a coordinate unchanged with probability 2^-32), and
// at least min masked inputs were seen.
func (r *sharedRun) checkFrames(t *testing.T, min int64) {
	t.Helper()
	if u, cl, m := r.updates.Load(), r.clear.Load(), r.masked.Load(); u != 0 || cl != 0 || m < min {
		t.Errorf("%d update frames, %d masked inputs in the clear, %d masked inputs: want 0, 0 and at least %d", u, cl, m, min)
	}
}

// TestSharedNoiseDropouts runs two rounds of a shared-noise session of
// 10 native devices through the coordinator over real websockets
// (threshold 7):
//
//   - round 1: 3 devices (30%) leave after sharing their keys, right
//     before their masked input: the round commits the exact sum of the
//     other 7 releases (the coordinator removes their pairwise masks with
//     the 3 from reconstructed keys), and the 3 abort theirs;
//   - round 2: 3 devices leave right after their masked input: their
//     releases are in the committed sum of all 10, and they learn
//     "included" when they come back.
func TestSharedNoiseDropouts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	gone := map[int]map[int]bool{1: {1: false, 4: false, 8: false}, 2: {2: true, 5: true, 9: true}}
	r := newSharedRun(t, ctx, 2, gone)
	runErr := make(chan error, 1)
	go func() { runErr <- r.c.Run(ctx) }()
	runDevices(t, ctx, r.rts)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	r.checkSum(t, 1, []int{0, 2, 3, 5, 6, 7, 9})
	r.checkSum(t, 2, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	for i, rt := range r.rts {
		st := rt.State()
		inc, exc := 2, 0
		if _, ok := gone[1][i]; ok {
			inc, exc = 1, 1
		}
		if st.Pending != 0 || st.Included != inc || st.Excluded != exc {
			t.Errorf("device %d: pending %d, included %d, excluded %d; want 0, %d, %d", i, st.Pending, st.Included, st.Excluded, inc, exc)
		}
	}
	r.checkFrames(t, 17) // 7 in round 1 (3 left before theirs), 10 in round 2
}

// TestSharedNoiseBelowThreshold: 4 of 10 devices leave before their
// masked input, leaving 6 below the threshold of 7: the round is
// discarded (nothing applied, nothing committed), every device aborts its
// pending release, and the round runs again under the same number and
// commits the exact sum of all 10 fresh releases.
func TestSharedNoiseBelowThreshold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	gone := map[int]map[int]bool{1: {0: false, 3: false, 6: false, 7: false}}
	// Three rounds, so that after round 1's two attempts every device
	// still has a release left for round 2; the test stops after round 1.
	r := newSharedRun(t, ctx, 3, gone)
	r.runUntilCommitted(t, ctx, 1)
	r.checkSum(t, 1, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	for i, rt := range r.rts {
		if st := rt.State(); st.Excluded != 1 {
			t.Errorf("device %d: %d rounds excluded, want 1 (the discarded attempt)", i, st.Excluded)
		}
	}
	r.checkFrames(t, 16)
}

// TestSharedNoiseSpoiledSum: device 4 follows the protocol but its first
// masked input wraps the ring (half the ring added to coordinate 0, far
// beyond the range an honest client masks). The sum secure aggregation
// unmasks fails the round's check stage (engine.CheckSum): the round is
// discarded exactly as one below its threshold (nothing applied, every
// device told "excluded" once, so every device aborts its pending release
// and its noise state stays consistent), counted in
// browserfl_rejected_sums_total and browserfl_discarded_rounds_total; the
// round runs again, device 4 now behaves, and it commits the exact sum of
// all 10 fresh releases.
func TestSharedNoiseSpoiledSum(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	spoil := &spoiler{}
	r := newSharedRunWith(t, ctx, 3, nil, nil, nil, nil, map[int]*spoiler{4: spoil})
	// The teacher's Pause, as round 1's second attempt runs, holds round
	// 2 back until the test has stopped the run: what it reads afterwards
	// is round 1's alone (on a quick machine the rounds after it used to
	// run meanwhile, and one open at the stop was discarded too).
	paused := make(chan error, 1)
	spoil.then = func() { paused <- r.c.Pause() }
	r.runUntilSettled(t, ctx, 1)
	select {
	case err := <-paused:
		if err != nil {
			t.Fatalf("pause during round 1's second attempt: %v", err)
		}
	default:
		t.Fatal("device 4 sent no second masked input")
	}
	if !spoil.fired {
		t.Fatal("device 4 never sent a masked input")
	}
	r.server.mu.Lock()
	applied, calls := len(r.server.sums), r.server.applied[1]
	r.server.mu.Unlock()
	if applied != 1 || calls != 1 {
		t.Errorf("sums applied for %d rounds, %d for round 1; want round 1's second attempt alone", applied, calls)
	}
	r.checkSum(t, 1, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	for i, rt := range r.rts {
		if st := rt.State(); st.Excluded != 1 || st.Pending != 0 {
			t.Errorf("device %d: %d rounds excluded, %d pending; want 1 (the discarded attempt), 0", i, st.Excluded, st.Pending)
		}
	}
	for _, name := range []string{"browserfl_rejected_sums_total", "browserfl_discarded_rounds_total"} {
		if got := metric(t, r.url, name); got != "1" {
			t.Errorf("%s = %s, want 1", name, got)
		}
	}
	r.checkFrames(t, 20)
}

// TestSharedNoiseLateAttempt: round 1's first attempt fails (4 of 10
// leave before their masked input, as in TestSharedNoiseBelowThreshold)
// and device 2's advertisement of that attempt arrives again, late, in
// the second attempt's advertising step (a slow page's message). It is
// dropped as late, not refused: the device keeps its connection and its
// part in the second attempt, which commits the exact sum of all 10.
func TestSharedNoiseLateAttempt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	gone := map[int]map[int]bool{1: {0: false, 3: false, 6: false, 7: false}}
	late := &replayer{}
	r := newSharedRunWith(t, ctx, 3, gone, nil, nil, map[int]*replayer{2: late}, nil)
	r.runUntilCommitted(t, ctx, 1)
	late.mu.Lock()
	replayed := late.replayed
	late.mu.Unlock()
	if !replayed {
		t.Fatal("device 2's first advertisement was never sent again")
	}
	r.checkSum(t, 1, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
}

// TestSharedNoiseDeviceRefusesSmallCohort: a device whose round setup
// announces a cohort of 6, below the session's threshold of 7 (the
// coordinator is played by the real one, with that device's setup cut on
// its way in), takes no part in the round: it answers no step of it,
// prepares nothing, and comes back for a later setup. The other nine
// carry the round to its commit, and each is told the size of its
// cohort (the page says how many classmates share the noise).
func TestSharedNoiseDeviceRefusesSmallCohort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cut := &shrinker{keep: 6}
	var mu sync.Mutex
	cohorts := map[int]int{} // device -> the cohort of its last EventCohort
	events := map[int]func(device.Event){}
	for i := range 10 {
		events[i] = func(e device.Event) {
			if e.Kind == device.EventCohort {
				mu.Lock()
				cohorts[i] = e.Cohort
				mu.Unlock()
			}
		}
	}
	r := newSharedRunWith(t, ctx, 3, nil, map[int]*shrinker{0: cut}, events, nil, nil)
	r.runUntilCommitted(t, ctx, 1)
	cut.mu.Lock()
	wasCut, answered := cut.cut, cut.answered
	cut.mu.Unlock()
	if !wasCut || answered {
		t.Errorf("setup cut to 6 of 10: cut %v, the device answered it %v; want true, false", wasCut, answered)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < 10; i++ {
		if cohorts[i] < r.a.Threshold || cohorts[i] > 10 {
			t.Errorf("device %d: told a cohort of %d, want %d..10", i, cohorts[i], r.a.Threshold)
		}
	}
}

// TestSharedNoiseRefusesUpdates: the coordinator of a shared-noise
// session refuses a plain update frame as a bad frame (a device's
// release must reach it only masked), before looking at the round.
func TestSharedNoiseRefusesUpdates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := newSharedRun(t, ctx, 2, nil)
	r.url = newTestServer(t, r.c).URL
	url := "ws" + r.url[4:] + "/ws"
	ws := dialRaw(t, ctx, url, true)
	b, err := wire.EncodeUpdate(wire.UpdateFrame{T: 1, Payload: []byte{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageBinary, b); err != nil {
		t.Fatal(err)
	}
	if code, _ := readClose(ctx, ws); code != wire.CodeBadFrame {
		t.Errorf("an update frame in a shared-noise session closed with %q, want %q", code, wire.CodeBadFrame)
	}
}

// TestSharedNoiseLargeClass: in a class of 16 with a small model (d = 10)
// each device's shares for the 15 others (1,307 bytes) outgrow an
// update's frame limit (16 d + 1 KiB = 1,184): the coordinator reads
// frames up to wire.SecAggFrameMax of the cohort, also on the connections
// it already holds when a lobby (here of template cohort 1: a limit of
// 1,280 bytes) starts with all 16. Round 1 commits the exact sum of all
// 16; with the update's limit alone every device was cut off at its
// shares and no round ever committed.
func TestSharedNoiseLargeClass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lobby int
	}{{"a session of 16", 0}, {"a lobby started with 16", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			r := newSharedClass(t, ctx, 16, tc.lobby, 2, nil, nil, nil, nil, nil)
			started := tc.lobby == 0
			r.runUntil(t, ctx, "round 1 committed", func() bool {
				if !started && r.c.Status().Devices.Connected == 16 {
					if err := r.c.Start(ctx); err != nil {
						t.Fatalf("start: %v", err)
					}
					started = true
				}
				return r.c.Committed() >= 1
			})
			all := make([]int, 16)
			for i := range all {
				all[i] = i
			}
			r.checkSum(t, 1, all)
			// At the first attempt: a cut-off device reconnects with the
			// new limit, but its release for the discarded attempt is
			// spent.
			if got := metric(t, r.url, "browserfl_discarded_rounds_total"); got != "0" {
				t.Errorf("%s rounds discarded, want 0", got)
			}
		})
	}
}

// TestPaceWithinMessageRate: with no round gap the coordinator runs its
// rounds no faster than each device's frames fit in the message rate it
// holds connections to (wsconn.Limits.MsgRate, 20 a second: a shared
// round's five frames take a quarter of a second of it), so 30 quick
// rounds of shared noise close no honest device for flooding and never
// make one connect again.
func TestPaceWithinMessageRate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var connects atomic.Int64
	count := func(ev device.Event) {
		if ev.Kind == device.EventConnected {
			connects.Add(1)
		}
	}
	r := newSharedClass(t, ctx, 3, 0, 30, nil, nil, map[int]func(device.Event){0: count, 1: count, 2: count}, nil, nil)
	r.runUntilSettled(t, ctx, 30)
	if n := r.c.Front().Met.Rejections[metrics.RejRate].Load(); n != 0 {
		t.Errorf("%d connections closed for their message rate", n)
	}
	if n := connects.Load(); n != 3 {
		t.Errorf("the 3 devices connected %d times, want once each", n)
	}
}
