package coordinator_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"

	"browserfl/coordinator"
	"browserfl/coordinator/bus"
	"browserfl/coordinator/edge"
	"browserfl/coordinator/sessionnode"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/device"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// busSpy reads every edge's envelopes to the session (with the session's
// key, which may subscribe to them): each edge's instance, the session's
// epoch, and the connection number each device's secure aggregation
// frames go up under, per edge.
type busSpy struct {
	mu       sync.Mutex
	instance map[string]uint64
	epoch    uint64
	seqs     map[string]map[string]uint64 // edge -> device id -> connection
}

func (s *busSpy) read(m *nats.Msg) {
	edge := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	kind, h, _, err := bus.Decode(m.Data)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.instance[edge] = h.Instance
	if kind == bus.KindSecAggUp {
		s.epoch = h.Epoch
		if s.seqs[edge] == nil {
			s.seqs[edge] = map[string]uint64{}
		}
		s.seqs[edge][h.ID] = h.Seq
	}
}

// forger plays a hostile component on edge e1's subject (with e1's key)
// at the victim's first masked input: before the victim's frame goes, it
// publishes a spoiled copy of it twice, once under the victim's
// connection number on e0 and once under the connection of a device e1
// holds, both naming the victim; the victim's frame goes once the session
// node has dropped both (or after a bound).
type forger struct {
	t      *testing.T
	nc     *nats.Conn
	spy    *busSpy
	victim func() string // the victim's device id
	own    func() string // the id of a device on e1
	node   *sessionnode.Node
	stop   context.CancelFunc // ends the run when a forged frame was not dropped
	once   sync.Once
}

type forgerConn struct {
	device.Conn
	f *forger
}

type forgerTransport struct {
	device.Transport
	f *forger
}

func (tr forgerTransport) Dial(ctx context.Context) (device.Conn, error) {
	c, err := tr.Transport.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return forgerConn{c, tr.f}, nil
}

func (c forgerConn) Write(ctx context.Context, typ websocket.MessageType, b []byte) error {
	if typ == websocket.MessageBinary {
		if f, err := wire.DecodeSecAggToCoordinator(b, wire.Limits{}); err == nil && f.Step == wire.StepMasked && f.T == 1 {
			c.f.once.Do(func() { c.f.forge(f) })
		}
	}
	return c.Conn.Write(ctx, typ, b)
}

func (f *forger) forge(fr wire.SecAggFrame) {
	m := *fr.Msg.(*secagg.MaskedInput)
	m.Y = slices.Clone(m.Y)
	m.Y[0] ^= 1 << (m.Bits - 2) // a quarter of the ring: the sum would fail its check
	body, err := wire.EncodeSecAgg(fr.T, &m)
	if err != nil {
		f.t.Error(err)
		return
	}
	victim, own := f.victim(), f.own()
	var inst, epoch uint64
	var seqs []uint64
	// Both devices' advertisements have reached the session: the spy's
	// copies follow.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		f.spy.mu.Lock()
		inst, epoch = f.spy.instance["e1"], f.spy.epoch
		seqs = []uint64{f.spy.seqs["e0"][victim], f.spy.seqs["e1"][own]}
		f.spy.mu.Unlock()
		if seqs[0] != 0 && seqs[1] != 0 && inst != 0 {
			break
		}
	}
	if seqs[0] == 0 || seqs[1] == 0 || inst == 0 {
		f.t.Errorf("the spy has not seen the connections to forge (%v, instance %d)", seqs, inst)
		return
	}
	for _, seq := range seqs {
		b, err := bus.Encode(bus.KindSecAggUp, &bus.Header{Instance: inst, Epoch: epoch, Seq: seq, ID: victim, T: fr.T}, body)
		if err != nil {
			f.t.Error(err)
			return
		}
		if err := f.nc.Publish("browserfl.up.e1", b); err != nil {
			f.t.Error(err)
		}
	}
	f.nc.Flush()
	for end := time.Now().Add(5 * time.Second); unbound(f.node) < 2 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := unbound(f.node); n != 2 {
		// Taken as a device's: the round it spoils is discarded, and the
		// session cannot end (each discarded attempt costs a release).
		f.t.Errorf("the session node dropped %v of the 2 forged frames", n)
		f.stop()
	}
}

// unbound reads the node's count of relayed secure aggregation frames it
// dropped for a connection the edge does not hold under that device.
func unbound(n *sessionnode.Node) float64 {
	for _, r := range n.MetricRows() {
		if r.Name == "browserfl_cluster_secagg_unbound_total" {
			return r.Value
		}
	}
	return -1
}

// countedRelease is a device half that counts the releases its runtime
// masks (every one of them, each attempt's).
type countedRelease struct {
	*releaseRecorder
	n *atomic.Int64
}

func (c countedRelease) GridRelease(t int) ([]int64, error) {
	c.n.Add(1)
	return c.releaseRecorder.GridRelease(t)
}

// applyCounter is a server half that records each round's sum and how
// many times each round was applied.
type applyCounter struct {
	sumRecorder
	calls map[int]int
}

func (a *applyCounter) ApplySum(t int, sum []float64, n int) error {
	a.mu.Lock()
	a.calls[t]++
	a.mu.Unlock()
	return a.sumRecorder.ApplySum(t, sum, n)
}

// TestClusterSharedNoise runs a shared-noise session (m = 8, threshold
// 5, 3 rounds) behind two edges over an embedded NATS server: devices 0-2
// connect through e1, devices 3-7 through e0. The session process runs
// the secure aggregation; the edges relay its frames.
//
//   - round 1: a hostile component with e1's key forges, just before
//     device 3's masked input, a spoiled copy of it under device 3's
//     connection number on e0 and under the connection of device 0 on
//     e1, both naming device 3: both are dropped and counted, device 0
//     is not touched, and the round commits the exact sum of all 8
//     releases;
//   - round 2: e1 dies (its NATS connection and websockets closed) when
//     its three devices have their masked inputs ready and none sent:
//     they reconnect through e0, and the round commits the exact sum of
//     the 5 releases of e0's devices (5 = the threshold);
//   - round 3: all 8, through e0.
//
// Each round is applied once; every device holds nothing pending, has
// applied the rounds that include it, and its ledger charges exactly the
// releases it masked; no device writes an update frame, and no masked
// input is its release in the clear.
func TestClusterSharedNoise(t *testing.T) {
	keys := busKeys(t)
	ns := startNATS(t, "127.0.0.1:0", keys)
	defer ns.Shutdown()
	sess := wire.SessionParams{Name: "shared", Dim: 10, DeadlineMillis: 5000, Algorithm: wire.SharedNoiseAlgorithm, Model: "logreg",
		Features: 4, Classes: 2, M: 8, Cohort: 8, Rounds: 3, Batch: 8, Clip: 1, Eta: 0.05, Rho: 50, Compressor: "f64", Threshold: 5}
	a, err := plan.SessionSecAgg(sess)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := optim.NewServer(sess, make([]float64, sess.Dim), mechanism.NewStream(mechanism.Seed{3}, 0))
	if err != nil {
		t.Fatal(err)
	}
	srv := &applyCounter{sumRecorder: sumRecorder{Server: inner, sums: map[int][]float64{}, ns: map[int]int{}}, calls: map[int]int{}}
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st,
		MinDevices: 8, Seed: 5, TrustNewDevices: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	node, err := sessionnode.New(c, sessionnode.Config{
		Conn:         connectNATS(t, ns.ClientURL(), bus.SessionSeedFile(keys.Dir), "session"),
		BeatInterval: 100 * time.Millisecond, EdgeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	go node.Run(ctx)
	spy := &busSpy{instance: map[string]uint64{}, seqs: map[string]map[string]uint64{}}
	if _, err := connectNATS(t, ns.ClientURL(), bus.SessionSeedFile(keys.Dir), "spy").Subscribe("browserfl.up.*", spy.read); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	var edges []*edge.Edge
	var e1nc *nats.Conn
	var e1hs *httptest.Server
	e1ctx, e1stop := context.WithCancel(ctx)
	defer e1stop()
	for k := range 2 {
		id := fmt.Sprintf("e%d", k)
		nc := connectNATS(t, ns.ClientURL(), bus.EdgeSeedFile(keys.Dir, id), "edge")
		e, err := edge.New(edge.Config{ID: id, Conn: nc, Logger: quietLogger(), BeatInterval: 100 * time.Millisecond, SessionTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(e.Handler(site.Assets{}, nil))
		defer hs.Close()
		if k == 1 {
			go e.Run(e1ctx)
			e1nc, e1hs = nc, hs
		} else {
			go e.Run(ctx)
		}
		addrs = append(addrs, strings.TrimPrefix(hs.URL, "http://"))
		edges = append(edges, e)
	}
	waitHealthy(t, edges)
	// e1 dies: nothing more of it reaches the bus, its devices lose their
	// websockets, and a load balancer sends them to e0.
	down := make([]atomic.Bool, 2)
	kill := func() {
		down[1].Store(true)
		e1nc.Close()
		e1stop()
		e1hs.Listener.Close()
		e1hs.CloseClientConnections()
	}
	// Round 2: e1's three devices meet here with their masked inputs
	// ready; the third kills e1, and all three then try to send.
	var bmu sync.Mutex
	arrived, killed := 0, make(chan struct{})
	atKill := func(round int) (time.Duration, bool) {
		if round != 2 {
			return 0, false
		}
		bmu.Lock()
		arrived++
		if arrived == 3 {
			kill()
			close(killed)
		}
		bmu.Unlock()
		select {
		case <-killed:
		case <-ctx.Done():
		}
		return 0, false
	}
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	var updates, clear, masked atomic.Int64
	recs := make([]*releaseRecorder, sess.M)
	inners := make([]optim.Device, sess.M)
	released := make([]atomic.Int64, sess.M)
	rts := make([]*device.Runtime, sess.M)
	fg := &forger{t: t, nc: connectNATS(t, ns.ClientURL(), bus.EdgeSeedFile(keys.Dir, "e1"), "hostile"), spy: spy, node: node, stop: cancel,
		victim: func() string { return rts[3].State().DeviceID }, own: func() string { return rts[0].State().DeviceID }}
	for i := range sess.M {
		var s mechanism.Seed
		s[0], s[1] = 4, byte(i)
		mdl, _ := model.New("logreg", 4, 2)
		dev, err := optim.NewDevice(sess, mdl, mechanism.NewStream(s, 0))
		if err != nil {
			t.Fatal(err)
		}
		inners[i] = dev
		recs[i] = &releaseRecorder{Device: dev, mu: &sync.Mutex{}, got: map[int][]int64{}}
		home := 0 // edgeDialer's order: e0 first
		hooks := &device.Hooks{}
		if i < 3 {
			home = 1
			hooks.BeforeSend = atKill
		}
		var tr device.Transport = frameWatch{Transport: device.WebSocket{URL: "ws://edges/ws", HTTPClient: edgeDialer(home, addrs, down)},
			rec: recs[i], updates: &updates, clear: &clear, masked: &masked}
		if i == 3 {
			tr = forgerTransport{tr, fg}
		}
		cfg := device.Config{JoinCode: "join-me", Storage: &device.MemStorage{}, Unlimited: true,
			Data: blobs(400, uint64(i)), MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
			Transport: tr, Hooks: hooks,
			NewDevice: func(optim.Params) (optim.Device, error) { return countedRelease{recs[i], &released[i]}, nil }}
		if rts[i], err = device.New(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	runDevices(t, ctx, rts)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}

	index := map[string]int{}
	for i, rt := range rts {
		index[rt.State().DeviceID] = i
	}
	want := map[int][]int{1: {0, 1, 2, 3, 4, 5, 6, 7}, 2: {3, 4, 5, 6, 7}, 3: {0, 1, 2, 3, 4, 5, 6, 7}}
	included := make([]int, sess.M)
	for r := 1; r <= sess.Rounds; r++ {
		rec, ok, err := st.Round(r)
		if err != nil || !ok {
			t.Fatalf("round %d: no record (%v)", r, err)
		}
		var inc []int
		sum := make([]float64, sess.Dim)
		for _, id := range rec.Included {
			i := index[id]
			inc = append(inc, i)
			included[i]++
			recs[i].mu.Lock()
			x := recs[i].got[r]
			recs[i].mu.Unlock()
			for k := range sum {
				sum[k] += float64(x[k]) * a.Step
			}
		}
		slices.Sort(inc)
		if !slices.Equal(inc, want[r]) {
			t.Errorf("round %d includes devices %v, want %v", r, inc, want[r])
		}
		srv.mu.Lock()
		got, n, calls := srv.sums[r], srv.ns[r], srv.calls[r]
		srv.mu.Unlock()
		if calls != 1 || n != len(inc) || !slices.Equal(got, sum) {
			t.Errorf("round %d: applied %d times, the sum of %d: %v; the releases of the %d it includes add up to %v", r, calls, n, got, len(inc), sum)
		}
	}
	for i, rt := range rts {
		s := rt.State()
		led := inners[i].(optim.Accountant).Ledger()
		if s.Pending != 0 || s.Included != included[i] || led.Releases() != int(released[i].Load()) {
			t.Errorf("device %d: pending %d, included %d, %d releases charged; want 0, the %d rounds that include it, and the %d it masked",
				i, s.Pending, s.Included, led.Releases(), included[i], released[i].Load())
		}
	}
	if u, cl, m := updates.Load(), clear.Load(), masked.Load(); u != 0 || cl != 0 || m < 21 {
		t.Errorf("%d update frames, %d masked inputs in the clear, %d masked inputs: want 0, 0 and at least 21", u, cl, m)
	}
	// The forger counted exactly its 2 right after forging them; by the
	// end the count may also hold frames e1's devices had in flight when
	// e1 was killed (the counter's help says so), never fewer.
	if n := unbound(node); n < 2 {
		t.Errorf("the session node counts %v dropped frames at the end, fewer than the 2 forged", n)
	}
	t.Logf("edges: %+v", c.Status().Edges)
}

// TestClusterSharedNoiseSessionRestart: the session process of a
// shared-noise session restarts while its devices stay on their edge
// (here in this process: its coordinator and node stopped once round 1
// has committed, new ones started over the same store, as
// cmd/coordinator does). The new process knows the devices only from
// the edge's roster, which must carry each device's signing key: without
// it no member can take part in a secure aggregation, and the session
// discards every round attempt until the devices reconnect (they never
// need to). Rounds 2 and 3 commit, each with at least the threshold of
// the four devices, and every device ends with nothing pending.
func TestClusterSharedNoiseSessionRestart(t *testing.T) {
	keys := busKeys(t)
	ns := startNATS(t, "127.0.0.1:0", keys)
	defer ns.Shutdown()
	sess := wire.SessionParams{Name: "shared", Dim: 10, DeadlineMillis: 5000, Algorithm: wire.SharedNoiseAlgorithm, Model: "logreg",
		Features: 4, Classes: 2, M: 4, Cohort: 4, Rounds: 3, Batch: 8, Clip: 1, Eta: 0.05, Rho: 50, Compressor: "f64", Threshold: 3}
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// session starts a session process over st; its Run's error arrives
	// on the channel it returns once pctx ends or the session finishes.
	session := func(pctx context.Context, onCommit func(int)) <-chan error {
		srv, err := optim.NewServer(sess, make([]float64, sess.Dim), mechanism.NewStream(mechanism.Seed{3}, 0))
		if err != nil {
			t.Fatal(err)
		}
		c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st,
			MinDevices: sess.Cohort, Seed: 5, TrustNewDevices: true, Logger: quietLogger(), OnCommit: onCommit})
		if err != nil {
			t.Fatal(err)
		}
		node, err := sessionnode.New(c, sessionnode.Config{
			Conn:         connectNATS(t, ns.ClientURL(), bus.SessionSeedFile(keys.Dir), "session"),
			BeatInterval: 100 * time.Millisecond, EdgeTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		go node.Run(pctx)
		done := make(chan error, 1)
		go func() { done <- c.Run(pctx) }()
		return done
	}
	firstCtx, stopFirst := context.WithCancel(ctx)
	defer stopFirst()
	first := session(firstCtx, func(round int) {
		if round == 1 {
			stopFirst()
		}
	})

	e, err := edge.New(edge.Config{ID: "e0", Conn: connectNATS(t, ns.ClientURL(), bus.EdgeSeedFile(keys.Dir, "e0"), "edge"),
		Logger: quietLogger(), BeatInterval: 100 * time.Millisecond, SessionTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	go e.Run(ctx)
	hs := httptest.NewServer(e.Handler(site.Assets{}, nil))
	defer hs.Close()
	waitHealthy(t, []*edge.Edge{e})
	addrs := []string{strings.TrimPrefix(hs.URL, "http://")}
	var reconnects atomic.Int64
	rts := make([]*device.Runtime, sess.M)
	for i := range sess.M {
		var s mechanism.Seed
		s[0], s[1] = 6, byte(i)
		mdl, _ := model.New("logreg", 4, 2)
		dev, err := optim.NewDevice(sess, mdl, mechanism.NewStream(s, 0))
		if err != nil {
			t.Fatal(err)
		}
		cfg := device.Config{JoinCode: "join-me", Storage: &device.MemStorage{}, Unlimited: true,
			Data: blobs(400, uint64(i)), MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
			Transport: device.WebSocket{URL: "ws://edges/ws", HTTPClient: edgeDialer(0, addrs, nil)},
			OnEvent: func(ev device.Event) {
				if ev.Kind == device.EventConnected {
					reconnects.Add(1)
				}
			},
			NewDevice: func(optim.Params) (optim.Device, error) { return dev, nil }}
		if rts[i], err = device.New(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	devicesDone := make(chan struct{})
	go func() {
		defer close(devicesDone)
		runDevices(t, ctx, rts)
	}()
	<-first // stopped after round 1 committed
	connects := reconnects.Load()
	second := session(ctx, nil)
	if err := <-second; err != nil {
		t.Fatalf("the restarted session process: %v", err)
	}
	<-devicesDone
	for r := 1; r <= sess.Rounds; r++ {
		rec, ok, err := st.Round(r)
		if err != nil || !ok {
			t.Fatalf("round %d: no record (%v)", r, err)
		}
		if len(rec.Included) < sess.Threshold {
			t.Errorf("round %d includes %d devices, fewer than the threshold %d", r, len(rec.Included), sess.Threshold)
		}
	}
	for i, rt := range rts {
		if s := rt.State(); s.Pending != 0 {
			t.Errorf("device %d: round %d still pending", i, s.Pending)
		}
	}
	// The devices stayed on their edge: the new process took them from
	// its roster, not from new hellos.
	if n := reconnects.Load() - connects; n != 0 {
		t.Errorf("the devices connected %d times after the restart, want 0 (adopted from the edge's roster)", n)
	}
}
