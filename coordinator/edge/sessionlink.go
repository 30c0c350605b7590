package edge

import (
	"log/slog"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"browserfl/coordinator/bus"
)

// sessionLink is the edge's side of the cluster bus: it publishes
// envelopes to the session process on the edge's subject
// (<Prefix>.up.<ID>), stamped with the edge's instance, and counts the
// bus's traffic and errors for /metrics (Run counts the bytes received).
// Publishing takes no lock of the edge.
type sessionLink struct {
	nc       *nats.Conn
	subject  string
	instance uint64
	log      *slog.Logger

	errors   atomic.Int64 // envelopes that failed to decode or publish
	outBytes atomic.Int64
	inBytes  atomic.Int64
}

// publish sends the session one envelope (a failure is counted and
// logged: the session asks again, or the beat repairs it).
func (u *sessionLink) publish(kind byte, h *bus.Header, body []byte) {
	h.Instance = u.instance
	b, err := bus.Encode(kind, h, body)
	if err == nil {
		err = u.nc.Publish(u.subject, b)
	}
	if err != nil {
		u.errors.Add(1)
		u.log.Debug("publish to the session", "err", err)
		return
	}
	u.outBytes.Add(int64(len(b)))
}
