//go:build js

package device

import "github.com/coder/websocket"

// dialOptions: in the browser the page's origin is sent by the browser
// itself and Origin and HTTPClient do not apply.
func (WebSocket) dialOptions() *websocket.DialOptions { return &websocket.DialOptions{} }

// closeConn closes c with a normal closure. A browser accepts only 1000
// and 3000-4999 from a script and throws on any other code, leaving the
// socket open (websocket.Conn.CloseNow uses 1001 there). The close
// handshake waits for the browser's close event, so it runs on its own
// goroutine: the caller may be an event handler, or hold no time to wait.
func closeConn(c Conn, reason string) {
	go c.Close(websocket.StatusNormalClosure, reason)
}
