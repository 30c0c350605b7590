//go:build js

package device

import "nhooyr.io/websocket"

// dialOptions: in the browser the page's origin is sent by the browser
// itself and Config.Origin and HTTPClient do not apply.
func dialOptions(Config) *websocket.DialOptions { return &websocket.DialOptions{} }
