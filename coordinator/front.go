package coordinator

import (
	"bytes"
	"log/slog"

	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/shared/wire"
)

// front is the device-facing half every process that holds device
// websockets shares: the limits, the gate (join-code backoff,
// registration rates, pre-hello caps, pings), the counters and the
// websocket machinery of conn.go. What happens to a device's hello,
// updates and questions is its handler's business: the Coordinator
// decides them itself, an Edge forwards them to the session process and
// pre-aggregates updates.
type front struct {
	lim     Limits
	met     *metrics.Metrics
	gate    *gate.State
	log     *slog.Logger
	origins []string // websocket Origin patterns besides the request's own host
	h       handler
	// bufs holds the read buffers of frames (readFrame).
	bufs *freeList[*bytes.Buffer]
}

// handler is what a front calls for an admitted connection's traffic. The
// front has already applied the per-connection rate, the frame limits and
// decoding; the handler validates what the frames mean.
type handler interface {
	// checkHello applies the gate to a hello (join code with its
	// per-address backoff, registration rate) before admit.
	checkHello(cn *conn, h wire.Hello) error
	// admit authenticates the hello, binds the device to cn and queues
	// the welcome as cn's first frame.
	admit(cn *conn, h wire.Hello) error
	// acceptUpdate takes an update frame of cn's device.
	acceptUpdate(cn *conn, u wire.UpdateFrame, frameLen int) error
	// status answers cn's status query for round t.
	status(cn *conn, t int) error
	// leave handles cn's Leave message.
	leave(cn *conn, l wire.Leave)
	// disconnected unbinds cn after its reader ended.
	disconnected(cn *conn)
	// evictInactive bounds the devices kept without a connection.
	evictInactive()
}

// link is a device's connection as the round logic sees it: a websocket
// this process holds (*conn), or one an edge process holds for it
// (*remoteLink, cluster.go). Every method is safe to call under the
// coordinator's lock: none blocks on the device.
type link interface {
	deviceID() string
	setDeviceID(id string)
	// send queues a frame (round frames are binary); it reports false if
	// the connection is closing or cannot keep up.
	send(f outFrame) bool
	// sendRound queues round f.round's frame (f.data, or f.short where the
	// device holds x_{t-1}) and returns the bytes queued, 0 if it could not.
	sendRound(f outFrame) int
	// sendControl queues a control message.
	sendControl(m wire.Message) bool
	// closeWith sends an error message and closes the connection.
	closeWith(code, reason string)
}

// control sends m on l if the device has a connection.
func control(l link, m wire.Message) {
	if l != nil {
		l.sendControl(m)
	}
}
