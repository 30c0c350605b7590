//go:build !js

package device

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/coder/websocket"
)

// MessageType and StatusCode are, natively, those of
// github.com/coder/websocket, so that *websocket.Conn is a Conn.
type (
	MessageType = websocket.MessageType
	StatusCode  = websocket.StatusCode
)

// The message types and the close code the runtime uses.
const (
	MessageText         = websocket.MessageText
	MessageBinary       = websocket.MessageBinary
	StatusNormalClosure = websocket.StatusNormalClosure
)

// WebSocket is the native websocket Transport
// (github.com/coder/websocket): the default, built from Config.URL and
// Config.Origin.
type WebSocket struct {
	// URL is the coordinator's websocket URL, e.g. ws://localhost:8080/ws.
	URL string
	// Origin, if set, is sent as the Origin header.
	Origin string
	// HTTPClient is used to dial (default http.DefaultClient).
	HTTPClient *http.Client
}

// Dial implements Transport.
func (w WebSocket) Dial(ctx context.Context) (Conn, error) {
	opts := &websocket.DialOptions{HTTPClient: w.HTTPClient}
	if w.Origin != "" {
		opts.HTTPHeader = http.Header{"Origin": []string{w.Origin}}
	}
	ws, resp, err := websocket.Dial(ctx, w.URL, opts)
	if err != nil {
		if resp != nil && answeredForGood(resp.StatusCode) {
			// A refusal that trying again cannot change: no websocket
			// at this address, or one that refuses this device's
			// Origin. The library keeps the first 1,024 bytes of the body.
			var why []byte
			if resp.Body != nil {
				why, _ = io.ReadAll(resp.Body)
			}
			hint := "check -url: the coordinator's address, ending in /ws"
			if resp.StatusCode == http.StatusForbidden {
				hint = "if it checks where devices come from, give the page's address with -origin"
			}
			return nil, fmt.Errorf("%w: the server answered %d %s (%s); %s", errAnswered, resp.StatusCode,
				http.StatusText(resp.StatusCode), strings.TrimSpace(string(why)), hint)
		}
		return nil, err
	}
	return ws, nil
}

// answeredForGood reports whether an HTTP status in answer to the
// websocket handshake says that no coordinator's websocket is at this
// address (errAnswered): an answer that is not an upgrade and not an
// error of the moment (a 2xx page, a 3xx, or a 4xx other than 408, 421,
// 425 and 429). 5xx answers (a coordinator that is full, a proxy whose
// coordinator is restarting) are tried again.
func answeredForGood(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusMisdirectedRequest, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	switch {
	case code >= 200 && code < 500:
		return code != http.StatusSwitchingProtocols
	}
	return false
}

// defaultTransport is the Transport of a Config that sets none.
func defaultTransport(cfg Config) (Transport, error) {
	if cfg.URL == "" {
		return nil, errNoTransport
	}
	return WebSocket{URL: cfg.URL, Origin: cfg.Origin}, nil
}

// closeConn closes c with a normal closure (1000), the code a browser
// would use: the close handshake is bounded by the library (5 s to write
// the close frame, 5 s to hear the peer's).
func closeConn(c Conn, reason string) {
	c.Close(StatusNormalClosure, reason)
}
