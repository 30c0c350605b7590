package wsconn

import (
	"bytes"
	"log/slog"
	"sync/atomic"

	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/shared/wire"
)

// Front is the device-facing half every process that holds device
// websockets shares: the limits, the gate (join-code backoff,
// registration rates, pre-hello caps, pings), the counters and the
// websocket machinery of conn.go. What happens to a device's hello,
// updates and questions is its handler's business: the Coordinator
// decides them itself, an Edge forwards them to the session process and
// pre-aggregates updates.
type Front struct {
	Lim     Limits
	Met     *metrics.Metrics
	Gate    *gate.State
	Log     *slog.Logger
	Origins []string // websocket Origin patterns besides the request's own host
	H       Handler
	// Bufs holds the read buffers of frames (readFrame).
	Bufs *FreeList[*bytes.Buffer]
	// secAggMax is the largest secure aggregation frame of the session
	// (SetSecAggMax; 0 without secure aggregation).
	secAggMax atomic.Int64
}

// SetSecAggMax raises the frame limit of every connection accepted from
// now on to n bytes (wire.SecAggFrameMax of the session's cohort) if
// Lim.MaxFrameBytes is below it; the caller raises the connections it
// already holds (Conn.RaiseReadLimit).
func (c *Front) SetSecAggMax(n int) { c.secAggMax.Store(int64(n)) }

// FrameMax is the largest frame the front reads: Lim.MaxFrameBytes, or
// the session's largest secure aggregation frame if that is larger.
func (c *Front) FrameMax() int { return max(c.Lim.MaxFrameBytes, int(c.secAggMax.Load())) }

// Handler is what a front calls for an admitted connection's traffic. The
// front has already applied the per-connection rate, the frame limits and
// decoding; the handler validates what the frames mean.
type Handler interface {
	// CheckHello applies the gate to a hello (join code with its
	// per-address backoff, registration rate) before admit.
	CheckHello(cn *Conn, h wire.Hello) error
	// Admit authenticates the hello, binds the device to cn and queues
	// the welcome as cn's first frame.
	Admit(cn *Conn, h wire.Hello) error
	// AcceptUpdate takes an update frame of cn's device.
	AcceptUpdate(cn *Conn, u wire.UpdateFrame, frameLen int) error
	// AcceptSecAgg takes a secure aggregation frame of cn's device
	// (decoded: wire.DecodeSecAggToCoordinator).
	AcceptSecAgg(cn *Conn, f wire.SecAggFrame, frameLen int) error
	// Status answers cn's status query for round t.
	Status(cn *Conn, t int) error
	// Leave handles cn's Leave message.
	Leave(cn *Conn, l wire.Leave)
	// Disconnected unbinds cn after its reader ended.
	Disconnected(cn *Conn)
	// EvictInactive bounds the devices kept without a connection.
	EvictInactive()
}
