//go:build js && wasm

// Package socket is the page's device.Transport: a websocket connection
// over the browser's WebSocket (in the page's Worker, the relay of
// web/worker.js, which has the same interface), with the semantics
// device.Conn states.
//
// It is written here rather than taken from github.com/coder/websocket,
// whose browser half the device used before: that module imports net/http
// in every build (its dial options and response are net/http's types),
// and net/http with crypto/tls made 1.28 MB of the 10.40 MB app.wasm
// (0.32 MB of its gzip, 0.24 MB of its brotli), bytes every student
// downloads and every page compiles, for an HTTP client the page never
// uses (it fetches with the browser's fetch, wasm/jsw). What the page
// needs of a websocket is small: open, send, a queue of messages, close.
//
// Invariants:
//   - Event handlers run on the JavaScript event loop and never block:
//     they append to the queue or record the close under a mutex held
//     for a few lines, and wake the reader through a channel of one. No
//     call into JavaScript is made with the mutex held.
//   - Messages that arrived before the peer's close are read before the
//     close's error. Once this side has closed (Close, or a failed read:
//     too big, a context ended), Read fails and nothing more is read.
//   - The read limit applies when a message is read, not when it arrives
//     (a welcome raises it for the frames that follow at once), and a
//     message is queued as the JavaScript value the browser made: its
//     bytes come into Go's memory, which a wasm program never gives back,
//     only once they are within the limit.
//   - Every js.Func is released once the socket has closed.
package socket

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall/js"
	"time"

	"browserfl/device"
	"browserfl/wasm/jsw"
)

// ErrMessageTooBig wraps the error of a Read whose message is longer than
// the read limit.
var ErrMessageTooBig = errors.New("socket: message too big")

// errClosedHere is Read's error once this side has closed the connection.
var errClosedHere = errors.New("socket: the connection was closed by this side")

// CloseError is Read's error once the peer closed the connection.
type CloseError struct {
	Code   device.StatusCode
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("socket: closed with %d %q", e.Code, e.Reason)
}

// CloseStatus returns the close code in err's chain, or -1 if there is
// none (the connection was lost without a close frame: 1005 or 1006, or
// closed by this side).
func CloseStatus(err error) device.StatusCode {
	var ce *CloseError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return -1
}

// defaultReadLimit is the read limit until SetReadLimit (device.Conn).
const defaultReadLimit = 32768

// closeWait bounds how long Close waits for the browser's close event.
const closeWait = 5 * time.Second

// Transport dials URL with the browser's WebSocket.
type Transport struct {
	URL string
}

// Dial implements device.Transport.
func (t Transport) Dial(ctx context.Context) (device.Conn, error) {
	c, err := Dial(ctx, t.URL)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// message is one message received and not yet read: a text's string or a
// binary message's ArrayBuffer, as the browser gave it.
type message struct {
	typ  device.MessageType
	data js.Value
}

// Conn is one websocket connection (device.Conn).
type Conn struct {
	ws      js.Value
	release []func()

	mu     sync.Mutex
	queue  []message
	limit  int64 // negative: none
	opened bool
	closed bool  // the close event came
	err    error // Read's error once the queue is empty
	wake   chan struct{}
	done   chan struct{} // closed with closed
	local  bool          // this side closed (Close, or a failed read)
}

// Dial opens a websocket to url and waits until it is open, ctx ends or
// it fails.
func Dial(ctx context.Context, url string) (*Conn, error) {
	c := &Conn{limit: defaultReadLimit, wake: make(chan struct{}, 1), done: make(chan struct{})}
	ws, err := jsw.Try(func() js.Value { return js.Global().Get("WebSocket").New(url) })
	if err != nil {
		return nil, fmt.Errorf("socket: dial %s: %w", url, err)
	}
	c.ws = ws
	ws.Set("binaryType", "arraybuffer")
	c.release = []func(){
		jsw.Listen(ws, "open", func(js.Value) { c.note(func() { c.opened = true }) }),
		jsw.Listen(ws, "message", c.onMessage),
		jsw.Listen(ws, "close", c.onClose),
	}
	for {
		c.mu.Lock()
		opened, closed, cerr := c.opened, c.closed, c.err
		c.mu.Unlock()
		switch {
		case closed:
			return nil, fmt.Errorf("socket: dial %s: %w", url, cerr)
		case opened:
			return c, nil
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			c.fail(ctx.Err())
			return nil, fmt.Errorf("socket: dial %s: %w", url, ctx.Err())
		}
	}
}

// note runs f under the lock and wakes the reader.
func (c *Conn) note(f func()) {
	c.mu.Lock()
	f()
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// onMessage queues a message (an event handler: it must not block). A
// message that comes after this side closed is dropped.
func (c *Conn) onMessage(ev js.Value) {
	data := ev.Get("data")
	m := message{typ: device.MessageBinary, data: data}
	switch {
	case data.Type() == js.TypeString:
		m.typ = device.MessageText
	case data.InstanceOf(js.Global().Get("ArrayBuffer")):
	default:
		c.fail(errors.New("socket: a message of neither text nor bytes"))
		return
	}
	c.note(func() {
		if c.err == nil && !c.local {
			c.queue = append(c.queue, m)
		}
	})
}

// fail ends the connection from this side with err: Read returns it from
// now on (the messages still queued are dropped), and the socket is
// closed (1000: a browser lets a script send no other code below 3000).
// An event handler may call it.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.queue = nil
	first := !c.local
	c.local = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	if first {
		jsw.Call(c.ws, "close", int(device.StatusNormalClosure), "")
	}
}

// onClose records the close (an event handler).
func (c *Conn) onClose(ev js.Value) {
	code := ev.Get("code").Int()
	reason := ev.Get("reason").String()
	c.note(func() {
		if c.closed {
			return
		}
		c.closed = true
		if c.err == nil {
			if code == 1006 || code == 1005 {
				c.err = fmt.Errorf("socket: connection lost (%d)", code)
			} else {
				c.err = &CloseError{Code: device.StatusCode(code), Reason: reason}
			}
		}
		close(c.done)
	})
	// Released after the handler returns: a js.Func may not be released
	// while it runs.
	go func() {
		for _, r := range c.release {
			r()
		}
	}()
}

// Read implements device.Conn. It blocks.
func (c *Conn) Read(ctx context.Context) (device.MessageType, []byte, error) {
	for {
		if err := ctx.Err(); err != nil {
			err = fmt.Errorf("socket: read: %w", err)
			c.fail(err)
			return 0, nil, err
		}
		c.mu.Lock()
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue[0] = message{}
			c.queue = c.queue[1:]
			// The limit read now, as the reader set it after the
			// messages before.
			limit := c.limit
			c.mu.Unlock()
			b, err := c.bytes(m, limit)
			if err != nil {
				c.fail(err)
				return 0, nil, err
			}
			return m.typ, b, nil
		}
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return 0, nil, err
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
		}
	}
}

// bytes copies message m into Go's memory if it is within limit
// (negative: none).
func (c *Conn) bytes(m message, limit int64) ([]byte, error) {
	over := func(n int) error {
		return fmt.Errorf("socket: a message of %d bytes, over the read limit of %d: %w", n, limit, ErrMessageTooBig)
	}
	if m.typ == device.MessageText {
		// A string's length counts UTF-16 units; its UTF-8 form is
		// never shorter, so a string longer than the limit is refused
		// before it is copied.
		// (A String object for its length: a primitive has no
		// properties in syscall/js.)
		if n := js.Global().Get("String").New(m.data).Get("length").Int(); limit >= 0 && int64(n) > limit {
			return nil, over(n)
		}
		b := []byte(m.data.String())
		if limit >= 0 && int64(len(b)) > limit {
			return nil, over(len(b))
		}
		return b, nil
	}
	n := m.data.Get("byteLength").Int()
	if limit >= 0 && int64(n) > limit {
		return nil, over(n)
	}
	return jsw.Bytes(m.data)
}

// Write implements device.Conn: the browser queues the message and sends
// it in order. It never waits for the event loop.
func (c *Conn) Write(ctx context.Context, typ device.MessageType, p []byte) error {
	if err := ctx.Err(); err != nil {
		err = fmt.Errorf("socket: write: %w", err)
		c.fail(err)
		return err
	}
	c.mu.Lock()
	gone := c.closed || c.local
	c.mu.Unlock()
	if gone {
		return errors.New("socket: write: the connection is closed")
	}
	var data any
	switch typ {
	case device.MessageText:
		data = string(p)
	case device.MessageBinary:
		data = jsw.Uint8Array(p)
	default:
		return fmt.Errorf("socket: write: message type %d", typ)
	}
	if _, err := jsw.Call(c.ws, "send", data); err != nil {
		return fmt.Errorf("socket: write: %w", err)
	}
	return nil
}

// SetReadLimit implements device.Conn (negative: no limit).
func (c *Conn) SetReadLimit(n int64) {
	c.mu.Lock()
	c.limit = n
	c.mu.Unlock()
}

// Close implements device.Conn: it closes with code and reason (the
// browser throws on a code other than 1000 or 3000-4999, an error here,
// and the connection stays open), and waits for the browser's close
// event, at most closeWait. It must not be called from an event handler
// (the close event could not come while it waits): device's closeConn
// calls it on a goroutine of its own.
func (c *Conn) Close(code device.StatusCode, reason string) error {
	c.mu.Lock()
	again := c.local || c.closed
	c.mu.Unlock()
	if again {
		return errors.New("socket: close: already closed")
	}
	if _, err := jsw.Call(c.ws, "close", int(code), reason); err != nil {
		return fmt.Errorf("socket: close: %w", err)
	}
	c.mu.Lock()
	if c.err == nil {
		c.err = errClosedHere
	}
	c.queue = nil
	c.local = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-c.done:
		return nil
	case <-t.C:
		return errors.New("socket: close: no close event within 5 s")
	}
}
