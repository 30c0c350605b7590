package coordinator

import (
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// sessionHandler is the session core as its websockets see it
// (wsconn.Handler): hellos go through the gate, then to admission; each
// frame after the hello to the part of the core that decides it.
type sessionHandler struct{ c *Coordinator }

// CheckHello applies the gate to a hello before Admit: the version (a
// wrong one is a bad frame), the join code with its per-address backoff
// and the registration rate for a hello without a device id.
func (h sessionHandler) CheckHello(cn *wsconn.Conn, m wire.Hello) error {
	return h.c.front.GateHello(cn, m, h.c.cfg.JoinCode)
}

// Admit authenticates the hello and binds the device to cn.
func (h sessionHandler) Admit(cn *wsconn.Conn, m wire.Hello) error {
	_, err := h.c.adm.admit(cn, m, nil)
	return err
}

func (h sessionHandler) AcceptUpdate(cn *wsconn.Conn, u wire.UpdateFrame, n int) error {
	return h.c.in.accept(cn, u, n)
}

func (h sessionHandler) AcceptSecAgg(cn *wsconn.Conn, f wire.SecAggFrame, n int) error {
	return h.c.in.acceptSecAgg(cn, f, n)
}

// Status answers a status query on cn, waiting for room in its outbox (a
// device that floods status queries is slowed by its own answers).
func (h sessionHandler) Status(cn *wsconn.Conn, t int) error {
	dec, err := h.c.Decision(cn.ID, t)
	if err != nil {
		return err
	}
	cn.SendWait(dec)
	return nil
}

func (h sessionHandler) Leave(cn *wsconn.Conn, l wire.Leave) { h.c.LeaveLink(cn, l) }
func (h sessionHandler) Disconnected(cn *wsconn.Conn)        { h.c.DisconnectedLink(cn) }

// EvictInactive forgets the longest-inactive devices while more than
// MaxInactive registered devices have no connection; a device assigned
// to an undecided round is kept (roster.EvictInactive). It evicts down to
// 7/8 of the cap so that the sort is amortised.
func (h sessionHandler) EvictInactive() {
	c, g := h.c, h.c.front.Gate
	c.mu.Lock()
	over := c.roster.Len() - c.roster.Connected() - g.Config().MaxInactive
	c.mu.Unlock()
	if over <= 0 {
		return
	}
	want := over + g.Config().MaxInactive/8
	ids := g.OldestInactive()
	c.mu.Lock()
	gone, evicted := c.roster.EvictInactive(ids, want)
	c.mu.Unlock()
	c.front.Met.Evicted.Add(int64(evicted))
	g.Forget(gone)
}
