package sessionnode

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"browserfl/coordinator"
	cbus "browserfl/coordinator/bus"
)

// TestMsgRateOfTheSlowestEdge: the node reports the lowest message rate
// its live edges stated in their beats, never below MinPaceRate (an edge
// on the bus slows the session's rounds at most that much), and nothing
// before an edge states one.
func TestMsgRateOfTheSlowestEdge(t *testing.T) {
	bus := testNATS(t)
	sess := twoDeviceSession("pace", 5000)
	srv, st := ncServerAndStore(t, sess)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	node := startNode(t, bus, c, Config{BeatInterval: 50 * time.Millisecond, EdgeTimeout: 10 * time.Second})
	if r := node.MsgRate(); r != 0 {
		t.Fatalf("rate %v before any edge, want 0", r)
	}
	fast, slow := newFakeEdge(t, bus, "fx"), newFakeEdge(t, bus, "fy")
	want := func(rate float64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for node.MsgRate() != rate {
			if time.Now().After(deadline) {
				t.Fatalf("rate %v, want %v", node.MsgRate(), rate)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	fast.send(cbus.KindEdgeBeat, &cbus.Header{MsgRate: 40}, nil)
	want(40)
	slow.send(cbus.KindEdgeBeat, &cbus.Header{MsgRate: 4}, nil)
	want(4)
	slow.send(cbus.KindEdgeBeat, &cbus.Header{MsgRate: 0.001}, nil)
	want(MinPaceRate)
	// A negative rate fails the envelope's checks: counted, not taken.
	errs := node.busErrors.Load()
	slow.send(cbus.KindEdgeBeat, &cbus.Header{MsgRate: -5}, nil)
	for node.busErrors.Load() == errs {
		time.Sleep(5 * time.Millisecond)
	}
	want(MinPaceRate)
	slow.send(cbus.KindEdgeBeat, &cbus.Header{}, nil)
	want(40)
}
