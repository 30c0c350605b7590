package coordinator

import (
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// Link is a device's connection as the round logic sees it: a websocket
// this process holds (*wsconn.Conn), or one an edge process holds for it
// (a session node's remote link, coordinator/sessionnode). Every method is
// safe to call under the coordinator's lock: none blocks on the device.
type Link interface {
	DeviceID() string
	SetDeviceID(id string)
	// Send queues a frame (round frames are binary); it reports false if
	// the connection is closing or cannot keep up.
	Send(f wsconn.OutFrame) bool
	// SendRound queues round f.round's frame (f.data, or f.short where the
	// device holds x_{t-1}) and returns the bytes queued, 0 if it could not.
	SendRound(f wsconn.OutFrame) int
	// SendControl queues a control message.
	SendControl(m wire.Message) bool
	// CloseWith sends an error message and closes the connection.
	CloseWith(code, reason string)
}

// control sends m on l if the device has a connection.
func control(l Link, m wire.Message) {
	if l != nil {
		l.SendControl(m)
	}
}
