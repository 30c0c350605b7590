//go:build !js

package device

import (
	"net/http"

	"github.com/coder/websocket"
)

func (w WebSocket) dialOptions() *websocket.DialOptions {
	opts := &websocket.DialOptions{HTTPClient: w.HTTPClient}
	if w.Origin != "" {
		opts.HTTPHeader = http.Header{"Origin": []string{w.Origin}}
	}
	return opts
}

// closeConn closes c with a normal closure (1000), the code a browser
// would use: the close handshake is bounded by the library (5 s to write
// the close frame, 5 s to hear the peer's).
func closeConn(c Conn, reason string) {
	c.Close(websocket.StatusNormalClosure, reason)
}
