package coordinator

import (
	"errors"
	"fmt"

	"browserfl/coordinator/roster"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// reasonRemoved is what a removed device is told, on its page too.
const reasonRemoved = "The teacher removed this device from the session."

// ErrNoSuchDevice is wrapped by Remove for an id the session does not
// hold.
var ErrNoSuchDevice = errors.New("coordinator: no such device in this session")

// Remove takes device id out of the session at the teacher's request. The
// removal is written to the store first, so its hellos are refused
// (wire.CodeRemoved) for the rest of the session, across restarts. In the
// open round:
//
//   - a cohort member whose update has not arrived, or has arrived in a
//     round still collecting, is excluded at once: its update (if any)
//     is taken out of the round and never reaches the aggregate, and the
//     device is told "excluded" before its connection is closed (it
//     aborts the update, so its noise state stays consistent);
//   - an update the round can no longer give back (the round is closed
//     and being committed, or the update came, or will come, summed in an
//     edge's aggregate: taking one member out would refuse the edge's
//     whole sum) is decided with the round as usual: the device gets the
//     decision, then its connection is closed.
//
// Either way the update is in the aggregate wholly or not at all. The
// device is never sampled again; the dashboard lists it as "removed".
func (c *Coordinator) Remove(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.roster.Get(id)
	switch {
	case id == "" || d == nil:
		return fmt.Errorf("%w: %q", ErrNoSuchDevice, wsconn.ShortID(id))
	case d.Removed:
		return fmt.Errorf("%w: the device was removed already", ErrState)
	}
	// Durable first: a restart must keep refusing the device.
	if err := c.store.MarkRemoved(id); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	c.adm.removed[id] = true
	d.Removed = true
	c.front.Log.Info("device removed by the teacher", "device", wsconn.ShortID(id))
	if or := c.loop.open; or != nil && d.Round == or.t && or.cohort[id] {
		u := or.updates[id]
		atEdge := c.node != nil && c.node.Holds(d.Conn)
		if or.closed || (u != nil && u.agg) || atEdge {
			// Decided with the round; finishRound (or discard)
			// closes the connection after the decision.
			c.loop.signal()
			return nil
		}
		if u != nil {
			delete(or.updates, id)
			if u.vec != nil {
				c.in.vecs.Put(u.vec)
			}
		}
		delete(or.cohort, id)
		or.dropped[id] = true
		d.Round = 0
		roster.Control(d.Conn, wire.Decision{T: or.t, State: wire.Excluded, Reason: "removed by the teacher"})
		or.checkAllIn()
	}
	if d.Conn != nil {
		d.Conn.CloseWith(wire.CodeRemoved, reasonRemoved)
	}
	c.loop.signal()
	return nil
}
