//go:build !js

package device_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// leaveSession is a small single-pass session (nc, logistic regression on
// 4 features and 2 classes).
func leaveSession() wire.SessionParams {
	return wire.SessionParams{Name: "leave", Dim: 10, DeadlineMillis: 5000, Algorithm: "nc", Model: "logreg",
		Features: 4, Classes: 2, M: 1, Cohort: 1, Rounds: 10, Batch: 2, Clip: 1, Eta: 0.1, Diameter: 10, Rho: 2}
}

// fakeCoord is a one-device coordinator over a real loopback websocket:
// it welcomes the device, assigns round after round, includes every
// update unless hold is set, and records what it received in order, and
// how the device closed.
type fakeCoord struct {
	t    *testing.T
	p    wire.SessionParams
	hold bool // never decide: the device keeps its update pending

	mu       sync.Mutex
	got      []string // "update 1", "leave done", ...
	closeErr error    // the error of the read that ended the connection
	closed   chan struct{}
	sent     chan int // round ids whose update arrived
}

func newFakeCoord(t *testing.T, p wire.SessionParams, hold bool) (*fakeCoord, string) {
	fc := &fakeCoord{t: t, p: p, hold: hold, closed: make(chan struct{}), sent: make(chan int, 16)}
	srv := httptest.NewServer(http.HandlerFunc(fc.serve))
	t.Cleanup(srv.Close)
	return fc, "ws" + strings.TrimPrefix(srv.URL, "http")
}

func (fc *fakeCoord) record(s string) {
	fc.mu.Lock()
	fc.got = append(fc.got, s)
	fc.mu.Unlock()
}

func (fc *fakeCoord) serve(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	defer close(fc.closed)
	ctx := r.Context()
	send := func(m wire.Message) {
		b, err := wire.EncodeControl(m)
		if err == nil {
			err = ws.Write(ctx, websocket.MessageText, b)
		}
		if err != nil {
			fc.t.Errorf("fake coordinator: send %T: %v", m, err)
		}
	}
	round := func(t int) {
		x := make([]float64, fc.p.Dim)
		b, err := wire.EncodeRound(wire.RoundFrame{T: t, DeadlineMillis: fc.p.DeadlineMillis, X: x, XPrev: x})
		if err == nil {
			err = ws.Write(ctx, websocket.MessageBinary, b)
		}
		if err != nil {
			fc.t.Errorf("fake coordinator: round %d: %v", t, err)
		}
	}
	if _, _, err := ws.Read(ctx); err != nil { // the hello
		fc.t.Errorf("fake coordinator: hello: %v", err)
		return
	}
	send(wire.Welcome{Version: wire.Version, DeviceID: "dev-1", Secret: "s3cret", Session: fc.p})
	t := 1
	round(t)
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			fc.mu.Lock()
			fc.closeErr = err
			fc.mu.Unlock()
			return
		}
		if typ == websocket.MessageText {
			m, err := wire.DecodeControl(b)
			if err != nil {
				fc.t.Errorf("fake coordinator: %v", err)
				return
			}
			if l, ok := m.(wire.Leave); ok {
				fc.record("leave " + l.Reason)
			} else {
				fc.record("unexpected " + string(b))
			}
			continue
		}
		u, err := wire.DecodeUpdate(b, wire.Limits{MaxBytes: 1 << 20})
		if err != nil {
			fc.t.Errorf("fake coordinator: update: %v", err)
			return
		}
		fc.record("update")
		fc.sent <- u.T
		if fc.hold {
			continue
		}
		send(wire.Decision{T: u.T, State: wire.Included})
		t++
		round(t)
	}
}

// result waits for the connection to end and returns what the coordinator
// received and the close status the device sent.
func (fc *fakeCoord) result(t *testing.T) ([]string, websocket.StatusCode) {
	t.Helper()
	select {
	case <-fc.closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the device did not close its connection")
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return append([]string(nil), fc.got...), websocket.CloseStatus(fc.closeErr)
}

func samples(n int) []dataset.Sample {
	out := make([]dataset.Sample, n)
	for i := range out {
		out[i] = dataset.Sample{X: []float32{float32(i%3) / 3, 0.5, 0.25, 1}, Label: i % 2}
	}
	return out
}

// TestLeaveWhenDataUsedUp: a single-pass device with data for exactly two
// rounds answers rounds 1 and 2; once round 2 is decided (or at the latest
// when asked for round 3) it sends Leave{done} and then closes with a
// normal closure (1000, a code browsers accept), and Run says why.
func TestLeaveWhenDataUsedUp(t *testing.T) {
	p := leaveSession()
	fc, url := newFakeCoord(t, p, false)
	st := &device.MemStorage{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := device.New(ctx, device.Config{URL: url, JoinCode: "c", Storage: st, Data: samples(2 * p.Batch), Unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	err = rt.Run(ctx)
	if !errors.Is(err, device.ErrDataUsedUp) || !errors.Is(err, device.ErrRefused) {
		t.Fatalf("Run = %v, want an error wrapping ErrDataUsedUp and ErrRefused", err)
	}
	got, code := fc.result(t)
	want := []string{"update", "update", "leave done"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("coordinator received %q, want %q", got, want)
	}
	if code != websocket.StatusNormalClosure {
		t.Errorf("device closed with status %d, want %d", code, websocket.StatusNormalClosure)
	}
	if s := rt.State(); s.Included != 2 || s.Pending != 0 || s.Cursor != 2*p.Batch {
		t.Errorf("state %+v, want 2 included, nothing pending, cursor %d", s, 2*p.Batch)
	}
	if rt.Leaving() != wire.LeaveDone {
		t.Errorf("Leaving() = %q, want %q", rt.Leaving(), wire.LeaveDone)
	}

	// Started again with the data still used up (a reload, a restart),
	// the device does not connect at all.
	rt2, err := device.New(ctx, device.Config{URL: "ws://127.0.0.1:1/never", JoinCode: "c", Storage: st, Data: samples(2 * p.Batch), Unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt2.Run(ctx); !errors.Is(err, device.ErrDataUsedUp) {
		t.Errorf("restarted Run = %v, want ErrDataUsedUp without dialing", err)
	}
}

// TestLeaveKeepsPending: the owner stops the device while its update is
// sent but undecided. The device sends Leave{stopped}, closes with 1000,
// Run returns ErrLeft, and the pending round is kept for a later hello.
func TestLeaveKeepsPending(t *testing.T) {
	p := leaveSession()
	fc, url := newFakeCoord(t, p, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := device.New(ctx, device.Config{URL: url, JoinCode: "c", Storage: &device.MemStorage{}, Data: samples(10), Unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	select {
	case <-fc.sent:
	case <-time.After(20 * time.Second):
		t.Fatal("no update arrived")
	}
	rt.Leave("whatever") // an unknown reason counts as stopped
	if err := <-done; !errors.Is(err, device.ErrLeft) {
		t.Fatalf("Run = %v, want ErrLeft", err)
	}
	got, code := fc.result(t)
	if want := []string{"update", "leave stopped"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("coordinator received %q, want %q", got, want)
	}
	if code != websocket.StatusNormalClosure {
		t.Errorf("device closed with status %d, want %d", code, websocket.StatusNormalClosure)
	}
	if s := rt.State(); s.Pending != 1 {
		t.Errorf("pending round %d after Leave, want 1 (kept for a later hello)", s.Pending)
	}
	rt.Leave(wire.LeaveDone) // a second call changes nothing
	if rt.Leaving() != wire.LeaveStopped {
		t.Errorf("Leaving() = %q after a second Leave, want %q", rt.Leaving(), wire.LeaveStopped)
	}
}

// TestAddDataWhileRunning: a single-pass device holding data for two
// rounds is given two rounds more while it runs (the rest of a demo
// shard arriving in the background), right before its first update is
// sent: it answers four rounds, then leaves because its data is used up.
// Adding touches neither the ledger nor the cursor, and samples that do
// not fit the session are refused without adding any. A device that could
// not see the late samples would leave after two updates.
func TestAddDataWhileRunning(t *testing.T) {
	p := leaveSession()
	fc, url := newFakeCoord(t, p, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rt *device.Runtime
	var hookErr error
	hooks := &device.Hooks{BeforeSend: func(round int) (time.Duration, bool) {
		if round != 1 {
			return 0, false
		}
		acc := rt.Algorithm().(optim.Accountant)
		before, st := acc.Ledger(), rt.State()
		bad := samples(1)
		bad[0].Label = p.Classes
		if err := rt.AddData(bad); !errors.Is(err, device.ErrWrongData) {
			hookErr = fmt.Errorf("AddData(label %d) = %v, want ErrWrongData", p.Classes, err)
		} else if err := rt.InsertData(st.Cursor-1, samples(1)); !errors.Is(err, device.ErrInsertUsed) {
			hookErr = fmt.Errorf("InsertData before the cursor (%d) = %v, want ErrInsertUsed", st.Cursor, err)
		} else if err := rt.AddData(samples(2 * p.Batch)); err != nil {
			hookErr = err
		} else if after := acc.Ledger(); !reflect.DeepEqual(before, after) || rt.State().Cursor != st.Cursor {
			hookErr = fmt.Errorf("adding data changed the ledger (%+v -> %+v) or the cursor", before, after)
		}
		return 0, false
	}}
	rt, err := device.New(ctx, device.Config{URL: url, JoinCode: "c", Storage: &device.MemStorage{}, Data: samples(2 * p.Batch),
		Unlimited: true, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Run(ctx); !errors.Is(err, device.ErrDataUsedUp) {
		t.Fatalf("Run = %v, want ErrDataUsedUp", err)
	}
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	got, _ := fc.result(t)
	if want := "update,update,update,update,leave done"; strings.Join(got, ",") != want {
		t.Errorf("coordinator received %q, want %q", got, want)
	}
	if n, s := rt.DataLen(), rt.State(); n != 4*p.Batch || s.Cursor != 4*p.Batch || s.Included != 4 {
		t.Errorf("%d samples, state %+v: want %d samples, all used, 4 included", n, s, 4*p.Batch)
	}
}
