package coordinator

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"maps"
	"time"

	"browserfl/coordinator/roster"
	"browserfl/coordinator/wsconn"
	"browserfl/engine"
	"browserfl/shared/plan"
	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// Shared-noise sessions (wire.SharedNoiseAlgorithm): the collect stage of
// each round runs secure aggregation (engine.SecAggRound over
// shared/secagg), so the coordinator holds only masked vectors and, if at
// least the threshold of devices stay to the end, their sum. The round
// frame asks the members as in every mode; each member with a signing key
// (wire.Hello.SignKey) then gets its setup, and the steps follow, each
// closed when every device expected has answered or the session's round
// deadline has passed since it opened. A device whose masked input
// arrived is held in the round like a delivered update (it is included if
// the round completes); one that leaves before is dropped from it like a
// device that did not answer. A secure aggregation below its threshold
// discards the round (engine.Collected.Failed): every member is told
// "excluded" and aborts its pending release.

// ErrSecAggEdges is returned by AttachNode for a shared-noise session:
// edges do not carry secure aggregation.
var ErrSecAggEdges = errors.New("coordinator: shared-noise sessions run secure aggregation, which edges do not carry: run them on the one-process coordinator")

// saState is the coordinator's secure aggregation of a shared-noise
// session.
type saState struct {
	a plan.SecAgg
	// session is drawn at random by each process, and attempt counts the
	// rounds this process started: (session, wire.SecAggRound(t,
	// attempt)) never repeats, whatever round numbers run again.
	session secagg.SessionID
	attempt uint32
}

// prepareSecAgg sets up the secure aggregation of a shared-noise session
// (c.sa stays nil for the other algorithms).
func (c *Coordinator) prepareSecAgg() error {
	c.sa = nil
	if c.sess.Algorithm != wire.SharedNoiseAlgorithm {
		return nil
	}
	if c.node != nil {
		return ErrSecAggEdges
	}
	a, err := plan.SessionSecAgg(c.sess)
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	s := &saState{a: a}
	if _, err := crand.Read(s.session[:]); err != nil {
		return fmt.Errorf("coordinator: secure aggregation session: %w", err)
	}
	c.sa = s
	// No round starts that could not reach the threshold.
	c.minDevices = max(c.minDevices, a.Threshold)
	c.front.Log.Info("secure aggregation", "threshold", a.Threshold, "cohort", a.MaxClients,
		"ring_bits", a.Bits, "max_abs", a.MaxAbs, "grid_step", a.Step)
	return nil
}

// startSecAggLocked opens round or's secure aggregation and sends each
// member its setup. A round in which too few members can take part
// fails (it is discarded when collected). The caller holds c.mu.
func (c *Coordinator) startSecAggLocked(or *openRound, members []string) {
	c.sa.attempt++
	r, setups, err := engine.NewSecAggRound(c.sa.a, c.sa.session, wire.SecAggRound(or.t, c.sa.attempt), members,
		func(id string) ([32]byte, bool) {
			d := c.roster.Get(id)
			return d.SignKey, d != nil && d.HasKey
		})
	or.sa, or.saStep = r, make(chan struct{}, 1)
	if err != nil {
		or.saErr = err
		return
	}
	for id, s := range setups {
		c.sendSecAggLocked(or, id, s)
	}
}

// sendSecAggLocked sends m to device id if it is connected.
func (c *Coordinator) sendSecAggLocked(or *openRound, id string, m any) {
	d := c.roster.Get(id)
	if d == nil || d.Conn == nil {
		return
	}
	b, err := wire.EncodeSecAgg(or.t, m)
	if err != nil {
		c.front.Log.Error("secure aggregation message not encodable", "round", or.t, "err", err)
		return
	}
	if d.Conn.Send(wsconn.OutFrame{Binary: true, Data: b}) {
		or.bytesOut += int64(len(b))
	}
}

// acceptSecAgg handles a secure aggregation frame from cn's device: a
// frame of a past round, an earlier attempt or a closed step is dropped; one that is out of
// place or fails the server half's checks is refused (counted, and the
// connection closed).
func (c *Coordinator) acceptSecAgg(cn *wsconn.Conn, f wire.SecAggFrame, frameLen int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := cn.ID
	d := c.roster.Get(id)
	if d == nil || d.Conn != cn {
		return nil // superseded connection
	}
	or := c.round
	switch {
	case c.sa == nil:
		c.front.Met.SecAggRefused.Add(1)
		return errors.New("secure aggregation frame in a session without it")
	case f.T <= c.committed || or == nil || or.t != f.T || or.closed || or.saBusy || or.sa == nil || or.sa.Step() != f.Step:
		// A past round, or a step that closed (or is closing) before it
		// came: late.
		if or == nil || f.T <= or.t {
			c.front.Met.LateUpdates.Add(1)
			return nil
		}
		c.front.Met.SecAggRefused.Add(1)
		return fmt.Errorf("secure aggregation frame for round %d that has not started", f.T)
	case !or.cohort[id] || d.Round != f.T:
		c.front.Met.LateUpdates.Add(1)
		return nil // dropped from the round meanwhile
	case lateAttempt(f, c.sa.session, wire.SecAggRound(or.t, c.sa.attempt)):
		// A message of an earlier attempt of this round (one that
		// failed), come late from a slow device: dropped, as a late
		// update; refusing it would close the device's connection and
		// take it out of the attempt it is now answering.
		c.front.Met.LateUpdates.Add(1)
		return nil
	}
	err := or.sa.Receive(id, f)
	switch {
	case errors.Is(err, engine.ErrSecAggFull):
		return nil // the round has its cohort: this device is not in it
	case err != nil:
		c.front.Met.SecAggRefused.Add(1)
		c.front.Log.Warn("secure aggregation message refused", "device", wsconn.ShortID(id), "round", f.T, "step", f.Step, "err", err)
		return fmt.Errorf("%w: secure aggregation step %d: %v", wire.ErrBadFrame, f.Step, err)
	}
	or.bytesIn += int64(frameLen)
	if f.Step == wire.StepMasked {
		// The round holds this device's release (masked): it is
		// included if the round completes.
		or.updates[id] = &update{}
		d.Standing.Accepted()
		c.front.Met.Updates.Add(1)
	}
	if or.sa.Done() {
		select {
		case or.saStep <- struct{}{}:
		default:
		}
	}
	return nil
}

// lateAttempt reports whether f is a message of this process's secure
// aggregation session of an earlier attempt of current's round than
// current (wire.SecAggRound): late, not malformed. A message of another
// round under this round's frame is not late: it is refused.
func lateAttempt(f wire.SecAggFrame, session secagg.SessionID, current uint64) bool {
	m, ok := f.Msg.(interface{ Head() secagg.Header })
	if !ok {
		return false
	}
	h := m.Head()
	return h.Session == session && h.Round < current && h.Round>>32 == current>>32
}

// collectSecAgg runs the steps of round or's secure aggregation, each
// until every device expected has answered or the round deadline has
// passed since the step opened (or the session ended: the steps then
// close at once), and returns the closed round: the survivors' sum
// carried by the first of them, or Failed.
func (sh *roundShell) collectSecAgg(ctx context.Context) (engine.Collected[string], error) {
	c, or := sh.c, sh.or
	deadline := time.Duration(c.sess.DeadlineMillis) * time.Millisecond
	fail := func(err error) (engine.Collected[string], error) {
		c.mu.Lock()
		or.close()
		c.mu.Unlock()
		return engine.Collected[string]{Cohort: or.cohort, Unsure: or.unsure, Failed: err}, ctx.Err()
	}
	if or.saErr != nil {
		return fail(or.saErr)
	}
	for {
		c.mu.Lock()
		step, done := or.sa.Step(), or.sa.Done()
		c.mu.Unlock()
		if step == 0 {
			break
		}
		if !done {
			timer := time.NewTimer(deadline)
			select {
			case <-or.saStep:
			case <-timer.C:
				or.deadlineHit = true
			case <-c.endCh:
			case <-ctx.Done():
			}
			timer.Stop()
		}
		if err := ctx.Err(); err != nil {
			return engine.Collected[string]{}, err
		}
		// The step closes: frames that come meanwhile are late. The
		// last step's close computes the sum, the costly part, outside
		// the lock.
		c.mu.Lock()
		or.saBusy = true
		c.mu.Unlock()
		out, err := or.sa.Close()
		c.mu.Lock()
		or.saBusy = false
		for _, id := range or.saGone {
			or.sa.Drop(id) // gone while the step closed: the next step does not wait for it
		}
		or.saGone = nil
		select { // a Done signalled for the step just closed
		case <-or.saStep:
		default:
		}
		if err == nil {
			sent := map[any][]byte{}
			for id, m := range out {
				b, ok := sent[m]
				if !ok {
					if b, err = wire.EncodeSecAgg(or.t, m); err != nil {
						break
					}
					sent[m] = b
				}
				if d := c.roster.Get(id); d != nil && d.Conn != nil && d.Conn.Send(wsconn.OutFrame{Binary: true, Data: b}) {
					or.bytesOut += int64(len(b))
				}
			}
		}
		c.mu.Unlock()
		if err != nil {
			c.front.Log.Warn("secure aggregation failed: the round is discarded", "round", or.t, "err", err)
			return fail(err)
		}
	}
	sum, inc, err := or.sa.Sum()
	if err != nil {
		return fail(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	or.closed, or.included = true, inc
	col := engine.Collected[string]{Cohort: maps.Clone(or.cohort), Unsure: or.unsure,
		Delivered: make(map[string]engine.Contribution, len(inc))}
	for i, id := range inc {
		// Every survivor is in the sum, whatever became of it since.
		col.Cohort[id] = true
		col.Delivered[id] = engine.Contribution{}
		if i == 0 {
			col.Delivered[id] = engine.Contribution{Vec: sum}
		}
	}
	return col, nil
}

// secAggGoneLocked tells the open round's secure aggregation that device
// d's connection is gone (its secagg client with it), so that the step
// does not wait for it. The caller holds c.mu.
func (c *Coordinator) secAggGoneLocked(d *roster.Device) {
	or := c.round
	if or == nil || or.sa == nil || d.Round != or.t {
		return
	}
	if or.saBusy {
		// The step is closing outside the lock: drop d once it has.
		or.saGone = append(or.saGone, d.ID)
		return
	}
	or.sa.Drop(d.ID)
	if or.sa.Done() {
		select {
		case or.saStep <- struct{}{}:
		default:
		}
	}
}
