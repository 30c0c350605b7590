package edge

import (
	"fmt"

	"browserfl/coordinator/bus"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// A shared-noise session's rounds run secure aggregation at the session
// process (engine.SecAggRound): the edge collects nothing and relays each
// step's frames between its devices and the session, so it sees what the
// bus sees (signed keys, encrypted shares, masked inputs), never a
// release. What it adds is the binding of a frame to the connection it
// came on: a device's frame goes up under that connection's number and
// device id only, and a frame from the session goes down to the one
// connection it names, only if it decodes as a frame the coordinator
// sends, for the round that device was assigned.

// acceptSecAgg implements handler: the frame of cn's device for the round
// it was assigned is relayed to the session, bound to cn. A frame for a
// round the device no longer has (decided, or dropped when the session
// process changed) is late; one for a round it was never assigned, or in
// a session without secure aggregation, closes the connection.
func (e *Edge) acceptSecAgg(cn *wsconn.Conn, f wire.SecAggFrame) error {
	// Decoded strictly (canonical encodings), so encoding again gives the
	// device's bytes.
	b, err := wire.EncodeSecAgg(f.T, f.Msg)
	if err != nil {
		return fmt.Errorf("%w: secure aggregation frame: %v", wire.ErrBadFrame, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ec, r := e.conns[cn.Seq], e.round
	switch {
	case ec == nil || ec.cn != cn || ec.welcome != nil:
		return nil // superseded connection
	case r != nil && !r.shared:
		e.front.Met.SecAggRefused.Add(1)
		return fmt.Errorf("secure aggregation frame in a session without it")
	case f.T > e.lastRound:
		e.front.Met.SecAggRefused.Add(1)
		return fmt.Errorf("secure aggregation frame for round %d that was not assigned to this device", f.T)
	case r == nil || f.T != r.t || f.T != ec.assigned:
		e.front.Met.LateUpdates.Add(1)
		return nil
	}
	// Published under the edge's lock: before any disconnect of cn, so
	// the session takes it while the device is still bound to cn.
	e.link.publish(bus.KindSecAggUp, &bus.Header{Epoch: r.epoch, Seq: cn.Seq, ID: cn.ID, T: f.T}, b)
	e.secAggUp.Add(1)
	return nil
}

// relaySecAggLocked sends the session's secure aggregation frame body to
// the device of connection h.Seq: a frame from the bus is checked as a
// device would (wire.DecodeSecAggToDevice: a step the coordinator sends,
// canonical, within its bounds) and must be for the shared-noise round
// that device was assigned; anything else is dropped and counted as a bus
// error.
func (e *Edge) relaySecAggLocked(h bus.Header, body []byte) {
	ec, r := e.conns[h.Seq], e.round
	if ec == nil || ec.welcome != nil {
		return // gone: the session hears of it from the disconnect
	}
	f, err := wire.DecodeSecAggToDevice(body, wire.Limits{MaxBytes: len(body)})
	switch {
	case err != nil:
	case r == nil || !r.shared || r.epoch != h.Epoch || f.T != r.t || f.T != ec.assigned:
		err = fmt.Errorf("for round %d, which the device of connection %d is not in", f.T, h.Seq)
	}
	if err != nil {
		e.link.errors.Add(1)
		e.front.Log.Warn("secure aggregation frame from the session dropped", "err", err)
		return
	}
	if ec.cn.Send(wsconn.OutFrame{Binary: true, Data: body}) {
		e.secAggDown.Add(1)
	}
}
