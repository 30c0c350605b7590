//go:build js && wasm

package socket

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall/js"
	"testing"
	"time"

	"go.uber.org/goleak"

	"browserfl/device"
	"browserfl/wasm/internal/jstest"
)

// The tests run under node (make test-wasm-features), which has no
// WebSocket: fakeSocket below is the browser's, as the HTML standard
// gives it (and as web/worker.js's RelaySocket copies it): send throws
// while connecting and drops data once closing; close throws on a code a
// script may not send (only 1000 and 3000-4999), does nothing once
// closing, and its close event comes later, from the event loop. The
// tests drive the peer's side (open, a message, a close) through its
// methods. The browser tests (e2e) run this package against the real
// coordinator in Chromium, Firefox and WebKit.

// TestMain fails the package's tests if a goroutine they started is
// still running when they end (go.uber.org/goleak).
func TestMain(m *testing.M) {
	js.Global().Call("eval", fakeSocket)
	js.Global().Set("WebSocket", js.Global().Get("FakeSocket"))
	goleak.VerifyTestMain(m, jstest.IgnoreRuntime())
}

const fakeSocket = `globalThis.FakeSocket = class FakeSocket extends EventTarget {
  constructor(url) {
    super();
    if (!/^wss?:\/\//.test(String(url))) throw new Error("SyntaxError: not a websocket URL");
    this.url = String(url); this.readyState = 0; this.binaryType = "blob"; this.sent = []; this.closeCalls = [];
    FakeSocket.last = this;
  }
  send(d) {
    if (this.readyState === 0) throw new Error("InvalidStateError: still connecting");
    if (this.readyState !== 1) return;
    this.sent.push(typeof d === "string" ? "text:" + d : "binary:" + Array.from(d).join(","));
  }
  close(code, reason) {
    if (code !== undefined && code !== 1000 && !(code >= 3000 && code <= 4999)) throw new Error("InvalidAccessError: close code " + code);
    this.closeCalls.push(code + " " + reason);
    if (this.readyState >= 2) return;
    this.readyState = 2;
    setTimeout(() => this.peerClose(code === undefined ? 1005 : code, reason || ""), 0);
  }
  addEventListener(type, f) { this.listeners = (this.listeners || 0) + 1; super.addEventListener(type, f); }
  removeEventListener(type, f) { this.listeners--; super.removeEventListener(type, f); }
  peerOpen() { this.readyState = 1; this.dispatchEvent(new Event("open")); }
  peerSend(data) { const e = new Event("message"); e.data = data; this.dispatchEvent(e); }
  peerBytes(list) { this.peerSend(new Uint8Array(list).buffer); }
  peerZeros(n) { this.peerSend(new ArrayBuffer(n)); }
  peerClose(code, reason) {
    if (this.readyState === 3) return;
    this.readyState = 3;
    const e = new Event("close"); e.code = code; e.reason = reason; e.wasClean = code !== 1006;
    this.dispatchEvent(e);
  }
};`

// last is the fake socket Dial made last.
func last() js.Value { return js.Global().Get("FakeSocket").Get("last") }

// open dials and lets the fake open once the dial waits.
func open(t *testing.T) *Conn {
	t.Helper()
	js.Global().Get("FakeSocket").Set("last", js.Null())
	go func() {
		for last().IsNull() {
			time.Sleep(time.Millisecond)
		}
		last().Call("peerOpen")
	}()
	c, err := Dial(context.Background(), "ws://coordinator/ws")
	if err != nil {
		t.Fatal(err)
	}
	if bt := last().Get("binaryType").String(); bt != "arraybuffer" {
		t.Errorf("binaryType %q, want arraybuffer", bt)
	}
	return c
}

// strs reads a JavaScript array of strings.
func strs(v js.Value) []string {
	out := make([]string, v.Length())
	for i := range out {
		out[i] = v.Index(i).String()
	}
	return out
}

// Messages arrive in order, text and binary; writes leave as the types
// they were given; the messages sent before the peer closed are read
// before its close, whose code and reason the error carries.
func TestMessagesInOrderThenClose(t *testing.T) {
	c := open(t)
	ws := last()
	ws.Call("peerSend", "hello")
	ws.Call("peerBytes", js.ValueOf([]any{1, 2, 3}))
	ws.Call("peerClose", 4001, "bye")
	ctx := context.Background()
	for i, want := range []struct {
		typ device.MessageType
		b   string
	}{{device.MessageText, "hello"}, {device.MessageBinary, "\x01\x02\x03"}} {
		typ, b, err := c.Read(ctx)
		if err != nil || typ != want.typ || string(b) != want.b {
			t.Fatalf("read %d: %v %q %v, want %v %q", i, typ, b, err, want.typ, want.b)
		}
	}
	_, _, err := c.Read(ctx)
	var ce *CloseError
	if !errors.As(err, &ce) || ce.Code != 4001 || ce.Reason != "bye" || CloseStatus(err) != 4001 {
		t.Fatalf("read after the close: %v, want the peer's 4001 \"bye\"", err)
	}
	if err := c.Write(ctx, device.MessageText, []byte("late")); err == nil {
		t.Error("a write after the close succeeded")
	}
}

func TestWriteTypes(t *testing.T) {
	c := open(t)
	ctx := context.Background()
	if err := c.Write(ctx, device.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, device.MessageBinary, []byte{0, 255}); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, device.MessageType(9), nil); err == nil {
		t.Error("a write of type 9 succeeded")
	}
	if got, want := strings.Join(strs(last().Get("sent")), " "), "text:hi binary:0,255"; got != want {
		t.Errorf("sent %q, want %q", got, want)
	}
	if err := c.Close(device.StatusNormalClosure, "done"); err != nil {
		t.Fatal(err)
	}
}

// A message over the read limit ends the connection after the ones
// before it: Read's error wraps ErrMessageTooBig, the socket is closed
// with 1000 (a script may not send 1009), and what follows is not read.
func TestReadLimit(t *testing.T) {
	for _, limit := range []int64{0, 4} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			c := open(t)
			over := defaultReadLimit + 1
			if limit > 0 {
				c.SetReadLimit(limit)
				over = int(limit) + 1
			}
			ws := last()
			ws.Call("peerSend", strings.Repeat("o", over-1))
			ws.Call("peerSend", strings.Repeat("x", over))
			ws.Call("peerSend", "after")
			ctx := context.Background()
			if _, b, err := c.Read(ctx); err != nil || len(b) != over-1 {
				t.Fatalf("a message at the limit: %d bytes, %v", len(b), err)
			}
			_, b, err := c.Read(ctx)
			if !errors.Is(err, ErrMessageTooBig) {
				t.Fatalf("read of %d bytes over a limit of %d: %q %v, want ErrMessageTooBig", over, limit, b, err)
			}
			if got := strs(ws.Get("closeCalls")); len(got) != 1 || !strings.HasPrefix(got[0], "1000 ") {
				t.Errorf("close calls %q, want one with 1000", got)
			}
			ws.Call("peerSend", "later") // arrives after the failure
			if _, b, err := c.Read(ctx); !errors.Is(err, ErrMessageTooBig) {
				t.Errorf("the read after: %q %v, want ErrMessageTooBig again", b, err)
			}
		})
	}
}

// The limit applies when a message is read: a welcome, read first,
// raises it for the frame the coordinator sent right behind it, which
// arrived while the limit was still the default.
func TestReadLimitWhenRead(t *testing.T) {
	c := open(t)
	ws := last()
	ws.Call("peerSend", "welcome")
	ws.Call("peerSend", strings.Repeat("f", defaultReadLimit+100))
	ctx := context.Background()
	if _, b, err := c.Read(ctx); err != nil || string(b) != "welcome" {
		t.Fatalf("first read: %q %v", b, err)
	}
	c.SetReadLimit(1 << 20)
	if _, b, err := c.Read(ctx); err != nil || len(b) != defaultReadLimit+100 {
		t.Fatalf("the frame behind the welcome: %d bytes, %v", len(b), err)
	}
	if err := c.Close(device.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
}

// A Read whose context ends fails with the context's error and closes
// the connection; so does a Write.
func TestContextEnds(t *testing.T) {
	for _, op := range []string{"read", "write"} {
		t.Run(op, func(t *testing.T) {
			c := open(t)
			ctx, cancel := context.WithCancel(context.Background())
			var err error
			if op == "read" {
				go func() { time.Sleep(5 * time.Millisecond); cancel() }()
				_, _, err = c.Read(ctx)
			} else {
				cancel()
				err = c.Write(ctx, device.MessageText, []byte("x"))
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: %v, want context.Canceled", op, err)
			}
			if got := strs(last().Get("closeCalls")); len(got) != 1 || !strings.HasPrefix(got[0], "1000 ") {
				t.Errorf("close calls %q, want one with 1000", got)
			}
			if _, _, err := c.Read(context.Background()); !errors.Is(err, context.Canceled) {
				t.Errorf("the read after: %v, want the context's error", err)
			}
		})
	}
}

// A dial fails when the socket closes before it opens (a refused
// connection: 1006, no code to read) and when its context ends (the
// socket is then closed); a bad URL fails at once.
func TestDialFails(t *testing.T) {
	js.Global().Get("FakeSocket").Set("last", js.Null())
	go func() {
		for last().IsNull() {
			time.Sleep(time.Millisecond)
		}
		last().Call("peerClose", 1006, "")
	}()
	_, err := Dial(context.Background(), "ws://refused/ws")
	if err == nil || CloseStatus(err) != -1 {
		t.Errorf("dial refused: %v (close status %d), want an error with no close code", err, CloseStatus(err))
	}

	js.Global().Get("FakeSocket").Set("last", js.Null())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := Dial(ctx, "ws://silent/ws"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("dial of a socket that never opens: %v, want the context's deadline", err)
	}
	if got := strs(last().Get("closeCalls")); len(got) != 1 {
		t.Errorf("close calls after the dial gave up: %q, want one", got)
	}
	// Let the fake's close event come, so its handlers are released.
	time.Sleep(10 * time.Millisecond)

	if _, err := Dial(context.Background(), "http://not-a-socket/"); err == nil {
		t.Error("a dial of an http URL succeeded")
	}
}

// Close waits for the close event; a code the browser refuses is an
// error, and the connection stays usable; a second Close is an error.
func TestClose(t *testing.T) {
	c := open(t)
	if err := c.Close(1009, "too big"); err == nil {
		t.Error("close with 1009 succeeded: a browser throws on it")
	}
	c2 := open(t)
	if err := c2.Close(4000, "bye"); err != nil {
		t.Fatalf("close: %v", err)
	}
	if rs := last().Get("readyState").Int(); rs != 3 {
		t.Errorf("readyState %d after Close returned, want 3 (closed)", rs)
	}
	if err := c2.Close(device.StatusNormalClosure, ""); err == nil {
		t.Error("a second close succeeded")
	}
	if _, _, err := c2.Read(context.Background()); !errors.Is(err, errClosedHere) || CloseStatus(err) != -1 {
		t.Errorf("read after close: %v, want the connection closed by this side", err)
	}
	// The connection whose close threw is still open, and closes.
	if err := c.Write(context.Background(), device.MessageText, []byte("still")); err != nil {
		t.Errorf("write after a refused close: %v", err)
	}
	if err := c.Close(device.StatusNormalClosure, ""); err != nil {
		t.Errorf("close after a refused close: %v", err)
	}
}

// A Read that waits is woken by a message that comes later, from the
// event loop, and by a close that comes later.
func TestReadWaits(t *testing.T) {
	c := open(t)
	js.Global().Call("eval", `setTimeout(() => FakeSocket.last.peerSend("late"), 5);
  setTimeout(() => FakeSocket.last.peerClose(4002, "end"), 20);`)
	ctx := context.Background()
	if _, b, err := c.Read(ctx); err != nil || string(b) != "late" {
		t.Fatalf("read: %q %v, want the message sent later", b, err)
	}
	if _, _, err := c.Read(ctx); CloseStatus(err) != 4002 {
		t.Fatalf("read: %v, want the close that came later", err)
	}
}

// Once this side has closed, a queued message is not read; a context
// already ended fails a Read that has a message queued; a negative limit
// is none; a close without a code (1005) has no code to read.
func TestEdges(t *testing.T) {
	ctx := context.Background()
	c := open(t)
	last().Call("peerSend", "queued")
	if err := c.Close(device.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(ctx); err == nil {
		t.Errorf("read after this side closed: %q, want an error", b)
	}

	c = open(t)
	last().Call("peerSend", "queued")
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, b, err := c.Read(done); !errors.Is(err, context.Canceled) {
		t.Errorf("read with an ended context: %q %v, want context.Canceled", b, err)
	}

	c = open(t)
	c.SetReadLimit(-1)
	last().Call("peerZeros", 1<<20)
	if _, b, err := c.Read(ctx); err != nil || len(b) != 1<<20 {
		t.Errorf("read with no limit: %d bytes, %v", len(b), err)
	}
	last().Call("peerClose", 1005, "")
	if _, _, err := c.Read(ctx); err == nil || CloseStatus(err) != -1 {
		t.Errorf("read after a close without a code: %v (status %d), want an error with none", err, CloseStatus(err))
	}
}

// A message over the limit is refused before its bytes come into Go's
// memory (a wasm program's memory never shrinks).
func TestTooBigNotCopied(t *testing.T) {
	c := open(t)
	const big = 16 << 20
	last().Call("peerZeros", big)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, _, err := c.Read(context.Background()); !errors.Is(err, ErrMessageTooBig) {
		t.Fatalf("read of %d bytes: %v, want ErrMessageTooBig", big, err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > big/4 {
		t.Errorf("refusing %d bytes allocated %d bytes in Go", big, grew)
	}
}

// Every listener is removed once the socket has closed (the js.Funcs
// released with them).
func TestListenersReleased(t *testing.T) {
	c := open(t)
	ws := last()
	if n := ws.Get("listeners").Int(); n != 3 {
		t.Errorf("%d listeners while open, want 3", n)
	}
	if err := c.Close(device.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if ws.Get("listeners").Int() == 0 {
			return
		}
	}
	t.Errorf("%d listeners left after the close", ws.Get("listeners").Int())
}
