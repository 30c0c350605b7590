//go:build !js

// Package memtransport is an in-memory device.Transport: a device runtime
// connects to a peer in the same process (tests, the simulator) without a
// socket. A connection keeps the semantics of a websocket connection
// (github.com/coder/websocket) that the runtime and a coordinator rely on
// (device.Conn), and is no kinder than one:
//
//   - Read limit: 32768 bytes until SetReadLimit. A longer message fails
//     the read with an error wrapping websocket.ErrMessageTooBig and closes
//     the connection with websocket.StatusMessageTooBig and the library's
//     reason ("read limited at N+1 bytes").
//   - Close codes: the peer reads the messages written before a Close,
//     then an error wrapping websocket.CloseError with the code and reason
//     (websocket.CloseStatus reads it). A connection closed without a
//     close frame (CloseNow, a done context) gives the peer an error
//     wrapping io.EOF, whose CloseStatus is -1, as a dropped socket does.
//   - Context: a Read or Write whose context is done (already, or while it
//     waits) fails with an error wrapping the context's error and closes
//     the connection without a close frame, as coder/websocket does.
//   - Back-pressure: a Write waits while the peer holds QueueLen unread
//     messages (a socket's buffers are bounded too).
//   - After Close, Read and Write fail with an error wrapping
//     net.ErrClosed; so does a Write once the peer has closed.
//
// The tests check each of these against a real websocket pair.
package memtransport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/coder/websocket"

	"browserfl/device"
)

// QueueLen is how many unread messages one end of a connection holds
// before a Write to it waits.
const QueueLen = 64

// defaultReadLimit is coder/websocket's default read limit.
const defaultReadLimit = 32768

// maxCloseReason is the longest close reason a close frame carries.
const maxCloseReason = 123

// errNoCloseFrame is what the peer of a connection closed without a close
// frame reads.
var errNoCloseFrame = fmt.Errorf("connection closed without a close frame: %w", io.EOF)

type message struct {
	typ  websocket.MessageType
	data []byte
}

// link is the state both ends of a connection share.
type link struct {
	mu sync.Mutex
	// changed is closed and replaced on every change of state: a waiting
	// Read or Write takes it under mu and waits for it after unlocking.
	changed chan struct{}
	ends    [2]end
}

// end is the state of one end of a connection.
type end struct {
	in     []message // written by the peer, not read yet
	limit  int64     // the read limit (-1: none)
	closed bool      // this end is closed: its reads and writes fail
	// peerErr is set when the peer closed: what reads return once in is
	// drained (a websocket.CloseError, or errNoCloseFrame).
	peerErr error
}

func (l *link) changedLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Conn is one end of an in-memory connection. It implements device.Conn,
// and CloseNow like *websocket.Conn. Its methods may be called
// concurrently, except Read with Read.
type Conn struct {
	l  *link
	me int // 0 or 1: this end's index in l.ends
}

var _ device.Conn = (*Conn)(nil)

// Pipe returns the two ends of a new connection.
func Pipe() (*Conn, *Conn) {
	l := &link{changed: make(chan struct{})}
	l.ends[0].limit, l.ends[1].limit = defaultReadLimit, defaultReadLimit
	return &Conn{l: l, me: 0}, &Conn{l: l, me: 1}
}

// Read returns the next message.
func (c *Conn) Read(ctx context.Context) (websocket.MessageType, []byte, error) {
	l := c.l
	for {
		if err := ctx.Err(); err != nil {
			c.CloseNow()
			return 0, nil, fmt.Errorf("memtransport: read: %w", err)
		}
		l.mu.Lock()
		e := &l.ends[c.me]
		switch {
		case e.closed:
			l.mu.Unlock()
			return 0, nil, fmt.Errorf("memtransport: read: %w", net.ErrClosed)
		case len(e.in) > 0:
			m := e.in[0]
			e.in[0] = message{}
			e.in = e.in[1:]
			if e.limit >= 0 && int64(len(m.data)) > e.limit {
				reason := fmt.Sprintf("read limited at %d bytes", e.limit+1)
				c.closeLocked(websocket.CloseError{Code: websocket.StatusMessageTooBig, Reason: reason})
				l.mu.Unlock()
				return 0, nil, fmt.Errorf("memtransport: read: %w: %s", websocket.ErrMessageTooBig, reason)
			}
			l.changedLocked() // room for the peer's writes
			l.mu.Unlock()
			return m.typ, m.data, nil
		case e.peerErr != nil:
			err := e.peerErr
			l.mu.Unlock()
			return 0, nil, fmt.Errorf("memtransport: read: %w", err)
		}
		wait := l.changed
		l.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
		}
	}
}

// Write sends a message of type typ (websocket.MessageText or
// websocket.MessageBinary); p may be reused once Write returns.
func (c *Conn) Write(ctx context.Context, typ websocket.MessageType, p []byte) error {
	if typ != websocket.MessageText && typ != websocket.MessageBinary {
		return fmt.Errorf("memtransport: write: unknown message type %v", typ)
	}
	m := message{typ: typ, data: bytes.Clone(p)}
	if m.data == nil {
		m.data = []byte{}
	}
	l := c.l
	for {
		if err := ctx.Err(); err != nil {
			c.CloseNow()
			return fmt.Errorf("memtransport: write: %w", err)
		}
		l.mu.Lock()
		e, peer := &l.ends[c.me], &l.ends[1-c.me]
		if e.closed || e.peerErr != nil {
			l.mu.Unlock()
			return fmt.Errorf("memtransport: write: %w", net.ErrClosed)
		}
		if len(peer.in) < QueueLen {
			peer.in = append(peer.in, m)
			l.changedLocked()
			l.mu.Unlock()
			return nil
		}
		wait := l.changed
		l.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
		}
	}
}

// SetReadLimit sets the largest message Read accepts (-1: no limit).
func (c *Conn) SetReadLimit(n int64) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.l.ends[c.me].limit = max(n, -1)
}

// Close closes the connection with code and reason: the peer reads them
// after the messages written before. A reason longer than a close frame
// carries closes the connection without one and returns an error. Later
// calls return an error wrapping net.ErrClosed.
func (c *Conn) Close(code websocket.StatusCode, reason string) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.l.ends[c.me].closed {
		return fmt.Errorf("memtransport: close: %w", net.ErrClosed)
	}
	if len(reason) > maxCloseReason {
		c.closeLocked(errNoCloseFrame)
		return fmt.Errorf("memtransport: close: reason of %d bytes, at most %d", len(reason), maxCloseReason)
	}
	c.closeLocked(websocket.CloseError{Code: code, Reason: reason})
	return nil
}

// CloseNow closes the connection without a close frame (the peer reads
// an error wrapping io.EOF).
func (c *Conn) CloseNow() error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.l.ends[c.me].closed {
		return fmt.Errorf("memtransport: close: %w", net.ErrClosed)
	}
	c.closeLocked(errNoCloseFrame)
	return nil
}

// closeLocked closes this end; the peer reads cause once it has read what
// was written before. Call with l.mu held.
func (c *Conn) closeLocked(cause error) {
	e, peer := &c.l.ends[c.me], &c.l.ends[1-c.me]
	e.closed, e.in = true, nil
	if peer.peerErr == nil {
		peer.peerErr = cause
	}
	c.l.changedLocked()
}

// Listener is a device.Transport whose connections a peer in the same
// process accepts: each Dial makes a Pipe, hands one end to Accept and
// returns the other.
type Listener struct {
	conns     chan *Conn
	done      chan struct{}
	closeOnce sync.Once
}

var _ device.Transport = (*Listener)(nil)

// NewListener returns a Listener; Close it when done.
func NewListener() *Listener {
	return &Listener{conns: make(chan *Conn), done: make(chan struct{})}
}

// ErrListenerClosed is wrapped by the errors of Dial and Accept on a
// closed Listener.
var ErrListenerClosed = errors.New("memtransport: listener closed")

// Dial implements device.Transport. It waits until Accept takes the
// connection, ctx is done or the Listener is closed.
func (l *Listener) Dial(ctx context.Context) (device.Conn, error) {
	a, b := Pipe()
	select {
	case l.conns <- b:
		return a, nil
	case <-l.done:
		return nil, fmt.Errorf("memtransport: dial: %w", ErrListenerClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("memtransport: dial: %w", ctx.Err())
	}
}

// Accept returns the peer's end of the next connection dialled.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, fmt.Errorf("memtransport: accept: %w", ErrListenerClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("memtransport: accept: %w", ctx.Err())
	}
}

// Close makes later Dial and Accept calls fail; connections already made
// stay open.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}
