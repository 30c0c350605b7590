package device

import (
	"context"
	"errors"
)

// errNoTransport: a Config with neither a Transport nor (natively) a URL.
var errNoTransport = errors.New("device: Transport (or, natively, URL) is required")

// Transport opens connections to a coordinator. The runtime calls Dial
// once per connection attempt and reconnects through the same Transport.
// Natively WebSocket is the default; the page gives its own (wasm/socket,
// the browser's WebSocket); the package device/memtransport connects a
// runtime to a peer in the same process (tests, the simulator). Dial's
// ctx bounds the attempt only (Config.DialTimeout): the connection it
// returns outlives it.
type Transport interface {
	Dial(ctx context.Context) (Conn, error)
}

// Conn is one connection to a coordinator: ordered, reliable messages,
// each text (a control message) or binary (a frame). Its semantics are
// those of a websocket connection, and natively *websocket.Conn
// (github.com/coder/websocket) satisfies it (MessageType and StatusCode
// are then its types):
//
//   - Read returns the next message. A message longer than the read limit
//     (SetReadLimit; 32768 bytes until set) fails with an error wrapping
//     websocket.ErrMessageTooBig and closes the connection (natively with
//     websocket.StatusMessageTooBig; a browser lets a script close only
//     with 1000 or 3000-4999).
//   - Messages the peer wrote before it closed are read first; then Read
//     fails with an error from which the peer's close code can be read
//     (natively websocket.CloseStatus; -1 if the peer vanished without
//     one).
//   - A Read or Write whose ctx is done fails with an error wrapping ctx's
//     error, and closes the connection.
//   - Close closes the connection with a code and a reason (at most 123
//     bytes); Read and Write fail afterwards.
//
// Read is called by one goroutine at a time; Write, SetReadLimit and
// Close may be called concurrently with it.
type Conn interface {
	Read(ctx context.Context) (MessageType, []byte, error)
	Write(ctx context.Context, typ MessageType, p []byte) error
	SetReadLimit(n int64)
	Close(code StatusCode, reason string) error
}
