//go:build !js

package memtransport_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/device"
	"browserfl/device/memtransport"
)

// end is what the tests use of a connection's end: device.Conn, and
// CloseNow as *websocket.Conn has it.
type end interface {
	device.Conn
	CloseNow() error
}

// pairs makes connected ends (a dials, b accepts) of each transport the
// tests compare: the in-memory one must behave as the websocket one does.
var pairs = []struct {
	name string
	pair func(t *testing.T) (a, b end)
}{
	{"websocket", websocketPair},
	{"memory", func(*testing.T) (end, end) { a, b := memtransport.Pipe(); return a, b }},
}

// websocketPair connects two real websocket ends over loopback.
func websocketPair(t *testing.T) (end, end) {
	t.Helper()
	accepted := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		accepted <- c
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	b := <-accepted
	t.Cleanup(func() { a.CloseNow(); b.CloseNow() })
	return a, b
}

// readResult is what a Read returned.
type readResult struct {
	typ  websocket.MessageType
	data []byte
	err  error
}

// readAsync reads one message from c on its own goroutine.
func readAsync(ctx context.Context, c end) <-chan readResult {
	ch := make(chan readResult, 1)
	go func() {
		typ, b, err := c.Read(ctx)
		ch <- readResult{typ, b, err}
	}()
	return ch
}

// testCase is one behaviour, run on a connected pair.
type testCase struct {
	name string
	run  func(t *testing.T, ctx context.Context, a, b end)
}

// strict are behaviours of the in-memory transport where the websocket
// library's depend on timing (it closes the connection on a goroutine
// when the context is done, so a read may still return a waiting message,
// or not drop the connection): the in-memory one always takes the
// harsher.
var strict = map[string][]testCase{"memory": {
	{"a read with a done context fails though a message waits", func(t *testing.T, ctx context.Context, a, b end) {
		if err := b.Write(ctx, websocket.MessageText, []byte("waiting")); err != nil {
			t.Fatalf("write: %v", err)
		}
		rctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := a.Read(rctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("read with a done context: %v, want context.Canceled", err)
		}
	}},
	{"a cancelled read drops the connection", func(t *testing.T, ctx context.Context, a, b end) {
		rctx, cancel := context.WithCancel(ctx)
		r := readAsync(rctx, a)
		cancel()
		if res := <-r; !errors.Is(res.err, context.Canceled) {
			t.Fatalf("cancelled read: %v, want context.Canceled", res.err)
		}
		_, _, err := b.Read(ctx)
		if err == nil || websocket.CloseStatus(err) != -1 || !errors.Is(err, io.EOF) {
			t.Fatalf("the peer reads %v, want io.EOF without a close status", err)
		}
		if err := a.Write(ctx, websocket.MessageText, []byte("late")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write after the cancelled read: %v, want net.ErrClosed", err)
		}
	}},
	{"a write waits for room until its context is done", func(t *testing.T, ctx context.Context, a, b end) {
		for i := range memtransport.QueueLen {
			if err := a.Write(ctx, websocket.MessageBinary, []byte{byte(i)}); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Write(wctx, websocket.MessageBinary, []byte{0xff}) }()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("write to a full queue, cancelled: %v, want context.Canceled", err)
		}
		// The peer still reads what was written, then the drop.
		for i := range memtransport.QueueLen {
			if _, data, err := b.Read(ctx); err != nil || data[0] != byte(i) {
				t.Fatalf("read %d: %v %v", i, data, err)
			}
		}
		if _, _, err := b.Read(ctx); !errors.Is(err, io.EOF) {
			t.Fatalf("read after the queued messages: %v, want io.EOF", err)
		}
	}},
	{"a write waits until the peer reads", func(t *testing.T, ctx context.Context, a, b end) {
		for i := range memtransport.QueueLen + 1 {
			if i == memtransport.QueueLen {
				r := readAsync(ctx, b) // makes room for the last write
				defer func() {
					if res := <-r; res.err != nil || res.data[0] != 0 {
						t.Errorf("first read: %v %v", res.data, res.err)
					}
				}()
			}
			if err := a.Write(ctx, websocket.MessageBinary, []byte{byte(i)}); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
	}},
}}

func TestSameAsWebsocket(t *testing.T) {
	cases := []testCase{
		{"messages keep their order and type", func(t *testing.T, ctx context.Context, a, b end) {
			want := []readResult{{typ: websocket.MessageText, data: []byte(`{"type":"hello"}`)},
				{typ: websocket.MessageBinary, data: []byte{1, 2, 3}}, {typ: websocket.MessageBinary, data: []byte{}}}
			for _, m := range want {
				if err := a.Write(ctx, m.typ, m.data); err != nil {
					t.Fatalf("write: %v", err)
				}
			}
			for i, m := range want {
				typ, data, err := b.Read(ctx)
				if err != nil || typ != m.typ || !bytes.Equal(data, m.data) {
					t.Fatalf("message %d: got %v %q %v, want %v %q", i, typ, data, err, m.typ, m.data)
				}
			}
		}},
		{"a message over the read limit", func(t *testing.T, ctx context.Context, a, b end) {
			a.SetReadLimit(10)
			for _, n := range []int{10, 11} {
				if err := b.Write(ctx, websocket.MessageBinary, make([]byte, n)); err != nil {
					t.Fatalf("write %d bytes: %v", n, err)
				}
			}
			if _, data, err := a.Read(ctx); err != nil || len(data) != 10 {
				t.Fatalf("a message at the limit: %d bytes, %v", len(data), err)
			}
			_, _, err := a.Read(ctx)
			if !errors.Is(err, websocket.ErrMessageTooBig) {
				t.Fatalf("a message over the limit: %v, want websocket.ErrMessageTooBig", err)
			}
			_, _, err = b.Read(ctx)
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusMessageTooBig || ce.Reason != "read limited at 11 bytes" {
				t.Fatalf("the writer reads %v, want close status %v, reason %q", err, websocket.StatusMessageTooBig, "read limited at 11 bytes")
			}
		}},
		{"the close code follows the messages written before", func(t *testing.T, ctx context.Context, a, b end) {
			if err := b.Write(ctx, websocket.MessageText, []byte("bye")); err != nil {
				t.Fatalf("write: %v", err)
			}
			closed := make(chan error, 1)
			go func() { closed <- b.Close(websocket.StatusPolicyViolation, "removed: by the teacher") }()
			if _, data, err := a.Read(ctx); err != nil || string(data) != "bye" {
				t.Fatalf("read %q, %v; want the message written before the close", data, err)
			}
			_, _, err := a.Read(ctx)
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != "removed: by the teacher" {
				t.Fatalf("read after the close: %v, want status %v", err, websocket.StatusPolicyViolation)
			}
			if err := <-closed; err != nil {
				t.Fatalf("close: %v", err)
			}
		}},
		{"a cancelled read returns", func(t *testing.T, ctx context.Context, a, b end) {
			rctx, cancel := context.WithCancel(ctx)
			r := readAsync(rctx, a)
			cancel()
			if res := <-r; !errors.Is(res.err, context.Canceled) {
				t.Fatalf("cancelled read: %v, want context.Canceled", res.err)
			}
		}},
		{"read and write after close", func(t *testing.T, ctx context.Context, a, b end) {
			r := readAsync(ctx, b)
			if err := a.Close(websocket.StatusNormalClosure, "device left"); err != nil {
				t.Fatalf("close: %v", err)
			}
			if res := <-r; websocket.CloseStatus(res.err) != websocket.StatusNormalClosure {
				t.Fatalf("the peer reads %v, want a normal closure", res.err)
			}
			if err := a.Write(ctx, websocket.MessageText, []byte("late")); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("write after close: %v, want net.ErrClosed", err)
			}
			if _, _, err := a.Read(ctx); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("read after close: %v, want net.ErrClosed", err)
			}
			if err := a.Close(websocket.StatusNormalClosure, ""); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("second close: %v, want net.ErrClosed", err)
			}
		}},
	}
	for _, p := range pairs {
		for _, tc := range append(cases, strict[p.name]...) {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				a, b := p.pair(t)
				tc.run(t, ctx, a, b)
			})
		}
	}
}
