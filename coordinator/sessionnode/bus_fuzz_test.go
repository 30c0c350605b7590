package sessionnode

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"browserfl/coordinator"
	cbus "browserfl/coordinator/bus"
	"browserfl/shared/wire"
)

// busSeeds are valid envelopes of every kind.
func busSeeds(t testing.TB) [][]byte {
	hello, _ := wire.EncodeControl(wire.Hello{Version: wire.Version})
	dec, _ := wire.EncodeControl(wire.Decision{T: 1, State: wire.Included})
	leave, _ := wire.EncodeControl(wire.Leave{Reason: wire.LeaveDone})
	frame, _ := wire.EncodeRound(wire.RoundFrame{T: 1, DeadlineMillis: 100, X: make([]float64, 10)})
	var out [][]byte
	add := func(kind byte, h *cbus.Header, body []byte) {
		b, err := cbus.Encode(kind, h, body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	add(cbus.KindHello, &cbus.Header{Seq: 1, Addr: "127.0.0.1", CodeHash: cbus.CodeDigest("join-me"), SecretHash: cbus.Digest("s")}, hello)
	add(cbus.KindAggregate, &cbus.Header{Epoch: 5, T: 1, IDs: []string{"a"}, Seqs: []uint64{1}, Missing: []string{"b"}, MissingSeqs: []uint64{2}},
		cbus.EncodeVector(nil, make([]float64, 10)))
	add(cbus.KindReject, &cbus.Header{Epoch: 5, Seq: 1, ID: "a", T: 1, Norm: 3}, nil)
	add(cbus.KindStatus, &cbus.Header{Seq: 1, ID: "a", T: 1}, nil)
	add(cbus.KindLeave, &cbus.Header{Seq: 1, ID: "a"}, leave)
	add(cbus.KindDisconnect, &cbus.Header{Seq: 1, ID: "a"}, nil)
	add(cbus.KindRoster, &cbus.Header{T: 1, Roster: []cbus.RosterEntry{{Seq: 1, ID: "a", Pending: 1, SecretHash: cbus.Digest("s")}}, Chunks: 1}, nil)
	add(cbus.KindEdgeBeat, &cbus.Header{Devices: 3}, nil)
	add(cbus.KindControl, &cbus.Header{Seq: 1, Epoch: 5}, dec)
	add(cbus.KindClose, &cbus.Header{Seq: 1, Code: wire.CodeAuth, Reason: "x"}, nil)
	add(cbus.KindRound, &cbus.Header{Epoch: 5, T: 1, Seqs: []uint64{1}, Dim: 10, Bound: 3, DeadlineMillis: 100}, frame)
	add(cbus.KindSessionBeat, &cbus.Header{Epoch: 5, Beat: &cbus.SessionBeat{JoinCodeHash: cbus.CodeDigest("join-me"), Committed: 0, Resync: true}}, nil)
	return out
}

// FuzzClusterEnvelope feeds arbitrary bytes to the envelope decoder and
// to a session node's handler of an edge's envelopes, as if they came
// over NATS (an edge's handler of the session's is FuzzEdgeEnvelope, in
// coordinator/edge): nothing may panic, a decoded envelope re-encodes to
// one that decodes the same, and the session's invariants hold afterwards
// (checked by the coordinator's own code paths; a panic or a race fails
// the run).
//
//	go test -run '^$' -fuzz '^FuzzClusterEnvelope$' -fuzztime 2m ./coordinator
func FuzzClusterEnvelope(f *testing.F) {
	for _, s := range busSeeds(f) {
		f.Add(s)
	}
	bus := testNATS(f)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	nc, err := cbus.ConnectNATS(cbus.NATSClientConfig{URL: bus.URL, Name: "fuzz", NKey: bus.session(), Log: log})
	if err != nil {
		f.Fatal(err)
	}
	defer nc.Close()
	sess := twoDeviceSession("fuzz", 200)
	srv, st := ncServerAndStore(f, sess)
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st, Logger: log})
	if err != nil {
		f.Fatal(err)
	}
	node, err := New(c, Config{Conn: nc})
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	es := &edgeState{id: "fz", queue: make(chan []byte, 1), hellos: map[uint64]chan struct{}{}, sem: make(chan struct{}, 4)}
	node.edges["fz"] = es
	f.Fuzz(func(t *testing.T, b []byte) {
		kind, h, body, err := cbus.Decode(b)
		if err == nil {
			again, err := cbus.Encode(kind, &h, body)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			k2, _, body2, err := cbus.Decode(again)
			if err != nil || k2 != kind || !bytes.Equal(body, body2) {
				t.Fatalf("re-encoded envelope decodes differently: %v", err)
			}
		}
		node.handle(ctx, es, b)
		// Hellos run on their own goroutines: let them finish.
		deadline := time.Now().Add(2 * time.Second)
		for {
			es.helloMu.Lock()
			n := len(es.hellos)
			es.helloMu.Unlock()
			if n == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	})
}
