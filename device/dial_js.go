//go:build js

package device

import "errors"

// MessageType is the type of a message: text (a control message) or
// binary (a frame), with the values of github.com/coder/websocket, which
// the page does not link (with it came net/http and crypto/tls, 1.28 MB
// of app.wasm: wasm/socket).
type MessageType int

// StatusCode is a websocket close code.
type StatusCode int

// The message types and the close code the runtime uses.
const (
	MessageText         MessageType = 1
	MessageBinary       MessageType = 2
	StatusNormalClosure StatusCode  = 1000
)

// defaultTransport is the Transport of a Config that sets none: in the
// browser the page gives it (wasm/socket, over the browser's WebSocket).
func defaultTransport(Config) (Transport, error) {
	return nil, errors.Join(errNoTransport, errors.New("in the browser the page gives the Transport"))
}

// closeConn closes c with a normal closure. A browser accepts only 1000
// and 3000-4999 from a script and throws on any other code, leaving the
// socket open. The close handshake waits for the browser's close event,
// so it runs on its own goroutine: the caller may be an event handler,
// or hold no time to wait.
func closeConn(c Conn, reason string) {
	go c.Close(StatusNormalClosure, reason)
}
