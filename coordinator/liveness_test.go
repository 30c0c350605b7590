package coordinator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/coordinator"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/internal/nctest"
	"browserfl/coordinator/wsconn"
	"browserfl/device"
	"browserfl/shared/wire"
)

// liveHarness is newHarness with liveness settings: rounds wait up to 2 s
// for a whole cohort (so the first round takes every device the test
// connects), then go on with 2 or more.
func liveHarness(t *testing.T, sess wire.SessionParams, lim wsconn.Limits, gate gate.Config) *harness {
	t.Helper()
	return newHarnessWith(t, sess, func(cfg *coordinator.Config) {
		cfg.MinDevices, cfg.FillWait, cfg.Limits, cfg.Gate = 2, 2*time.Second, lim, gate
	})
}

// readRound reads frames from ws until a round assignment arrives and
// returns its number.
func readRound(ctx context.Context, ws *websocket.Conn, dim int) (int, error) {
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			return 0, err
		}
		if typ == websocket.MessageBinary {
			r, err := wire.DecodeRound(b, wire.Limits{Dim: dim, MaxBytes: 1 << 20})
			return r.T, err
		}
	}
}

// TestGoneDevicesNeverStallARound: three kinds of gone device are each in
// the first cohort of a session whose round deadline (10 minutes) is far
// beyond the test's own limit (60 s), so a round that waited for one of
// them would fail the test: one closes its connection after being
// assigned, one stops reading (a frozen page or a phone without network:
// its heartbeat goes unanswered), one says Leave. Two honest devices
// finish every round; the gone ones are never included and the counters
// say why.
func TestGoneDevicesNeverStallARound(t *testing.T) {
	sess := testSession(8, 5, 5, 6, 600000)
	h := liveHarness(t, sess, wsconn.Limits{}, gate.Config{PingInterval: 200 * time.Millisecond, PingTimeout: 3 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	closer := dialRaw(t, ctx, h.wsURL(), true)
	freezer := dialRaw(t, ctx, h.wsURL(), true)
	leaver := dialRaw(t, ctx, h.wsURL(), true)
	var rts []*device.Runtime
	var fakes []*nctest.Device
	for i := range 2 {
		rt, f := newDevice(t, h.wsURL(), sess, i, nil, 0)
		rts, fakes = append(rts, rt), append(fakes, f)
	}
	// The first round needs all five (cohort 5); start once they are in.
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	go func() {
		if _, err := readRound(ctx, closer, sess.Dim); err == nil {
			closer.Close(websocket.StatusNormalClosure, "bye")
		}
	}()
	go func() {
		if _, err := readRound(ctx, leaver, sess.Dim); err == nil {
			b, _ := wire.EncodeControl(wire.Leave{Reason: wire.LeaveStopped})
			leaver.Write(ctx, websocket.MessageText, b)
			// Keep reading (answering pings) but never send an update.
			for {
				if _, _, err := leaver.Read(ctx); err != nil {
					return
				}
			}
		}
	}()
	// freezer never reads again after its hello: pings go unanswered.
	_ = freezer

	runDevices(t, ctx, rts)
	if err := <-runErr; err != nil {
		t.Fatalf("coordinator: %v (a round waited for a gone device)", err)
	}
	rec, ok, err := h.store.Round(1)
	if err != nil || !ok {
		t.Fatalf("round 1: %v %v", ok, err)
	}
	if len(rec.Cohort) != 5 || len(rec.Included) != 2 {
		t.Errorf("round 1: cohort %d, included %d; want 5 and 2", len(rec.Cohort), len(rec.Included))
	}
	recs, err := h.store.Rounds(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.DeadlineHit {
			t.Errorf("round %d closed at its deadline: it waited for a gone device", r.T)
		}
	}
	for _, name := range []string{"browserfl_leaves_total", `browserfl_rejections_total{kind="ping_timeout"}`} {
		if got := metric(t, h.srv.URL, name); got != "1" {
			t.Errorf("%s = %s, want 1", name, got)
		}
	}
	if got := metric(t, h.srv.URL, "browserfl_grace_drops_total"); got != "3" {
		t.Errorf("browserfl_grace_drops_total = %s, want 3 (closed, frozen, left)", got)
	}
	checkInvariant(t, h.qs, sess.Cohort, fakes)
}

// TestUnansweringDeviceNoLongerSampled: a device that stays connected and
// answers pings but never sends an update, and says hello again on a new
// connection after every decision (which must not reset its count), is a
// member until it has missed Limits.MaxMisses rounds in a row; after that
// it is only asked as a probe, beyond the round's target, so no later
// round waits for it; the dashboard counts it as stuck.
func TestUnansweringDeviceNoLongerSampled(t *testing.T) {
	sess := testSession(8, 3, 3, 8, 300)
	h := liveHarness(t, sess, wsconn.Limits{MaxMisses: 2}, gate.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mute := &sybil{url: h.wsURL(), ended: make(chan struct{})}
	ws, err := mute.hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mctx, mcancel := context.WithCancel(ctx)
	defer mcancel()
	muteDone := make(chan struct{})
	go func() {
		defer close(muteDone)
		mute.loop(mctx, ws)
	}()
	var rts []*device.Runtime
	for i := range 2 {
		rt, _ := newDevice(t, h.wsURL(), sess, i, nil, 0)
		rts = append(rts, rt)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	runDevices(t, ctx, rts)
	if err := <-runErr; err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	select { // the mute device is connected again and has heard End
	case <-mute.ended:
	case <-ctx.Done():
		t.Fatal("the mute device never heard End")
	}
	st := h.coord.Status()
	mcancel()
	<-muteDone
	n := int(mute.assigned.Load())
	if n < 1 || mute.rehellos.Load() < 1 {
		t.Errorf("the mute device was assigned %d rounds and said hello again %d times: the test shows nothing", n, mute.rehellos.Load())
	}
	if st.Devices.Stuck != 1 {
		t.Errorf("status: %d stuck devices, want 1 (its misses survive its hellos)", st.Devices.Stuck)
	}
	// The rounds that waited for the mute device closed at their
	// deadline, and /api/rounds says so; the later ones did not.
	resp, err := http.Get(h.srv.URL + "/api/rounds?code=join-me")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var recs []struct {
		T           int   `json:"t"`
		DeadlineHit *bool `json:"deadline_hit"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != sess.Rounds {
		t.Fatalf("/api/rounds: %d records, want %d", len(recs), sess.Rounds)
	}
	hits := 0
	for _, r := range recs {
		if r.DeadlineHit == nil {
			t.Fatalf("/api/rounds: round %d has no deadline_hit field", r.T)
		}
		if *r.DeadlineHit {
			hits++
		}
	}
	// At most MaxMisses rounds waited for it (fewer when it was asked on
	// the connection it was closing: going away without its update is a
	// miss too, and that round does not wait).
	if hits < 1 || hits > 2 {
		t.Errorf("/api/rounds: %d rounds with deadline_hit, want 1 or 2 (MaxMisses = 2: the rounds the mute device was a member of)", hits)
	}
}
