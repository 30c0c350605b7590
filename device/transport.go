package device

import (
	"context"
	"net/http"

	"github.com/coder/websocket"
)

// Transport opens connections to a coordinator. The runtime calls Dial
// once per connection attempt and reconnects through the same Transport.
// WebSocket is the default (the browser and the native devices); the
// package device/memtransport connects a runtime to a peer in the same
// process (tests, the simulator).
type Transport interface {
	Dial(ctx context.Context) (Conn, error)
}

// Conn is one connection to a coordinator: ordered, reliable messages,
// each text (a control message) or binary (a frame). Its semantics are
// those of a websocket connection, and *websocket.Conn
// (github.com/coder/websocket) satisfies it:
//
//   - Read returns the next message. A message longer than the read limit
//     (SetReadLimit; 32768 bytes until set) fails with an error wrapping
//     websocket.ErrMessageTooBig and closes the connection with
//     websocket.StatusMessageTooBig.
//   - Messages the peer wrote before it closed are read first; then Read
//     fails with an error from which websocket.CloseStatus reads the
//     peer's close code (-1 if the peer vanished without one).
//   - A Read or Write whose ctx is done fails with an error wrapping ctx's
//     error, and closes the connection.
//   - Close closes the connection with a code and a reason (at most 123
//     bytes); Read and Write fail afterwards.
//
// Read is called by one goroutine at a time; Write, SetReadLimit and
// Close may be called concurrently with it.
type Conn interface {
	Read(ctx context.Context) (websocket.MessageType, []byte, error)
	Write(ctx context.Context, typ websocket.MessageType, p []byte) error
	SetReadLimit(n int64)
	Close(code websocket.StatusCode, reason string) error
}

// WebSocket is the websocket Transport (github.com/coder/websocket, which
// runs natively and in the browser): the default, built from Config.URL,
// Config.Origin and Config.HTTPClient.
type WebSocket struct {
	// URL is the coordinator's websocket URL, e.g. ws://localhost:8080/ws.
	URL string
	// Origin, if set, is sent as the Origin header (native only: in the
	// browser the page's origin is sent by the browser itself).
	Origin string
	// HTTPClient is used to dial (default http.DefaultClient; ignored in
	// the browser).
	HTTPClient *http.Client
}

// Dial implements Transport.
func (w WebSocket) Dial(ctx context.Context) (Conn, error) {
	ws, _, err := websocket.Dial(ctx, w.URL, w.dialOptions())
	if err != nil {
		return nil, err
	}
	return ws, nil
}
