package edge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"

	cbus "browserfl/coordinator/bus"
	"browserfl/coordinator/internal/bustest"
	"browserfl/coordinator/site"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/mechanism"
	"browserfl/shared/wire"
)

// The edge against a fake session: a real embedded NATS server with the
// generated keys, real connections, the session's envelopes written by
// hand. Tests that need a real session process with edges are the
// coordinator's (cluster_test.go, bus_auth_test.go).

// testBus is an embedded NATS server with the cluster's credentials.
type testBus struct {
	URL  string
	Keys *cbus.Keys
}

// session and edge are the seed files of the session and of edge id.
func (b *testBus) session() string       { return cbus.SessionSeedFile(b.Keys.Dir) }
func (b *testBus) edge(id string) string { return cbus.EdgeSeedFile(b.Keys.Dir, id) }

// testNATS starts an embedded NATS server on a free loopback port for
// the test (shut down when it ends), with credentials generated for the
// session and edges e0, e1 and fz.
func testNATS(tb testing.TB) *testBus {
	tb.Helper()
	url, keys := bustest.Start(tb, []string{"e0", "e1", "fz"})
	return &testBus{URL: url, Keys: keys}
}

// TestEdgeHoldsEndUntilDecision: the session's last round committed, but
// the decision for a device on this edge was lost (a NATS restart), and
// the session's beat says it has finished. The edge must not end the
// device with its update undecided: it asks the session, and the device
// gets the decision first and End after it.
func TestEdgeHoldsEndUntilDecision(t *testing.T) {
	// The fake session: reads the edge's envelopes, writes its own.
	e, snc := edgeAndSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up := make(chan []byte, 256)
	if _, err := snc.Subscribe("browserfl.up.e0", func(m *nats.Msg) { up <- m.Data }); err != nil {
		t.Fatal(err)
	}
	snc.Flush()
	const epoch = 77
	down := func(kind byte, h *cbus.Header, body []byte) {
		h.Epoch = epoch
		b, err := cbus.Encode(kind, h, body)
		if err != nil {
			t.Fatal(err)
		}
		snc.Publish("browserfl.down.e0", b)
	}
	next := func(kind byte) cbus.Header {
		for {
			select {
			case b := <-up:
				k, h, _, err := cbus.Decode(b)
				if err != nil {
					t.Fatal(err)
				}
				if k == kind {
					return h
				}
			case <-ctx.Done():
				t.Fatalf("no envelope of kind %d from the edge", kind)
			}
		}
	}
	go e.Run(ctx)
	hs := httptest.NewServer(e.Handler(site.Assets{}, nil))
	defer hs.Close()
	// Beats until the edge has subscribed and heard one.
	for e.Healthy() != nil {
		if ctx.Err() != nil {
			t.Fatal("the edge never heard the session")
		}
		down(cbus.KindSessionBeat, &cbus.Header{Beat: &cbus.SessionBeat{JoinCodeHash: cbus.CodeDigest("join-me")}}, nil)
		time.Sleep(5 * time.Millisecond)
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	hb, _ := wire.EncodeControl(wire.Hello{Version: wire.Version, JoinCode: "join-me"})
	ws.Write(ctx, websocket.MessageText, hb)
	seq := next(cbus.KindHello).Seq
	wb, _ := wire.EncodeControl(wire.Welcome{Version: wire.Version, DeviceID: "dev1", Session: wire.SessionParams{Name: "t", Dim: 4,
		DeadlineMillis: 10000, Algorithm: "nc", Model: "logreg", Features: 1, Classes: 2, M: 1, Cohort: 1, Rounds: 1, Batch: 1,
		Clip: 1, Eta: 1, Rho: 1}})
	down(cbus.KindControl, &cbus.Header{Seq: seq}, wb)
	frame, _ := wire.EncodeRound(wire.RoundFrame{T: 1, DeadlineMillis: 10000, X: make([]float64, 4)})
	down(cbus.KindRound, &cbus.Header{T: 1, Seqs: []uint64{seq}, Dim: 4, Bound: 10, DeadlineMillis: 10000}, frame)
	read := func() (websocket.MessageType, []byte) {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return typ, b
	}
	if _, b := read(); !strings.Contains(string(b), "dev1") {
		t.Fatalf("first frame %q, want the welcome", b)
	}
	if typ, _ := read(); typ != websocket.MessageBinary {
		t.Fatal("second frame is not the round")
	}
	x := []float64{0.1, 0, 0, 0}
	payload, _ := mechanism.Dense32{}.Compress(nil, make([]float64, 4), x, nil)
	ub, _ := wire.EncodeUpdate(wire.UpdateFrame{T: 1, Payload: payload})
	ws.Write(ctx, websocket.MessageBinary, ub)
	if h := next(cbus.KindAggregate); len(h.IDs) != 1 || h.IDs[0] != "dev1" {
		t.Fatalf("aggregate %+v, want dev1's update", h)
	}
	// The round's decision is lost; the session says it has finished.
	down(cbus.KindSessionBeat, &cbus.Header{Beat: &cbus.SessionBeat{JoinCodeHash: cbus.CodeDigest("join-me"), Committed: 1, Finished: true}}, nil)
	if h := next(cbus.KindStatus); h.Seq != seq || h.T != 1 {
		t.Fatalf("status query %+v, want round 1 of the device", h)
	}
	db, _ := wire.EncodeControl(wire.Decision{T: 1, State: wire.Included})
	down(cbus.KindControl, &cbus.Header{Seq: seq}, db)
	var got []string
	for len(got) < 2 {
		_, b := read()
		m, err := wire.DecodeControl(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%T", m))
	}
	if got[0] != "wire.Decision" || got[1] != "wire.End" {
		t.Fatalf("the device got %v, want the decision before End", got)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestEdgeSaysWhenRefused: an edge the bus refuses must say so, in its
// log at error level and in /healthz (503, with the reason): one whose
// key the NATS server does not know (another cluster's), and one whose
// key is another edge's (its subjects are refused).
func TestEdgeSaysWhenRefused(t *testing.T) {
	bus := testNATS(t)
	stranger, err := cbus.EnsureKeys(filepath.Join(t.TempDir(), "elsewhere"), []string{"e0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, seed string
		want       error
		health     string
		log        string
	}{
		{"a key from another cluster", cbus.EdgeSeedFile(stranger.Dir, "e0"), cbus.ErrAuth, "refused this component's credentials", "cannot join the cluster bus"},
		{"another edge's key", bus.edge("e1"), nats.ErrPermissionViolation, "refused this edge an operation", "the cluster bus refused an operation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			status := &cbus.NATSStatus{}
			nc, err := cbus.ConnectNATS(cbus.NATSClientConfig{URL: bus.URL, Name: "edge", NKey: tc.seed, Log: log, Status: status})
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			e, err := New(Config{ID: "e0", Conn: nc, Status: status, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			go e.Run(ctx)
			for !errors.Is(e.Healthy(), tc.want) {
				if ctx.Err() != nil {
					t.Fatalf("Healthy() = %v, want %v", e.Healthy(), tc.want)
				}
				time.Sleep(5 * time.Millisecond)
			}
			hs := httptest.NewServer(e.Handler(site.Assets{}, nil))
			defer hs.Close()
			resp, err := http.Get(hs.URL + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), tc.health) {
				t.Fatalf("/healthz %d %q, want 503 with %q", resp.StatusCode, body, tc.health)
			}
			if !strings.Contains(logs.String(), "level=ERROR msg=\""+tc.log) {
				t.Fatalf("the log does not say %q at error level:\n%s", tc.log, logs.String())
			}
		})
	}
}

// FuzzEdgeEnvelope feeds arbitrary bytes to an edge's handler of the
// session's envelopes, as if they came over NATS, with two admitted
// devices (connections 1 and 2, fresh for each input): nothing may panic
// (a panic or a race fails the run), and a round the edge has not sent
// on waits for exactly its members that have not answered (a device
// listed twice in a round, say, must not be waited for twice). The
// session node's handler of an edge's envelopes is FuzzClusterEnvelope,
// in coordinator.
//
//	go test -run '^$' -fuzz '^FuzzEdgeEnvelope$' -fuzztime 2m ./coordinator/edge
func FuzzEdgeEnvelope(f *testing.F) {
	hello, _ := wire.EncodeControl(wire.Hello{Version: wire.Version})
	dec, _ := wire.EncodeControl(wire.Decision{T: 1, State: wire.Included})
	welcome, _ := wire.EncodeControl(wire.Welcome{Version: wire.Version, DeviceID: "a"})
	end, _ := wire.EncodeControl(wire.End{Committed: 1})
	frame, _ := wire.EncodeRound(wire.RoundFrame{T: 1, DeadlineMillis: 100, X: make([]float64, 10)})
	for _, s := range []struct {
		kind byte
		h    cbus.Header
		body []byte
	}{
		{cbus.KindControl, cbus.Header{Seq: 1, Epoch: 5}, dec},
		{cbus.KindControl, cbus.Header{Seq: 3, Epoch: 5}, welcome},
		{cbus.KindControl, cbus.Header{Seq: 2}, end},
		{cbus.KindClose, cbus.Header{Seq: 1, Code: wire.CodeAuth, Reason: "x"}, nil},
		{cbus.KindRound, cbus.Header{Epoch: 5, T: 1, Seqs: []uint64{1, 2}, Marks: []cbus.Mark{{Gen: 1, Asks: 1}, {Gen: 2, Incl: 1, Asks: 3}},
			Dim: 10, Bound: 3, DeadlineMillis: 100}, frame},
		{cbus.KindRound, cbus.Header{Epoch: 6, T: 2, Seqs: []uint64{2, 2, 1}, Dim: 10, DeadlineMillis: 60000}, frame},
		{cbus.KindSessionBeat, cbus.Header{Epoch: 5, Beat: &cbus.SessionBeat{JoinCodeHash: cbus.CodeDigest("join-me"), Committed: 1, Resync: true, Finished: true}}, nil},
		{cbus.KindHello, cbus.Header{Seq: 1, Addr: "127.0.0.1"}, hello}, // an edge's kind: refused
	} {
		b, err := cbus.Encode(s.kind, &s.h, s.body)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	bus := testNATS(f)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	nc, err := cbus.ConnectNATS(cbus.NATSClientConfig{URL: bus.URL, Name: "fuzz", NKey: bus.edge("fz"), Log: log})
	if err != nil {
		f.Fatal(err)
	}
	defer nc.Close()
	e, err := New(Config{ID: "fz", Conn: nc, Logger: log})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e.mu.Lock()
		e.conns = map[uint64]*edgeConn{}
		for seq, id := range map[uint64]string{1: "a", 2: "b"} {
			cn := wsconn.NewManual(e.front, nopWS{})
			cn.Seq, cn.ID = seq, id
			e.conns[seq] = &edgeConn{cn: cn}
		}
		e.mu.Unlock()
		e.handleDown(b)
		e.mu.Lock()
		defer e.mu.Unlock()
		if r := e.round; r != nil && !r.flushed {
			unanswered := 0
			for _, answered := range r.members {
				if !answered {
					unanswered++
				}
			}
			if r.waiting != unanswered {
				t.Fatalf("round %d waits for %d members, %d have not answered", r.t, r.waiting, unanswered)
			}
		}
	})
}

// nopWS is a websocket that takes every frame and reads none (the fuzz
// test's connections have no reader or writer goroutine).
type nopWS struct{}

func (nopWS) Read(ctx context.Context) (websocket.MessageType, []byte, error) {
	<-ctx.Done()
	return 0, nil, ctx.Err()
}
func (nopWS) Reader(ctx context.Context) (websocket.MessageType, io.Reader, error) {
	<-ctx.Done()
	return 0, nil, ctx.Err()
}
func (nopWS) Write(context.Context, websocket.MessageType, []byte) error { return nil }
func (nopWS) Close(websocket.StatusCode, string) error                   { return nil }
func (nopWS) CloseNow() error                                            { return nil }
func (nopWS) Ping(context.Context) error                                 { return nil }

// edgeAndSession starts a NATS server for the test, edge e0 on it
// (beats an hour apart: the test sends what it wants), and the bus
// connection of a fake session process; both close when the test ends.
func edgeAndSession(t *testing.T) (*Edge, *nats.Conn) {
	t.Helper()
	bus := testNATS(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	enc, err := cbus.ConnectNATS(cbus.NATSClientConfig{URL: bus.URL, Name: "edge", NKey: bus.edge("e0"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(enc.Close)
	e, err := New(Config{ID: "e0", Conn: enc, Logger: log, BeatInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	snc, err := cbus.ConnectNATS(cbus.NATSClientConfig{URL: bus.URL, Name: "session", NKey: bus.session(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(snc.Close)
	return e, snc
}
