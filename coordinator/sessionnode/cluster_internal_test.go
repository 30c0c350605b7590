package sessionnode

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"browserfl/coordinator"
	cbus "browserfl/coordinator/bus"
	"browserfl/coordinator/internal/bustest"
	"browserfl/coordinator/store"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// fakeEdge speaks the cluster protocol by hand, so that a test can send
// the session exactly the envelopes a buggy or compromised edge would.
type fakeEdge struct {
	t    *testing.T
	nc   *nats.Conn
	id   string
	down chan []byte
	inst uint64
	held map[uint64][]wire.Message // control messages read while waiting for another connection's
}

func newFakeEdge(t *testing.T, bus *testBus, id string) *fakeEdge {
	t.Helper()
	nc, err := cbus.ConnectNATS(cbus.NATSClientConfig{URL: bus.URL, Name: id, NKey: bus.edge(id), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	f := &fakeEdge{t: t, nc: nc, id: id, down: make(chan []byte, 1024), inst: 7, held: map[uint64][]wire.Message{}}
	if _, err := nc.Subscribe("browserfl.down."+id, func(m *nats.Msg) { f.down <- m.Data }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return f
}

// startNode connects to bus as the session process, attaches a node
// with cfg (its Conn set here) to c and runs it until the test ends; it
// returns once the node has subscribed to the edges' subject.
func startNode(t *testing.T, bus *testBus, c *coordinator.Coordinator, cfg Config) *Node {
	t.Helper()
	nc, err := cbus.ConnectNATS(cbus.NATSClientConfig{URL: bus.URL, Name: "session", NKey: bus.session(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Conn = nc
	node, err := New(c, cfg)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { node.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; nc.Close() })
	waitSubscribed(t, nc)
	return node
}

// waitSubscribed returns once the session node running on nc has
// subscribed to the edges' subject and the NATS server has the
// subscription (Flush is a round trip after it): an envelope published
// before that is lost, as the tests that sent right after starting the
// node sometimes found under -race (a hello lost, a test waiting forever).
func waitSubscribed(t *testing.T, nc *nats.Conn) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for nc.NumSubscriptions() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the session node never subscribed")
		}
		time.Sleep(time.Millisecond)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeEdge) send(kind byte, h *cbus.Header, body []byte) {
	f.t.Helper()
	h.Instance = f.inst
	b, err := cbus.Encode(kind, h, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.nc.Publish("browserfl.up."+f.id, b); err != nil {
		f.t.Fatal(err)
	}
}

// hello sends a new device's hello on connection seq as an edge
// forwards it: the join code's and an issued secret's digests in the
// header, neither in the body.
func (f *fakeEdge) hello(seq uint64, code string) {
	f.t.Helper()
	hb, _ := wire.EncodeControl(wire.Hello{Version: wire.Version})
	f.send(cbus.KindHello, &cbus.Header{Seq: seq, Addr: "127.0.0.1", CodeHash: cbus.CodeDigest(code), SecretHash: cbus.Digest(fmt.Sprint("secret", seq))}, hb)
}

// next returns the next envelope of one of the kinds, skipping beats.
func (f *fakeEdge) next(kinds ...byte) (byte, cbus.Header, []byte) {
	f.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case b := <-f.down:
			kind, h, body, err := cbus.Decode(b)
			if err != nil {
				f.t.Fatal(err)
			}
			for _, k := range kinds {
				if kind == k {
					return kind, h, body
				}
			}
		case <-timeout:
			f.t.Fatalf("no envelope of kinds %v from the session", kinds)
		}
	}
}

// control returns the next control message for the device on connection
// seq (skipping other envelopes).
func (f *fakeEdge) control(seq uint64) wire.Message {
	f.t.Helper()
	if q := f.held[seq]; len(q) > 0 {
		f.held[seq] = q[1:]
		return q[0]
	}
	for {
		_, h, body := f.next(cbus.KindControl)
		m, err := wire.DecodeControl(body)
		if err != nil {
			f.t.Fatal(err)
		}
		if h.Seq != seq {
			f.held[h.Seq] = append(f.held[h.Seq], m)
			continue
		}
		return m
	}
}

// TestHostileAggregateRefused drives a session node from a fake edge
// that holds two devices and sends, in turn: a sum whose norm is above
// twice the update bound, a sum that names a device on a connection it
// does not hold, a sum that lists a device twice, and finally an honest
// one. Each bad sum must be refused whole (both members excluded with a
// reason, nothing applied: the model does not move), and the honest one
// applied exactly (the model moves by -eta/m times the sum, bit for bit
// what the server half computes from it).
func TestHostileAggregateRefused(t *testing.T) {
	bus := testNATS(t)
	sess := twoDeviceSession("hostile", 5000)
	srv, st := ncServerAndStore(t, sess)
	var mu sync.Mutex
	states := map[int][]byte{} // the server half's state after each commit
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st, MinDevices: 2, Seed: 3, Logger: log,
		OnCommit: func(r int) {
			b, _ := srv.MarshalBinary()
			mu.Lock()
			states[r] = b
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	startNode(t, bus, c, Config{BeatInterval: 50 * time.Millisecond, EdgeTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	fe := newFakeEdge(t, bus, "fx")
	fe.send(cbus.KindEdgeBeat, &cbus.Header{}, nil)
	ids := map[uint64]string{}
	for _, seq := range []uint64{1, 2} {
		fe.hello(seq, "join-me")
		w, ok := fe.control(seq).(wire.Welcome)
		if !ok {
			t.Fatal("no welcome")
		}
		ids[seq] = w.DeviceID
	}
	bound := 0.0
	round := func() (int, uint64) {
		_, h, _ := fe.next(cbus.KindRound)
		if len(h.Seqs) != 2 {
			t.Fatalf("round %d for %d devices, want 2", h.T, len(h.Seqs))
		}
		bound = h.Bound
		return h.T, h.Epoch
	}
	sum := make([]float64, sess.Dim)
	for i := range sum {
		sum[i] = 0.01 * float64(i+1)
	}
	excludedBoth := func(t0 int, what string, why [2]string) {
		t.Helper()
		for k, seq := range []uint64{1, 2} {
			d, ok := fe.control(seq).(wire.Decision)
			if !ok || d.T != t0 || d.State != wire.Excluded || !strings.Contains(d.Reason, why[k]) {
				t.Fatalf("%s: device %d got %+v, want excluded, reason with %q", what, seq, d, why[k])
			}
		}
	}
	refused := [2]string{"refused", "refused"}
	cases := []struct {
		what    string
		ids     []string
		seqs    []uint64
		missing bool // device 2 is reported as not having answered
		why     [2]string
		vec     func() []float64
	}{
		{"norm above 2 x bound", []string{ids[1], ids[2]}, []uint64{1, 2}, false, refused, func() []float64 {
			v := make([]float64, sess.Dim)
			v[0] = 2*bound*1.01 + 1
			return v
		}},
		{"a device on a connection the edge does not hold", []string{ids[1], ids[2]}, []uint64{2, 1}, false, refused, func() []float64 { return sum }},
		{"a device twice", []string{ids[1], ids[1]}, []uint64{1, 1}, true, [2]string{"refused", "no update"}, func() []float64 { return sum }},
	}
	// expect checks the committed state of round r against the server
	// half's own step from the state before it with (sum, n).
	expect := func(r int, sum []float64, n int, what string) {
		t.Helper()
		ref, err := optim.NewServer(sess, make([]float64, sess.Dim), mechanism.NewStream(mechanism.Seed{}, 0))
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		prev, got := states[r-1], states[r]
		mu.Unlock()
		if prev != nil {
			if err := ref.UnmarshalBinary(prev); err != nil {
				t.Fatal(err)
			}
		}
		ref.Next()
		if err := ref.(optim.SumApplier).ApplySum(r, sum, n); err != nil {
			t.Fatal(err)
		}
		want, _ := ref.MarshalBinary()
		if string(want) != string(got) {
			t.Fatalf("%s: round %d's committed state is not the server half's step with %d update(s)", what, r, n)
		}
	}
	for _, tc := range cases {
		r, epoch := round()
		if bound <= 0 || math.IsInf(bound, 0) {
			t.Fatalf("round %d announced bound %v", r, bound)
		}
		h := &cbus.Header{Epoch: epoch, T: r, IDs: tc.ids, Seqs: tc.seqs}
		if tc.missing {
			h.Missing, h.MissingSeqs = []string{ids[2]}, []uint64{2}
		}
		fe.send(cbus.KindAggregate, h, cbus.EncodeVector(nil, tc.vec()))
		excludedBoth(r, tc.what, tc.why)
		// The round then commits with nothing included: x does not move
		// (nc's x_{t+1} = x_t - eta qtilde_t uses last round's estimate,
		// so compare the estimate: with nothing applied it is unchanged).
		waitCommitted(t, c, r)
		rec, ok, err := st.Round(r)
		if err != nil || !ok || len(rec.Included) != 0 {
			t.Fatalf("%s: round %d record %+v (%v), want nothing included", tc.what, r, rec, err)
		}
		expect(r, make([]float64, sess.Dim), 0, tc.what)
	}
	// The honest sum is applied: both included.
	r, epoch := round()
	fe.send(cbus.KindAggregate, &cbus.Header{Epoch: epoch, T: r, IDs: []string{ids[1], ids[2]}, Seqs: []uint64{1, 2}}, cbus.EncodeVector(nil, sum))
	for _, seq := range []uint64{1, 2} {
		if d, ok := fe.control(seq).(wire.Decision); !ok || d.T != r || d.State != wire.Included {
			t.Fatalf("honest sum: device %d got %+v, want included", seq, d)
		}
	}
	rec, ok, err := st.Round(r)
	if err != nil || !ok || len(rec.Included) != 2 {
		t.Fatalf("honest round %d record %+v, want both included", r, rec)
	}
	expect(r, sum, 2, "honest sum")
	cancel()
	<-runErr
}

// twoDeviceSession is the internal cluster tests' session: nc with the
// exact f64 uplink, two devices, both in every round.
func twoDeviceSession(name string, deadlineMs int) wire.SessionParams {
	return wire.SessionParams{Name: name, Dim: 10, DeadlineMillis: deadlineMs, Algorithm: "nc", Model: "logreg",
		Features: 4, Classes: 2, M: 2, Cohort: 2, Rounds: 4, Batch: 8, Clip: 1, Eta: 0.05, Rho: 50, Compressor: "f64"}
}

// ncServerAndStore returns sess's server half (zero seed) and a store in
// a temporary directory, closed when the test ends.
func ncServerAndStore(t testing.TB, sess wire.SessionParams) (optim.Server, *store.Store) {
	t.Helper()
	var seed mechanism.Seed
	srv, err := optim.NewServer(sess, make([]float64, sess.Dim), mechanism.NewStream(seed, 0))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return srv, st
}

func waitCommitted(t *testing.T, c *coordinator.Coordinator, r int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for c.Committed() < r {
		if time.Now().After(deadline) {
			t.Fatalf("round %d not committed", r)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRosterKeepsHelloInFlight: an edge's roster leaves out a connection
// whose hello the session is still deciding (the edge has no welcome for
// it yet). The whole roster must not drop that connection's link as
// stale: the device, admitted a moment later, must stay reachable (its
// link is the one the round logic holds).
func TestRosterKeepsHelloInFlight(t *testing.T) {
	bus := testNATS(t)
	sess := twoDeviceSession("roster", 5000)
	srv, st := ncServerAndStore(t, sess)
	release := make(chan struct{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st, Logger: log,
		BeforeAdmit: func(string, int) { <-release }})
	if err != nil {
		t.Fatal(err)
	}
	node := startNode(t, bus, c, Config{BeatInterval: time.Hour})
	fe := newFakeEdge(t, bus, "fx")
	fe.hello(9, "join-me")
	// The hello is being decided (held in BeforeAdmit) once its link exists.
	linkBy := time.Now().Add(20 * time.Second)
	for node.link("fx", 9) == nil {
		if time.Now().After(linkBy) {
			t.Fatal("the hello never reached the session node")
		}
		time.Sleep(time.Millisecond)
	}
	fe.send(cbus.KindRoster, &cbus.Header{T: 1, Chunks: 1}, nil)
	// Wait until the whole roster was taken (the hello is still held).
	for {
		node.mu.Lock()
		es := node.edges["fx"]
		done := es != nil && es.roster == 1 && es.rosterSeqs == nil
		node.mu.Unlock()
		if done {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	w, ok := fe.control(9).(wire.Welcome)
	if !ok {
		t.Fatal("no welcome")
	}
	// The hello's goroutine finishes right after queueing the welcome.
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The node holds the device's link and the session the device on
		// a connection: had the roster dropped the link, the hello's end
		// would have disconnected the device (Node.hello).
		l := node.link("fx", 9)
		bound := l != nil && l.id == w.DeviceID && c.Status().Devices.Connected == 1
		if bound {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admitted device's link is gone (link present: %v)", l != nil)
		}
		time.Sleep(time.Millisecond)
	}
}

// testBus is an embedded NATS server with the cluster's credentials.
type testBus struct {
	URL  string
	Keys *cbus.Keys
}

// session and edge are the seed files of the session and of edge id.
func (b *testBus) session() string       { return cbus.SessionSeedFile(b.Keys.Dir) }
func (b *testBus) edge(id string) string { return cbus.EdgeSeedFile(b.Keys.Dir, id) }

// testEdges are the edges the test buses have credentials for.
var testEdges = []string{"e0", "e1", "e2", "fx", "fy", "fz"}

// testNATS starts an embedded NATS server on a free loopback port for
// the test (shut down when it ends), with credentials generated for the
// session and testEdges.
func testNATS(tb testing.TB) *testBus {
	tb.Helper()
	url, keys := bustest.Start(tb, testEdges)
	return &testBus{URL: url, Keys: keys}
}
