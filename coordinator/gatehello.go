package coordinator

import (
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// evictInactive forgets the longest-inactive devices while more than
// MaxInactive registered devices have no connection; a device assigned
// to an undecided round is kept. It evicts down to 7/8 of the cap so
// that the sort is amortised.
func (c *Coordinator) evictInactive() {
	g := c.front.Gate
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

// checkHello applies the gate to a hello before admit: the version (a
// wrong one is a bad frame), the join code with its per-address backoff
// and the registration rate for a hello without a device id.
func (c *Coordinator) checkHello(cn *wsconn.Conn, h wire.Hello) error {
	return c.front.GateHello(cn, h, c.cfg.JoinCode)
}
