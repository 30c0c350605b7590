package coordinator_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/device"
	"browserfl/internal/loopback"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// The chaos test of shared noise (secure aggregation): the coordinator
// runs as a child process (this test binary with BFL_SECAGG_CHILD set),
// SIGKILLed inside each secure aggregation step and restarted from its
// store, and in-process device runtimes are killed (restarted from what
// their storage holds) or lose their connection inside each step. The
// kills are placed by the devices' own messages (chaosEvent), not by
// timers: the coordinator is killed right after the k-th device's
// message of a step, while the others of that step wait, so the step is
// still open when it dies.

// saSnap is one line the child writes after each commit (and after each
// restart, for the restored state, without Sum).
type saSnap struct {
	T   int       `json:"t"`
	Q   []float64 `json:"q"`
	X   []float64 `json:"x"`
	Sum []float64 `json:"sum,omitempty"` // the sum ApplySum was given
	N   int       `json:"n"`             // and its count
}

// sumTap is a server half that keeps the last sum it applied.
type sumTap struct {
	optim.Server
	mu  sync.Mutex
	sum []float64
	n   int
}

func (s *sumTap) ApplySum(t int, sum []float64, n int) error {
	if err := s.Server.(optim.SumApplier).ApplySum(t, sum, n); err != nil {
		return err
	}
	s.mu.Lock()
	s.sum, s.n = slices.Clone(sum), n
	s.mu.Unlock()
	return nil
}

// runSecAggChild serves the shared-noise session BFL_SESSION on BFL_ADDR
// from the store BFL_STORE with the product's server half, appends a
// saSnap to BFL_SNAPSHOTS after every commit, and SIGKILLs itself right
// after committing round BFL_KILL_AFTER (before any decision is sent).
func runSecAggChild() error {
	var sess wire.SessionParams
	if err := json.Unmarshal([]byte(os.Getenv("BFL_SESSION")), &sess); err != nil {
		return err
	}
	killAfter, _ := strconv.Atoi(os.Getenv("BFL_KILL_AFTER"))
	st, err := store.Open(os.Getenv("BFL_STORE"))
	if err != nil {
		return err
	}
	snaps, err := os.OpenFile(os.Getenv("BFL_SNAPSHOTS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	srv, err := optim.NewServer(sess, make([]float64, sess.Dim), mechanism.NewStream(mechanism.Seed{}, 0))
	if err != nil {
		return err
	}
	tap := &sumTap{Server: srv}
	write := func(t int, applied bool) {
		s := saSnap{T: t, Q: srv.(optim.Estimator).Estimate(), X: srv.Model()}
		if applied {
			tap.mu.Lock()
			s.Sum, s.N = tap.sum, tap.n
			tap.mu.Unlock()
		}
		b, _ := json.Marshal(s)
		snaps.Write(append(b, '\n'))
		snaps.Sync()
	}
	c, err := coordinator.New(coordinator.Config{
		Session: sess, JoinCode: "join-me", Server: tap, Store: st, Seed: 42, TrustNewDevices: true,
		FillWait: time.Second, Logger: childLogger(),
		OnCommit: func(t int) {
			write(t, true)
			if t == killAfter {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		},
	})
	if err != nil {
		return err
	}
	if n := c.Committed(); n > 0 {
		write(n, false)
	}
	ln, err := net.Listen("tcp", os.Getenv("BFL_ADDR"))
	if err != nil {
		return err
	}
	go http.Serve(ln, api.Handler(c, site.Assets{}, nil))
	if err := c.Run(context.Background()); err != nil {
		return err
	}
	select {} // keep serving End to late devices until the parent kills us
}

// coordProc is the child coordinator: restarted from its store whenever
// it dies, until stop.
type coordProc struct {
	t       *testing.T
	env     []string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	stopped bool
	starts  int
}

func (p *coordProc) startLocked(extra ...string) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), p.env...), extra...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		p.t.Error(err)
		return
	}
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	p.starts++
	go func() {
		cmd.Wait()
		close(exited)
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.stopped && p.cmd == cmd {
			p.startLocked()
		}
	}()
}

// kill SIGKILLs the running child and returns once it has exited (the
// child is then started again from its store).
func (p *coordProc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

func (p *coordProc) stop() {
	p.mu.Lock()
	p.stopped = true
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// fault is what a chaosEvent does.
type fault byte

const (
	coordKill     fault = 1 + iota // SIGKILL the coordinator right after the n-th device message of the step
	devKillBefore                  // the device dies instead of sending its message of the step
	devKillAfter                   // the device dies right after sending it
	devDropBefore                  // the device's connection drops instead of sending it
	devDropAfter                   // the connection drops right after sending it
)

// chaosEvent places one fault: in round (any attempt), at the device step
// (wire.StepAdvertise, StepShareKeys, StepMasked, StepSignature,
// StepUnmasked), after the n-th message (coordKill) or on each of the
// first n devices to send one (device faults).
type chaosEvent struct {
	round int
	step  byte
	what  fault
	n     int
	hits  int
}

// director sees every secure aggregation message the devices send, one
// at a time (gate), applies the chaos events and counts what was sent.
type director struct {
	gate      sync.Mutex
	events    []*chaosEvent
	killCoord func()
	// masked counts the masked inputs written, by device and by secagg
	// round (session and attempt).
	masked   map[int]int
	attempts map[secagg.Header]int
	attemptT map[secagg.Header]int
}

var (
	errKilledByTest  = errors.New("device killed by the chaos test")
	errDroppedByTest = errors.New("connection dropped by the chaos test")
)

// write sends b, device dev's message f, applying the events.
func (d *director) write(ctx context.Context, c *chaosConn, f wire.SecAggFrame, b []byte) error {
	d.gate.Lock()
	defer d.gate.Unlock()
	var what fault
	for _, e := range d.events {
		if e.round == f.T && e.step == f.Step && e.hits < e.n {
			e.hits++
			if e.what != coordKill || e.hits == e.n {
				what = e.what
			}
			break
		}
	}
	switch what {
	case devKillBefore:
		c.tr.die()
		return errKilledByTest
	case devDropBefore:
		return errDroppedByTest
	}
	err := c.Conn.Write(ctx, websocket.MessageBinary, b)
	if err == nil && f.Step == wire.StepMasked {
		h := f.Msg.(*secagg.MaskedInput).Head()
		d.masked[c.tr.dev.i]++
		d.attempts[h]++
		d.attemptT[h] = f.T
	}
	switch what {
	case devKillAfter:
		c.tr.die()
		return errKilledByTest
	case devDropAfter:
		return errDroppedByTest
	case coordKill:
		d.killCoord()
	}
	return err
}

// chaosDev is one device across its restarts: its storage, and the
// integers of its last release of each round.
type chaosDev struct {
	i     int
	store device.MemStorage
	mu    sync.Mutex
	rel   map[int][]int64
	kills int
	final *device.Runtime
}

// mortalStorage is a device's storage as one process sees it: once the
// process is killed, nothing it does is saved any more.
type mortalStorage struct {
	inner *device.MemStorage
	dead  *atomic.Bool
}

func (s mortalStorage) Load(ctx context.Context) ([]byte, error) { return s.inner.Load(ctx) }

func (s mortalStorage) Save(ctx context.Context, b []byte) error {
	if s.dead.Load() {
		return errKilledByTest
	}
	return s.inner.Save(ctx, b)
}

// tappedDevice is the product's device half, recording the integers of
// each release (GridRelease) in its chaosDev.
type tappedDevice struct {
	optim.Device
	dev *chaosDev
}

func (d tappedDevice) GridRelease(t int) ([]int64, error) {
	x, err := d.Device.(optim.GridReleaser).GridRelease(t)
	if err == nil {
		d.dev.mu.Lock()
		d.dev.rel[t] = slices.Clone(x)
		d.dev.mu.Unlock()
	}
	return x, err
}

func (d tappedDevice) Ledger() privacy.Ledger { return d.Device.(optim.Accountant).Ledger() }
func (d tappedDevice) NextCost() float64      { return d.Device.(optim.Accountant).NextCost() }
func (d tappedDevice) NextSpent() (privacy.Spent, error) {
	return d.Device.(optim.Accountant).NextSpent()
}
func (d tappedDevice) Participations() int { return d.Device.(optim.Accountant).Participations() }

// chaosTransport dials through the director's eyes; die kills the
// device process it belongs to.
type chaosTransport struct {
	inner device.Transport
	dev   *chaosDev
	dir   *director
	die   func()
}

type chaosConn struct {
	device.Conn
	tr chaosTransport
}

func (tr chaosTransport) Dial(ctx context.Context) (device.Conn, error) {
	c, err := tr.inner.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return &chaosConn{c, tr}, nil
}

func (c *chaosConn) Write(ctx context.Context, typ websocket.MessageType, b []byte) error {
	if typ == websocket.MessageBinary {
		if f, err := wire.DecodeSecAggToCoordinator(b, wire.Limits{}); err == nil {
			return c.tr.dir.write(ctx, c, f, b)
		}
	}
	return c.Conn.Write(ctx, typ, b)
}

// run runs device d until the session ends for it, starting it again
// from its storage each time it is killed.
func (d *chaosDev) run(ctx context.Context, url string, sess wire.SessionParams, dir *director) error {
	params := sess
	for {
		pctx, cancel := context.WithCancel(ctx)
		dead := &atomic.Bool{}
		die := func() { dead.Store(true); cancel() }
		var s mechanism.Seed
		s[0], s[1], s[2] = 3, byte(d.i), byte(d.kills)
		cfg := device.Config{JoinCode: "join-me", Storage: mortalStorage{&d.store, dead}, Unlimited: true,
			Data: blobs(400, uint64(d.i)), MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
			Transport: chaosTransport{inner: device.WebSocket{URL: url}, dev: d, dir: dir, die: die},
			NewDevice: func(optim.Params) (optim.Device, error) {
				mdl, _ := model.New("logreg", 4, 2)
				dv, err := optim.NewDevice(params, mdl, mechanism.NewStream(s, 0))
				if err != nil {
					return nil, err
				}
				return tappedDevice{dv, d}, nil
			}}
		rt, err := device.New(pctx, cfg)
		if err != nil {
			cancel()
			return err
		}
		err = rt.Run(pctx)
		cancel()
		if dead.Load() {
			d.kills++
			continue
		}
		d.final = rt
		return err
	}
}

// readSaSnaps reads the child's snapshots: one state per round (two
// lines of a round must agree), the sum of the line written at its
// commit.
func readSaSnaps(t *testing.T, path string) map[int]saSnap {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]saSnap{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s saSnap
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			continue // a line torn by SIGKILL
		}
		prev, ok := out[s.T]
		if ok && (!slices.Equal(prev.Q, s.Q) || !slices.Equal(prev.X, s.X)) {
			t.Errorf("round %d has two different committed states", s.T)
		}
		if ok && prev.Sum != nil {
			if s.Sum != nil {
				t.Errorf("round %d applied twice", s.T)
			}
			continue
		}
		out[s.T] = s
	}
	return out
}

// TestSharedNoiseChaos runs a shared-noise session (24 devices, cohorts
// of 10, threshold 7, 16 rounds) against a child coordinator, with
// faults placed in every secure aggregation step:
//
//   - rounds 2-6: the coordinator SIGKILLed right after the 4th device's
//     message of, in turn, the advertisements, the key shares, the
//     masked inputs, the consistency signatures and the unmask
//     responses (restarted from its store; the round runs again);
//     round 7: killed right after its commit, before any decision;
//   - rounds 8, 9, 12, 13: one device killed (restarted from its storage)
//     and one disconnected instead of sending, in turn, its
//     advertisement, its key shares, its signature and its unmask
//     response;
//   - round 10: 3 of the 10 killed right before their masked input,
//     round 11: 3 killed right after it (30% gone either way);
//   - round 14: 4 killed before their masked input: 6 left, below the
//     threshold; round 15: one device disconnected before its masked
//     input and one right after.
//
// The session must reach its last round, and then (checkSharedChaos)
// every committed round's sum must be, bit for bit, the sum of the
// releases of the devices its record includes (at least the
// threshold), and the coordinator's model after every round exactly the
// product's server fed those sums in order (no round lost or applied
// twice); every device must have applied exactly the decisions of the
// rounds that include it, hold nothing pending, and have charged at
// least every masked input it sent, including those of discarded
// attempts.
func TestSharedNoiseChaos(t *testing.T) {
	sess := wire.SessionParams{Name: "shared-chaos", Dim: 10, DeadlineMillis: 10000, Algorithm: wire.SharedNoiseAlgorithm,
		Model: "logreg", Features: 4, Classes: 2, M: 24, Cohort: 10, Rounds: 16, Batch: 8, Clip: 1, Eta: 0.05,
		Rho: 50, Compressor: "f64", Threshold: 7}
	events := []*chaosEvent{
		{round: 2, step: wire.StepAdvertise, what: coordKill, n: 4},
		{round: 3, step: wire.StepShareKeys, what: coordKill, n: 4},
		{round: 4, step: wire.StepMasked, what: coordKill, n: 4},
		{round: 5, step: wire.StepSignature, what: coordKill, n: 4},
		{round: 6, step: wire.StepUnmasked, what: coordKill, n: 4},
		{round: 8, step: wire.StepAdvertise, what: devKillBefore, n: 1},
		{round: 8, step: wire.StepAdvertise, what: devDropBefore, n: 1},
		{round: 9, step: wire.StepShareKeys, what: devKillBefore, n: 1},
		{round: 9, step: wire.StepShareKeys, what: devDropBefore, n: 1},
		{round: 10, step: wire.StepMasked, what: devKillBefore, n: 3},
		{round: 11, step: wire.StepMasked, what: devKillAfter, n: 3},
		{round: 12, step: wire.StepSignature, what: devKillBefore, n: 1},
		{round: 12, step: wire.StepSignature, what: devDropBefore, n: 1},
		{round: 13, step: wire.StepUnmasked, what: devKillBefore, n: 1},
		{round: 13, step: wire.StepUnmasked, what: devDropBefore, n: 1},
		{round: 14, step: wire.StepMasked, what: devKillBefore, n: 4},
		{round: 15, step: wire.StepMasked, what: devDropBefore, n: 1},
		{round: 15, step: wire.StepMasked, what: devDropAfter, n: 1},
	}
	// The count each of these rounds commits (the first 10 advertisements
	// make the round's secure aggregation): a device gone before its key
	// shares or its masked input is not in the sum, one gone after its
	// masked input is; 6 masked inputs in round 14 are below the
	// threshold, and a later attempt commits it. (Round 8's count depends
	// on whether more than 10 devices were asked: over-selected ones
	// replace the two that did not advertise.)
	wantN := map[int]int{9: 8, 10: 7, 11: 10, 12: 10, 13: 10, 15: 9}

	dir := t.TempDir()
	addr := loopback.Addr(t)
	sj, _ := json.Marshal(sess)
	snapPath, storePath := filepath.Join(dir, "snaps.jsonl"), filepath.Join(dir, "coord.db")
	proc := &coordProc{t: t, env: []string{"BFL_SECAGG_CHILD=1", "BFL_SESSION=" + string(sj), "BFL_STORE=" + storePath,
		"BFL_SNAPSHOTS=" + snapPath, "BFL_ADDR=" + addr, "BFL_KILL_AFTER=7"}}
	proc.mu.Lock()
	proc.startLocked()
	proc.mu.Unlock()
	stopped := false
	defer func() {
		if !stopped {
			proc.stop()
		}
	}()
	dr := &director{events: events, killCoord: proc.kill, masked: map[int]int{},
		attempts: map[secagg.Header]int{}, attemptT: map[secagg.Header]int{}}

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	devs := make([]*chaosDev, sess.M)
	errs := make([]error, sess.M)
	var wg sync.WaitGroup
	for i := range devs {
		devs[i] = &chaosDev{i: i, rel: map[int][]int64{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = devs[i].run(ctx, "ws://"+addr+"/ws", sess, dr)
		}()
	}
	wg.Wait()
	proc.stop()
	stopped = true
	for i, err := range errs {
		if err != nil {
			t.Errorf("device %d: %v", i, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	kills := 0
	for _, d := range devs {
		kills += d.kills
	}
	t.Logf("coordinator started %d times, devices killed %d times", proc.starts, kills)
	for _, e := range events {
		if e.hits < e.n {
			t.Errorf("round %d, step %d: fault %d hit %d times, want %d", e.round, e.step, e.what, e.hits, e.n)
		}
	}
	checkSharedChaos(t, sess, storePath, readSaSnaps(t, snapPath), devs, dr, wantN)
}

// checkSharedChaos checks what TestSharedNoiseChaos promises against the
// store's round records (which devices each round includes), the
// child's snapshots, and what the devices released and saved.
func checkSharedChaos(t *testing.T, sess wire.SessionParams, storePath string, snaps map[int]saSnap, devs []*chaosDev, dr *director, wantN map[int]int) {
	t.Helper()
	a, err := plan.SessionSecAgg(sess)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(storePath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	index := map[string]int{}
	for _, d := range devs {
		index[d.final.State().DeviceID] = d.i
	}
	replay, err := optim.NewServer(sess, make([]float64, sess.Dim), mechanism.NewStream(mechanism.Seed{}, 0))
	if err != nil {
		t.Fatal(err)
	}
	included := make([]int, len(devs))
	for r := 1; r <= sess.Rounds; r++ {
		rec, ok, err := st.Round(r)
		if err != nil || !ok {
			t.Fatalf("round %d: no record (%v): the session did not run to its end", r, err)
		}
		snap, ok := snaps[r]
		if !ok {
			t.Fatalf("round %d: no snapshot", r)
		}
		n := len(rec.Included)
		if rec.DeadlineHit {
			t.Errorf("round %d waited for its deadline: every device that could still answer had answered", r)
		}
		if n < a.Threshold {
			t.Errorf("round %d committed with %d devices, below the threshold %d", r, n, a.Threshold)
		}
		if w, ok := wantN[r]; ok && n != w {
			t.Errorf("round %d committed with %d devices, want %d", r, n, w)
		}
		isum := make([]int64, sess.Dim)
		for _, id := range rec.Included {
			i, ok := index[id]
			if !ok {
				t.Fatalf("round %d includes an unknown device %s", r, id)
			}
			included[i]++
			devs[i].mu.Lock()
			x := devs[i].rel[r]
			devs[i].mu.Unlock()
			if x == nil {
				t.Fatalf("round %d includes device %d, which released nothing in it", r, i)
			}
			for k, v := range x {
				isum[k] += v
			}
		}
		sum := make([]float64, sess.Dim)
		for k, v := range isum {
			sum[k] = float64(v) * a.Step
		}
		if snap.Sum != nil && (snap.N != n || !slices.Equal(snap.Sum, sum)) {
			t.Errorf("round %d: the coordinator applied the sum of %d: %v; the releases of the %d it includes add up to %v", r, snap.N, snap.Sum, n, sum)
		}
		if err := replay.(optim.SumApplier).ApplySum(r, sum, n); err != nil {
			t.Fatal(err)
		}
		if q := replay.(optim.Estimator).Estimate(); !slices.Equal(q, snap.Q) || !slices.Equal(replay.Model(), snap.X) {
			t.Errorf("round %d: the coordinator's state is not the committed sums' (estimate %v, want %v)", r, snap.Q, q)
		}
	}
	for _, d := range devs {
		s := d.final.State()
		led := d.final.Algorithm().(optim.Accountant).Ledger()
		if s.Pending != 0 || s.Included != included[d.i] {
			t.Errorf("device %d: pending %d, %d rounds applied as included; want 0 and the %d that include it", d.i, s.Pending, s.Included, included[d.i])
		}
		if led.Releases() < dr.masked[d.i] {
			t.Errorf("device %d: %d releases charged for %d masked inputs sent", d.i, led.Releases(), dr.masked[d.i])
		}
	}
	// Round 14's first attempt: 6 masked inputs (4 of 10 gone), discarded.
	var tries []int
	for h, c := range dr.attempts {
		if dr.attemptT[h] == 14 {
			tries = append(tries, c)
		}
	}
	if slices.Min(append(tries, a.Threshold)) >= a.Threshold || len(tries) < 2 {
		t.Errorf("round 14: attempts with %v masked inputs; want one below the threshold %d and a later one", tries, a.Threshold)
	}
}

func childLogger() *slog.Logger {
	if os.Getenv("BFL_DEBUG") == "" {
		return quietLogger()
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil))
}
