//go:build !js

package device

import (
	"net/http"

	"nhooyr.io/websocket"
)

func dialOptions(cfg Config) *websocket.DialOptions {
	opts := &websocket.DialOptions{HTTPClient: cfg.HTTPClient}
	if cfg.Origin != "" {
		opts.HTTPHeader = http.Header{"Origin": []string{cfg.Origin}}
	}
	return opts
}
