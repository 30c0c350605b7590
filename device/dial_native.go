//go:build !js

package device

import (
	"net/http"

	"github.com/coder/websocket"
)

func dialOptions(cfg Config) *websocket.DialOptions {
	opts := &websocket.DialOptions{HTTPClient: cfg.HTTPClient}
	if cfg.Origin != "" {
		opts.HTTPHeader = http.Header{"Origin": []string{cfg.Origin}}
	}
	return opts
}

// closeConn closes ws with a normal closure (1000), the code a browser
// would use: the close handshake is bounded by the library (5 s to write
// the close frame, 5 s to hear the peer's).
func closeConn(ws *websocket.Conn, reason string) {
	ws.Close(websocket.StatusNormalClosure, reason)
}
