package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"browserfl/coordinator/roster"
	"browserfl/coordinator/secround"
	"browserfl/coordinator/wsconn"
	"browserfl/engine"
	"browserfl/shared/wire"
)

// Shared-noise sessions (wire.SharedNoiseAlgorithm): the collect stage of
// each round runs secure aggregation (coordinator/secround), so the
// coordinator holds only masked vectors and, if at least the threshold of
// devices stay to the end, their sum. This file is the core's side of it:
// which frames reach the round's secure aggregation, and the round
// closed from its result. A secure aggregation below its threshold, or a
// sum that fails the round's check stage (engine.CheckSum, counted in
// browserfl_rejected_sums_total), discards the round
// (engine.Collected.Failed): every member is told "excluded" and aborts
// its pending release.

// newSecAgg sets up the secure aggregation of session s if it is a
// shared-noise session (nil for the other algorithms). It runs here
// whether the devices hold websockets to this process or to edges: an
// edge only relays each device's frames (AcceptForwardedSecAgg, and
// back through the device's link).
func newSecAgg(s wire.SessionParams, log *slog.Logger) (*secround.Session, error) {
	if s.Algorithm != wire.SharedNoiseAlgorithm {
		return nil, nil
	}
	sa, err := secround.New(s, log)
	if err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	return sa, nil
}

// sendTo returns how round or sends a secure aggregation frame to device
// id (if it is connected), counting the bytes. Called under c.mu.
func (or *openRound) sendTo(r *roster.Roster) func(id string, b []byte) {
	return func(id string, b []byte) {
		if d := r.Get(id); d != nil && d.Conn != nil && d.Conn.Send(wsconn.OutFrame{Binary: true, Data: b}) {
			or.bytesOut += int64(len(b))
		}
	}
}

// secAggGone tells the open round's secure aggregation (if any) that
// device d's connection is gone, so that the step does not wait for it.
// The caller holds c.mu.
func (or *openRound) secAggGone(d *roster.Device) {
	if or == nil || or.sa == nil || d.Round != or.t {
		return
	}
	or.sa.Gone(d.ID)
}

// AcceptForwardedSecAgg takes a secure aggregation frame b that an edge
// relayed from the device bound to l (the session node found l by the
// edge's subject and its connection number, so the frame speaks for that
// device only): decoded under the session's frame limit, then taken as
// one from a websocket (acceptSecAgg). An error means the frame is
// refused (counted): the caller closes l.
func (c *Coordinator) AcceptForwardedSecAgg(l Link, b []byte) error {
	f, err := wire.DecodeSecAggToCoordinator(b, wire.Limits{MaxBytes: c.front.FrameMax()})
	if err != nil {
		c.front.Met.SecAggRefused.Add(1)
		return fmt.Errorf("%w: secure aggregation frame: %v", wire.ErrBadFrame, err)
	}
	return c.in.acceptSecAgg(l, f, len(b))
}

// acceptSecAgg handles a secure aggregation frame from cn's device: a
// frame of a past round, an earlier attempt or a closed step is dropped; one that is out of
// place or fails the server half's checks is refused (counted, and the
// connection closed).
func (in *intake) acceptSecAgg(cn Link, f wire.SecAggFrame, frameLen int) error {
	c := in.c
	c.mu.Lock()
	defer c.mu.Unlock()
	id := cn.DeviceID()
	d := c.roster.Get(id)
	if d == nil || d.Conn != cn {
		return nil // superseded connection
	}
	or := c.loop.open
	switch {
	case c.sa == nil:
		c.front.Met.SecAggRefused.Add(1)
		return errors.New("secure aggregation frame in a session without it")
	case f.T <= c.loop.committed || or == nil || or.t != f.T || or.closed || or.sa == nil || !or.sa.Taking(f.Step):
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
	case or.sa.LateAttempt(f):
		c.front.Met.LateUpdates.Add(1)
		return nil
	}
	taken, err := or.sa.Receive(id, f)
	switch {
	case err != nil:
		c.front.Met.SecAggRefused.Add(1)
		c.front.Log.Warn("secure aggregation message refused", "device", wsconn.ShortID(id), "round", f.T, "step", f.Step, "err", err)
		return fmt.Errorf("%w: secure aggregation step %d: %v", wire.ErrBadFrame, f.Step, err)
	case !taken:
		return nil // the round has its cohort: this device is not in it
	}
	or.bytesIn += int64(frameLen)
	if f.Step == wire.StepMasked {
		// The round holds this device's release (masked): it is
		// included if the round completes.
		or.updates[id] = &update{}
		d.Standing.Accepted()
		c.front.Met.Updates.Add(1)
	}
	return nil
}

// collectSecAgg runs round or's secure aggregation (secround.Round.Collect)
// and returns the closed round: the survivors' sum carried by the first
// of them, or Failed.
func (sh *roundShell) collectSecAgg(ctx context.Context) (engine.Collected[string], error) {
	c, or := sh.c, sh.or
	deadline := time.Duration(c.sess.DeadlineMillis) * time.Millisecond
	res, failed, err := or.sa.Collect(ctx, &c.mu, deadline, c.life.Done(), or.sendTo(c.roster))
	if res.DeadlineHit {
		or.deadlineHit = true // read by Commit on this goroutine
	}
	if err != nil {
		return engine.Collected[string]{}, err
	}
	if failed != nil {
		if errors.Is(failed, engine.ErrSumImplausible) {
			c.front.Met.RejectedSums.Add(1)
		}
		c.mu.Lock()
		or.close()
		c.mu.Unlock()
		return engine.Collected[string]{Cohort: or.cohort, Unsure: or.unsure, Failed: failed}, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	or.closed, or.included = true, res.Included
	col := engine.Collected[string]{Cohort: maps.Clone(or.cohort), Unsure: or.unsure,
		Delivered: make(map[string]engine.Contribution, len(res.Included))}
	for i, id := range res.Included {
		// Every survivor is in the sum, whatever became of it since.
		col.Cohort[id] = true
		col.Delivered[id] = engine.Contribution{}
		if i == 0 {
			col.Delivered[id] = engine.Contribution{Vec: res.Sum}
		}
	}
	return col, nil
}
