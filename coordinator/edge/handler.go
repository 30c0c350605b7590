package edge

import (
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// edgeHandler is an edge as its connections see it (wsconn.Handler): it
// forwards hellos, events and questions to the session process,
// pre-aggregates updates and relays secure aggregation frames, so the Edge's methods stay unexported.
type edgeHandler struct{ e *Edge }

func (h edgeHandler) CheckHello(cn *wsconn.Conn, m wire.Hello) error { return h.e.checkHello(cn, m) }
func (h edgeHandler) Admit(cn *wsconn.Conn, m wire.Hello) error      { return h.e.admit(cn, m) }
func (h edgeHandler) AcceptUpdate(cn *wsconn.Conn, u wire.UpdateFrame, n int) error {
	return h.e.acceptUpdate(cn, u, n)
}
func (h edgeHandler) AcceptSecAgg(cn *wsconn.Conn, f wire.SecAggFrame, _ int) error {
	return h.e.acceptSecAgg(cn, f)
}
func (h edgeHandler) Status(cn *wsconn.Conn, t int) error { return h.e.status(cn, t) }
func (h edgeHandler) Leave(cn *wsconn.Conn, l wire.Leave) { h.e.leave(cn, l) }
func (h edgeHandler) Disconnected(cn *wsconn.Conn)        { h.e.disconnected(cn) }
func (h edgeHandler) EvictInactive()                      { h.e.evictInactive() }
