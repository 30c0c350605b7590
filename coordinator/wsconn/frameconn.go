package wsconn

import (
	"net"
	"sync"
	"sync/atomic"
)

// FrameConn is the network connection the websocket library writes a
// device's frames to. The library writes a frame's header into its
// buffer (wsBufferSize bytes) and then the payload through the same
// buffer, so a frame longer than the buffer reaches the connection as
// two writes: the full buffer (the header and the payload's first
// bytes) and the rest of the payload. Each write is a system call, and
// on loopback each also runs the receiving side's TCP processing on the
// sender's CPU. While armed (conn.write arms it around a long frame),
// FrameConn holds a write of exactly the buffer's size and sends it
// together with the next write in one writev: one system call per round
// frame instead of two (docs/coordinator.md, "CPU against a plain
// websocket server").
//
// Every other write passes straight through. Writes arrive one at a
// time (the library writes whole frames under its own lock); mu orders
// them with disarm, which sends whatever is still held, so the bytes
// always go out in the order they were written.
type FrameConn struct {
	net.Conn
	armed atomic.Bool
	mu    sync.Mutex
	held  []byte // a write held back while armed (a copy in buf), nil if none
	buf   [wsBufferSize]byte
	// writev sends bufs in one system call where the connection allows
	// it (net.Buffers.WriteTo; a TLS connection writes them in turn);
	// the tests replace it to see the calls.
	writev func(c net.Conn, bufs *net.Buffers) (int64, error)
}

func newFrameConn(c net.Conn) *FrameConn {
	return &FrameConn{Conn: c, writev: func(c net.Conn, bufs *net.Buffers) (int64, error) { return bufs.WriteTo(c) }}
}

// Write implements io.Writer for the library's buffer.
func (fc *FrameConn) Write(b []byte) (int, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.held != nil {
		h := len(fc.held)
		bufs := net.Buffers{fc.held, b}
		fc.held = nil
		n, err := fc.writev(fc.Conn, &bufs)
		return max(0, int(n)-h), err
	}
	if len(b) == wsBufferSize && fc.armed.Load() {
		fc.held = fc.buf[:copy(fc.buf[:], b)]
		return len(b), nil
	}
	return fc.Conn.Write(b)
}

// arm makes the next write of the buffer's size wait for the one after
// it.
func (fc *FrameConn) arm() { fc.armed.Store(true) }

// disarm ends what arm started and sends a write still held (a frame
// that ended on the buffer's boundary).
func (fc *FrameConn) disarm() error {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.armed.Store(false)
	if fc.held == nil {
		return nil
	}
	b := fc.held
	fc.held = nil
	_, err := fc.Conn.Write(b)
	return err
}
