package coordinator

import (
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// sessionHandler is the session core as its connections see it
// (wsconn.Handler): the Coordinator decides hellos, updates and
// questions itself.
type sessionHandler struct{ c *Coordinator }

func (h sessionHandler) CheckHello(cn *wsconn.Conn, m wire.Hello) error { return h.c.checkHello(cn, m) }
func (h sessionHandler) Admit(cn *wsconn.Conn, m wire.Hello) error      { return h.c.admit(cn, m) }
func (h sessionHandler) AcceptUpdate(cn *wsconn.Conn, u wire.UpdateFrame, n int) error {
	return h.c.acceptUpdate(cn, u, n)
}
func (h sessionHandler) AcceptSecAgg(cn *wsconn.Conn, f wire.SecAggFrame, n int) error {
	return h.c.acceptSecAgg(cn, f, n)
}
func (h sessionHandler) Status(cn *wsconn.Conn, t int) error { return h.c.status(cn, t) }
func (h sessionHandler) Leave(cn *wsconn.Conn, l wire.Leave) { h.c.leave(cn, l) }
func (h sessionHandler) Disconnected(cn *wsconn.Conn)        { h.c.disconnected(cn) }
func (h sessionHandler) EvictInactive()                      { h.c.evictInactive() }
