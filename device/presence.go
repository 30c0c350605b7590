package device

import (
	"context"
	"fmt"
	"sync"
	"time"

	"browserfl/shared/wire"
)

// presence is whether and where the device takes part: its current
// connection and, once it leaves, why. Its lock is never held across
// anything that waits for the browser's event loop (storage, a close
// handshake): Leave may be called from a page's event handler, which
// must not block. Only write sends on the current connection while it
// is held, so that nothing follows a Leave on the wire.
type presence struct {
	mu      sync.Mutex
	ws      Conn          // the open connection, nil between connections
	leaving string        // the Leave reason once the device leaves
	detail  string        // the Leave detail (why, in words), if any
	left    chan struct{} // closed when the device leaves
}

func newPresence() *presence { return &presence{left: make(chan struct{})} }

// leave records that the device leaves for reason and, if a connection
// is open, sends wire.Leave on it and closes it without waiting for the
// close handshake (Runtime.Leave). Later calls do nothing.
func (p *presence) leave(reason string) {
	p.mu.Lock()
	ws := p.ws
	first := p.setLeavingLocked(reason)
	if first && ws != nil {
		p.sendLeaveLocked(ws)
	}
	p.mu.Unlock()
	if first && ws != nil {
		go closeConn(ws, "device left")
	}
}

// reason returns the reason the device left, or "" while it takes part.
func (p *presence) reason() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leaving
}

// leaveOn records that the device leaves for reason, with detail for
// wire.Leave, and tells the coordinator on ws (the caller closes ws).
func (p *presence) leaveOn(ws Conn, reason, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.setLeavingLocked(reason) {
		p.detail = detail
		p.sendLeaveLocked(ws)
	}
}

func (p *presence) setLeavingLocked(reason string) bool {
	if p.leaving != "" {
		return false
	}
	if reason != wire.LeaveDone {
		reason = wire.LeaveStopped
	}
	p.leaving = reason
	close(p.left)
	return true
}

// sendLeaveLocked writes the Leave message (best effort: the close that
// follows ends the connection either way). Call with mu held.
func (p *presence) sendLeaveLocked(ws Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = writeControl(ctx, ws, wire.Leave{Reason: p.leaving, Detail: p.detail})
}

// attach makes ws the current connection unless the device has left.
func (p *presence) attach(ws Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leaving != "" {
		return false
	}
	p.ws = ws
	return true
}

// detach forgets ws and closes it.
func (p *presence) detach(ws Conn) {
	p.mu.Lock()
	if p.ws == ws {
		p.ws = nil
	}
	p.mu.Unlock()
	closeConn(ws, "")
}

// write sends the binary message b on ws unless the device has left
// (ErrLeft): a release never follows a Leave on the wire. A device that
// left before sending keeps its pending round and learns on a later
// hello that it was excluded. what names the message in an error.
func (p *presence) write(ctx context.Context, ws Conn, b []byte, what string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leaving != "" {
		return ErrLeft
	}
	if err := ws.Write(ctx, MessageBinary, b); err != nil {
		return fmt.Errorf("device: send %s: %w", what, err)
	}
	return nil
}
