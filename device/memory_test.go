//go:build !js

package device_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/device"
	"browserfl/device/memtransport"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// coordEnd is the coordinator's end of one in-memory connection, driven
// by the test: each helper fails the test on anything unexpected.
type coordEnd struct {
	t   *testing.T
	ctx context.Context
	c   *memtransport.Conn
}

func accept(t *testing.T, ctx context.Context, l *memtransport.Listener) coordEnd {
	t.Helper()
	c, err := l.Accept(ctx)
	if err != nil {
		t.Fatalf("coordinator: accept: %v", err)
	}
	return coordEnd{t: t, ctx: ctx, c: c}
}

func (e coordEnd) send(m wire.Message) {
	e.t.Helper()
	b, err := wire.EncodeControl(m)
	if err == nil {
		err = e.c.Write(e.ctx, websocket.MessageText, b)
	}
	if err != nil {
		e.t.Fatalf("coordinator: send %T: %v", m, err)
	}
}

func (e coordEnd) round(t, dim int) {
	e.t.Helper()
	x, prev := make([]float64, dim), make([]float64, dim)
	for i := range x {
		x[i], prev[i] = 0.01*float64(i+t), 0.01*float64(i+t-1)
	}
	b, err := wire.EncodeRound(wire.RoundFrame{T: t, DeadlineMillis: 5000, X: x, XPrev: prev})
	if err == nil {
		err = e.c.Write(e.ctx, websocket.MessageBinary, b)
	}
	if err != nil {
		e.t.Fatalf("coordinator: round %d: %v", t, err)
	}
}

func (e coordEnd) hello() wire.Hello {
	e.t.Helper()
	typ, b, err := e.c.Read(e.ctx)
	if err != nil || typ != websocket.MessageText {
		e.t.Fatalf("coordinator: hello: %v %v", typ, err)
	}
	m, err := wire.DecodeControl(b)
	h, ok := m.(wire.Hello)
	if err != nil || !ok {
		e.t.Fatalf("coordinator: hello: %T %v", m, err)
	}
	return h
}

func (e coordEnd) update(t int) {
	e.t.Helper()
	typ, b, err := e.c.Read(e.ctx)
	if err != nil || typ != websocket.MessageBinary {
		e.t.Fatalf("coordinator: update %d: %v %v", t, typ, err)
	}
	u, err := wire.DecodeUpdate(b, wire.Limits{MaxBytes: 1 << 20})
	if err != nil || u.T != t || len(u.Payload) == 0 {
		e.t.Fatalf("coordinator: update for round %d: T = %d, %d bytes, %v", t, u.T, len(u.Payload), err)
	}
}

// closed reads until the connection ends and returns the close status
// the device sent (-1 for none).
func (e coordEnd) closed() websocket.StatusCode {
	e.t.Helper()
	for {
		if _, _, err := e.c.Read(e.ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

// TestRuntimeInMemory runs a Runtime against a coordinator end the test
// drives over the in-memory transport: training, resuming after a lost
// connection, a message over the read limit, a removal, and a cancelled
// context.
func TestRuntimeInMemory(t *testing.T) {
	p := leaveSession()
	welcome := wire.Welcome{Version: wire.Version, DeviceID: "dev-1", Secret: "s3cret", Session: p}
	cases := []struct {
		name string
		// coordinator plays the coordinator's side; cancel cancels Run's
		// context.
		coordinator func(t *testing.T, ctx context.Context, l *memtransport.Listener, cancel func())
		wantErr     error // what Run returns (nil: the session ended)
		wantEvents  string
		included    int
	}{
		{"trains three rounds to the end", func(t *testing.T, ctx context.Context, l *memtransport.Listener, _ func()) {
			e := accept(t, ctx, l)
			if h := e.hello(); h.JoinCode != "c" || h.DeviceID != "" || h.Pending != 0 || !h.KeepsX || h.Version != wire.Version {
				t.Fatalf("first hello %+v", h)
			}
			e.send(welcome)
			for r := 1; r <= 3; r++ {
				e.round(r, p.Dim)
				e.update(r)
				e.send(wire.Decision{T: r, State: wire.Included})
			}
			e.send(wire.End{Committed: 3})
			if code := e.closed(); code != websocket.StatusNormalClosure {
				t.Errorf("device closed with %v, want a normal closure", code)
			}
		}, nil, "connected0 round1 sent1 included1 round2 sent2 included2 round3 sent3 included3 end3", 3},
		{"resumes its pending round after a lost connection", func(t *testing.T, ctx context.Context, l *memtransport.Listener, _ func()) {
			e := accept(t, ctx, l)
			e.hello()
			e.send(welcome)
			e.round(1, p.Dim)
			e.update(1)
			e.c.CloseNow() // the decision never arrives
			e = accept(t, ctx, l)
			if h := e.hello(); h.DeviceID != "dev-1" || h.Secret != "s3cret" || h.Pending != 1 {
				t.Fatalf("hello after the lost connection %+v, want dev-1 with round 1 pending", h)
			}
			resumed := welcome
			resumed.Secret = ""
			resumed.Pending = &wire.Decision{T: 1, State: wire.Included}
			e.send(resumed)
			e.round(2, p.Dim)
			e.update(2)
			e.send(wire.Decision{T: 2, State: wire.Excluded})
			e.send(wire.End{Committed: 2})
		}, nil, "connected0 round1 sent1 error0 connected0 included1 round2 sent2 excluded2 end2", 1},
		{"a message over the read limit, then removed", func(t *testing.T, ctx context.Context, l *memtransport.Listener, _ func()) {
			e := accept(t, ctx, l)
			e.hello()
			e.send(wire.Error{Code: wire.CodeBadFrame, Reason: strings.Repeat("x", wire.MaxControlBytes)})
			if code := e.closed(); code != websocket.StatusMessageTooBig {
				t.Errorf("device closed with %v, want %v", code, websocket.StatusMessageTooBig)
			}
			e = accept(t, ctx, l)
			e.hello()
			e.send(welcome)
			e.send(wire.Error{Code: wire.CodeRemoved, Reason: "removed by the teacher"})
			e.c.Close(websocket.StatusPolicyViolation, "removed")
		}, device.ErrRemoved, "error-too-big connected0", 0},
		{"a cancelled context ends Run", func(t *testing.T, ctx context.Context, l *memtransport.Listener, cancel func()) {
			e := accept(t, ctx, l)
			e.hello()
			e.send(welcome)
			cancel()
			e.closed()
		}, context.Canceled, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
			defer stop()
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			l := memtransport.NewListener()
			defer l.Close()
			var (
				mu     sync.Mutex
				events []string
			)
			rt, err := device.New(ctx, device.Config{Transport: l, JoinCode: "c", Storage: &device.MemStorage{},
				Data: samples(10 * p.Batch), Unlimited: true, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
				OnEvent: func(e device.Event) {
					s := fmt.Sprint(e.Kind, e.T)
					if e.Kind == device.EventError {
						s = "error0"
						if errors.Is(e.Err, websocket.ErrMessageTooBig) {
							s = "error-too-big"
						}
					}
					mu.Lock()
					events = append(events, s)
					mu.Unlock()
				}})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- rt.Run(runCtx) }()
			tc.coordinator(t, ctx, l, cancel)
			select {
			case err = <-done:
			case <-ctx.Done():
				t.Fatal("Run did not return")
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Run = %v, want %v", err, tc.wantErr)
			}
			mu.Lock()
			got := strings.Join(events, " ")
			mu.Unlock()
			if tc.wantEvents != "" && got != tc.wantEvents {
				t.Errorf("events %q, want %q", got, tc.wantEvents)
			}
			if s := rt.State(); s.Included != tc.included || s.Pending != 0 && tc.wantErr == nil {
				t.Errorf("state %+v, want %d included and nothing pending", s, tc.included)
			}
			if tc.included > 0 {
				acc, ok := rt.Algorithm().(optim.Accountant)
				if !ok {
					t.Fatal("the device half keeps no ledger")
				}
				if l := acc.Ledger(); l.Rho() <= 0 {
					t.Errorf("the device's ledger is not charged after %d releases", tc.included)
				}
			}
		})
	}
}

// TestOnEventCallsBack: an OnEvent callback calls back into the runtime
// (State on every event, Leave once round 2 is included) without a
// deadlock, and sees the state the event reports.
func TestOnEventCallsBack(t *testing.T) {
	p := leaveSession()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := memtransport.NewListener()
	defer l.Close()
	var (
		rt  *device.Runtime
		bad []string // events whose State disagreed
	)
	rt, err := device.New(ctx, device.Config{Transport: l, JoinCode: "c", Storage: &device.MemStorage{},
		Data: samples(10 * p.Batch), Unlimited: true,
		OnEvent: func(e device.Event) {
			if s := rt.State(); s.Included != e.Participations || s.DeviceID != e.DeviceID {
				bad = append(bad, fmt.Sprintf("%s%d: state %+v", e.Kind, e.T, s))
			}
			if e.Kind == device.EventIncluded && e.T == 2 {
				rt.Leave(wire.LeaveStopped)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	e := accept(t, ctx, l)
	e.hello()
	e.send(wire.Welcome{Version: wire.Version, DeviceID: "dev-1", Secret: "s3cret", Session: p})
	for r := 1; r <= 2; r++ {
		e.round(r, p.Dim)
		e.update(r)
		e.send(wire.Decision{T: r, State: wire.Included})
	}
	typ, b, err := e.c.Read(ctx)
	if m, derr := wire.DecodeControl(b); err != nil || typ != websocket.MessageText || derr != nil || m != (wire.Leave{Reason: wire.LeaveStopped}) {
		t.Fatalf("after round 2 the coordinator read %v %q %v, want a Leave", typ, b, err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, device.ErrLeft) {
			t.Fatalf("Run = %v, want ErrLeft", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return: an OnEvent callback that calls back into the runtime deadlocked")
	}
	if len(bad) > 0 {
		t.Errorf("State in the callback disagrees with the event: %q", bad)
	}
}
