package edge

import (
	"bytes"
	"context"
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

// TestEdgeRelaysSecAgg: in a shared-noise session an edge sums nothing and
// relays the secure aggregation frames, each bound to its connection.
// Two devices are asked round 1 (no sum is sent for it); from the bus,
// a frame that does not decode, one in the devices' direction and one for
// a round the device was not assigned are dropped and counted, and the
// session's setup reaches the one device it names, byte for byte; each
// device's frames go up under its own connection number and id, byte for
// byte; a frame for a round never assigned, and an update frame, close
// the connection with the reason.
func TestEdgeRelaysSecAgg(t *testing.T) {
	e, snc := edgeAndSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type env struct {
		kind byte
		h    cbus.Header
		body []byte
	}
	up := make(chan env, 64)
	if _, err := snc.Subscribe("browserfl.up.e0", func(m *nats.Msg) {
		if k, h, body, err := cbus.Decode(m.Data); err == nil && k != cbus.KindEdgeBeat {
			up <- env{k, h, body}
		}
	}); err != nil {
		t.Fatal(err)
	}
	snc.Flush()
	const epoch = 78
	down := func(kind byte, h *cbus.Header, body []byte) {
		h.Epoch = epoch
		b, err := cbus.Encode(kind, h, body)
		if err != nil {
			t.Fatal(err)
		}
		snc.Publish("browserfl.down.e0", b)
	}
	next := func(kind byte) env {
		t.Helper()
		for {
			select {
			case m := <-up:
				if m.kind == kind {
					return m
				}
				if m.kind == cbus.KindAggregate {
					t.Errorf("the edge sent a sum in a shared-noise session: %+v", m.h)
				}
			case <-ctx.Done():
				t.Fatalf("no envelope of kind %d from the edge", kind)
			}
		}
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
	sess := wire.SessionParams{Name: "t", Dim: 4, DeadlineMillis: 200, Algorithm: wire.SharedNoiseAlgorithm, Model: "logreg",
		Features: 1, Classes: 2, M: 2, Cohort: 2, Rounds: 3, Batch: 1, Clip: 1, Eta: 1, Rho: 1}
	var wss [2]*websocket.Conn
	var seqs [2]uint64
	ids := [2]string{"dev1", "dev2"}
	hb, _ := wire.EncodeControl(wire.Hello{Version: wire.Version, JoinCode: "join-me"})
	for i := range wss {
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		wss[i] = ws
		ws.Write(ctx, websocket.MessageText, hb)
		seqs[i] = next(cbus.KindHello).h.Seq
		wb, _ := wire.EncodeControl(wire.Welcome{Version: wire.Version, DeviceID: ids[i], Session: sess})
		down(cbus.KindControl, &cbus.Header{Seq: seqs[i]}, wb)
		if _, b, err := ws.Read(ctx); err != nil || !strings.Contains(string(b), ids[i]) {
			t.Fatalf("device %d: first frame %q (%v), want the welcome", i, b, err)
		}
	}
	rf, err := wire.EncodeRound(wire.RoundFrame{T: 1, DeadlineMillis: sess.DeadlineMillis, X: make([]float64, 4)})
	if err != nil {
		t.Fatal(err)
	}
	down(cbus.KindRound, &cbus.Header{T: 1, Seqs: seqs[:], Dim: 4, DeadlineMillis: sess.DeadlineMillis, Session: &sess}, rf)
	for i, ws := range wss {
		if typ, b, err := ws.Read(ctx); err != nil || typ != websocket.MessageBinary || !bytes.Equal(b, rf) {
			t.Fatalf("device %d: %d-byte frame (%v), want the round frame", i, len(b), err)
		}
	}

	// From the bus: three frames dropped, then the setup of device 0.
	setup := func(t0 int, you uint32) []byte {
		b, err := wire.EncodeSecAgg(t0, &wire.SecAggSetup{Round: wire.SecAggRound(t0, 1), You: you,
			Members: []wire.SecAggMember{{ID: 1, Key: [32]byte{1}}, {ID: 2, Key: [32]byte{2}}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	adv := func(you uint32) []byte {
		b, err := wire.EncodeSecAgg(1, &secagg.AdvertiseKeys{Header: secagg.Header{Round: wire.SecAggRound(1, 1)},
			Advertisement: secagg.Advertisement{Client: you}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := setup(1, 1)
	down(cbus.KindSecAggDown, &cbus.Header{Seq: seqs[0]}, append([]byte{wire.KindSecAgg}, good[1:len(good)-3]...))
	down(cbus.KindSecAggDown, &cbus.Header{Seq: seqs[0]}, adv(1))
	down(cbus.KindSecAggDown, &cbus.Header{Seq: seqs[0]}, setup(2, 1))
	down(cbus.KindSecAggDown, &cbus.Header{Seq: seqs[0]}, good)
	if typ, b, err := wss[0].Read(ctx); err != nil || typ != websocket.MessageBinary || !bytes.Equal(b, good) {
		t.Fatalf("device 0: %d-byte frame %x (%v), want its setup (%d bytes), the frames before it dropped", len(b), b, err, len(good))
	}
	if n := e.link.errors.Load(); n != 3 {
		t.Errorf("%d bus errors counted, want 3 (the dropped frames)", n)
	}

	// Up: each device's frame under its own connection.
	for i := range wss {
		a := adv(uint32(i + 1))
		wss[i].Write(ctx, websocket.MessageBinary, a)
		m := next(cbus.KindSecAggUp)
		if m.h.Seq != seqs[i] || m.h.ID != ids[i] || m.h.Epoch != epoch || m.h.T != 1 || !bytes.Equal(m.body, a) {
			t.Errorf("device %d's frame went up as seq %d id %q epoch %d round %d (%d bytes); want seq %d id %q epoch %d round 1, its %d bytes",
				i, m.h.Seq, m.h.ID, m.h.Epoch, m.h.T, len(m.body), seqs[i], ids[i], epoch, len(a))
		}
	}
	if got := e.secAggDown.Load() + e.secAggUp.Load(); got != 3 {
		t.Errorf("%d frames relayed, want 3", got)
	}

	// A round never assigned, and an update: closed with the reason.
	refused := func(ws *websocket.Conn, b []byte, code, words string) {
		t.Helper()
		ws.Write(ctx, websocket.MessageBinary, b)
		_, rb, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("no refusal before the close: %v", err)
		}
		m, err := wire.DecodeControl(rb)
		if ref, ok := m.(wire.Error); err != nil || !ok || ref.Code != code || !strings.Contains(ref.Reason, words) {
			t.Fatalf("the device got %#v (%v), want error %s naming %q", m, err, code, words)
		}
		if _, _, err := ws.Read(ctx); websocket.CloseStatus(err) == -1 {
			t.Fatalf("after the refusal: %v, want the connection closed", err)
		}
	}
	late, err := wire.EncodeSecAgg(3, &secagg.AdvertiseKeys{Header: secagg.Header{Round: wire.SecAggRound(3, 1)},
		Advertisement: secagg.Advertisement{Client: 2}})
	if err != nil {
		t.Fatal(err)
	}
	refused(wss[1], late, wire.CodeProtocol, "not assigned")
	upd, err := wire.EncodeUpdate(wire.UpdateFrame{T: 1, Payload: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	refused(wss[0], upd, wire.CodeBadFrame, "masked inputs")
	if n := e.front.Met.SecAggRefused.Load(); n != 1 {
		t.Errorf("%d secure aggregation frames refused, want 1", n)
	}
	if n := e.front.Met.Rejections[metrics.RejProtocol].Load(); n != 1 {
		t.Errorf("%d protocol rejections counted, want 1", n)
	}
}
