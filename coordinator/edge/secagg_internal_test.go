package edge

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"

	cbus "browserfl/coordinator/bus"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/site"
	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// TestEdgeRefusesSecAgg: edges do not carry secure aggregation, so an
// admitted device that sends a secure aggregation frame to an edge is
// told why (a protocol error naming secure aggregation), its connection
// is closed and the refusal is counted. The device's next frame (a second hello) would be refused
// for another reason, so a frame let through shows as the wrong reason.
func TestEdgeRefusesSecAgg(t *testing.T) {
	bus := testNATS(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	enc, err := cbus.ConnectNATS(cbus.NATSClientConfig{URL: bus.URL, Name: "edge", NKey: bus.edge("e0"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	e, err := New(Config{ID: "e0", Conn: enc, Logger: log, BeatInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snc, err := cbus.ConnectNATS(cbus.NATSClientConfig{URL: bus.URL, Name: "session", NKey: bus.session(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer snc.Close()
	hellos := make(chan uint64, 1)
	if _, err := snc.Subscribe("browserfl.up.e0", func(m *nats.Msg) {
		if k, h, _, err := cbus.Decode(m.Data); err == nil {
			if k == cbus.KindHello {
				hellos <- h.Seq
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	snc.Flush()
	down := func(kind byte, h *cbus.Header, body []byte) {
		h.Epoch = 78
		b, err := cbus.Encode(kind, h, body)
		if err != nil {
			t.Fatal(err)
		}
		snc.Publish("browserfl.down.e0", b)
	}
	go e.Run(ctx)
	hs := httptest.NewServer(e.Handler(site.Assets{}, nil))
	defer hs.Close()
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
	hb, _ := wire.EncodeControl(wire.Hello{Version: wire.Version, JoinCode: "join-me"})
	ws.Write(ctx, websocket.MessageText, hb)
	var seq uint64
	select {
	case seq = <-hellos:
	case <-ctx.Done():
		t.Fatal("the edge forwarded no hello")
	}
	wb, _ := wire.EncodeControl(wire.Welcome{Version: wire.Version, DeviceID: "dev1", Session: wire.SessionParams{Name: "t", Dim: 4,
		DeadlineMillis: 10000, Algorithm: "nc", Model: "logreg", Features: 1, Classes: 2, M: 1, Cohort: 1, Rounds: 1, Batch: 1,
		Clip: 1, Eta: 1, Rho: 1}})
	down(cbus.KindControl, &cbus.Header{Seq: seq}, wb)
	if _, b, err := ws.Read(ctx); err != nil || !strings.Contains(string(b), "dev1") {
		t.Fatalf("first frame %q (%v), want the welcome", b, err)
	}
	sb, err := wire.EncodeSecAgg(1, &secagg.AdvertiseKeys{Header: secagg.Header{Round: wire.SecAggRound(1, 0)},
		Advertisement: secagg.Advertisement{Client: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wire.DecodeSecAggToCoordinator(sb, wire.Limits{}); err != nil {
		t.Fatalf("the device's secure aggregation frame does not decode: %v", err)
	}
	ws.Write(ctx, websocket.MessageBinary, sb)
	ws.Write(ctx, websocket.MessageText, hb)
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("no refusal before the close: %v", err)
	}
	m, err := wire.DecodeControl(b)
	if ref, ok := m.(wire.Error); err != nil || !ok || ref.Code != wire.CodeProtocol || !strings.Contains(ref.Reason, "secure aggregation") {
		t.Fatalf("the device got %#v (%v), want a protocol error naming secure aggregation", m, err)
	}
	if _, _, err := ws.Read(ctx); websocket.CloseStatus(err) == -1 {
		t.Fatalf("after the refusal: %v, want the connection closed", err)
	}
	if n := e.front.Met.Rejections[metrics.RejProtocol].Load(); n != 1 {
		t.Errorf("%d protocol rejections counted, want 1", n)
	}
}
