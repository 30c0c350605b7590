package coordinator

import (
	"browserfl/coordinator/bus"
	"browserfl/coordinator/roster"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/engine"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// roundShell is the coordinator's side of one round (engine.Shell): it
// asks over websockets and edges, collects on the connections, commits to
// the store and tells the members. The engine owns the round's rules.
type roundShell struct {
	c         *Coordinator
	ctx       context.Context
	or        *openRound        // the round asked (nil until Ask starts one)
	included  []*update         // frozen at close; their vectors are recycled after the round
	rec       store.RoundRecord // written by Commit, read by Tell
	decisions map[string][]byte // the two decision frames, encoded before the commit
}

var _ engine.Shell[string] = (*roundShell)(nil)

// Collect waits for the round to close: every member in (or its target
// reached), its deadline, the session's end, or ctx.
func (sh *roundShell) Collect(ctx context.Context, t int) (engine.Collected[string], error) {
	c, or := sh.c, sh.or
	if or.sa != nil {
		return sh.collectSecAgg(ctx)
	}
	timer := time.NewTimer(time.Duration(c.sess.DeadlineMillis) * time.Millisecond)
	select {
	case <-or.allIn:
	case <-timer.C:
		or.deadlineHit = true // read by Commit on this goroutine
	case <-c.life.Done(): // ended early: the round closes with what arrived
	case <-ctx.Done():
	}
	timer.Stop()
	return sh.closed()
}

// closed closes the round and returns it as the engine reads it; when
// ctx has ended (shutting down) the round is not decided: its devices
// learn "excluded" on resume.
func (sh *roundShell) closed() (engine.Collected[string], error) {
	c, or := sh.c, sh.or
	c.mu.Lock()
	or.close()
	// The included updates no longer change once the round is closed.
	col := engine.Collected[string]{Cohort: or.cohort, Unsure: or.unsure, AtTarget: or.atTarget,
		Delivered: make(map[string]engine.Contribution, len(or.updates))}
	for id, u := range or.updates {
		var v []float64
		if u.vec != nil {
			v = *u.vec
		}
		col.Delivered[id] = engine.Contribution{Vec: v, Payload: u.payload}
	}
	sh.included = make([]*update, 0, len(or.included))
	for _, id := range or.included {
		sh.included = append(sh.included, or.updates[id])
	}
	c.mu.Unlock()
	if err := sh.ctx.Err(); err != nil {
		return col, err
	}
	return col, nil
}

// recycle returns the vectors of the round's included updates for reuse.
func (sh *roundShell) recycle() { sh.c.in.recycle(sh.included) }

// Ask starts round t if enough devices are eligible and the session runs:
// it plans the cohort (engine.PlanCohort through start: reproducible from
// the logged seed, the eligible set and which devices are sure) and sends
// every member the round frame.
func (sh *roundShell) Ask(t int, start func(eligible []string, sure func(string) bool, probeable []string) (engine.Plan[string], optim.Round, error)) (bool, error) {
	c := sh.c
	if !c.loop.roundsMarked {
		// Before any device is asked: a later process must know that
		// devices may have released (their histories are then not from
		// the start).
		if err := c.store.MarkRoundsStarted(); err != nil {
			return false, fmt.Errorf("coordinator: %w", err)
		}
		c.loop.roundsMarked = true
	}
	deadline := time.Duration(c.sess.DeadlineMillis) * time.Millisecond
	c.mu.Lock()
	eligible := c.roster.EligibleIDs()
	probeable := c.roster.Probes(len(eligible), time.Now(), c.loop.recoveryAfter)
	if engine.Askable(len(eligible), len(probeable), c.sess.Cohort) < c.minDevices || c.life.Ended() || c.life.State() == StatePaused {
		c.mu.Unlock()
		return false, nil // someone left meanwhile; wait again
	}
	// The server half is used only by this goroutine; Next is called once
	// per round that actually starts.
	plan, r, err := start(eligible, func(id string) bool { return c.roster.Sure(c.roster.Get(id)) }, probeable)
	if err != nil {
		c.mu.Unlock()
		return false, fmt.Errorf("coordinator: %w", err)
	}
	frame, err := wire.EncodeRound(wire.RoundFrame{T: t, DeadlineMillis: c.sess.DeadlineMillis, X: r.X, XPrev: r.XPrev})
	if err != nil {
		c.mu.Unlock()
		// Validation and the check after every round make this
		// unreachable; if it happens anyway, the process stays up
		// (dashboard, status answers) and says what to do.
		c.front.Log.Error("the next round cannot be served; the session is stopped", "round", t,
			"err", unservable(c.store, t-1, err))
		<-sh.ctx.Done()
		return false, sh.ctx.Err()
	}
	cohort := plan.Members
	k := len(cohort)
	now := time.Now()
	or := &openRound{t: t, cohort: make(map[string]bool, k), updates: make(map[string]*update, k),
		dropped: make(map[string]bool), allIn: make(chan struct{}), started: now, deadline: now.Add(deadline),
		target: plan.Target, unsure: plan.Unsure, recovery: plan.Recovery}
	c.front.Met.OverSelected.Add(int64(plan.Extra))
	// Devices that were sent round t-1's frame on the same connection
	// already hold x_{t-1}: they get the frame without it.
	short := wire.ShortRound(frame)
	for _, id := range cohort {
		d := c.roster.Get(id)
		or.cohort[id] = true
		d.Round = t
		d.Hist.Ask()
		mark := bus.Mark{Gen: d.Gen, Incl: d.Participations, Asks: d.Hist.Asks()}
		or.bytesOut += int64(d.Conn.SendRound(wsconn.OutFrame{Binary: true, Data: frame, Short: short, Round: t, Mark: mark}))
	}
	if c.node != nil {
		// Edge-held members get the round in one message per edge.
		c.node.SendRounds(t, c.sess, c.in.bound)
	}
	if c.sa != nil {
		or.sa = c.sa.Start(t, cohort, func(id string) ([32]byte, bool) {
			d := c.roster.Get(id)
			return d.SignKey, d != nil && d.HasKey
		}, or.sendTo(c.roster))
	}
	c.loop.open = or
	sh.or = or
	c.mu.Unlock()
	c.front.Met.BytesOut.Add(or.bytesOut)
	c.front.Log.Info("round started", "round", t, "eligible", len(eligible), "cohort", k, "target", plan.Target,
		"unsure", len(plan.Unsure)-plan.Probes, "probes", plan.Probes, "recovery", plan.Recovery, "cohort_seed", c.cfg.Seed)
	return true, nil
}

// evalDue reports whether round t is evaluated when the schedule is
// every rounds (0: never): after rounds 1, 2, 3 and 5, so a class sees an
// accuracy from the first round on, then every rounds, and at the last
// round (or the round the session ended at).
func evalDue(t, every, rounds int, ended bool) bool {
	if every <= 0 {
		return false
	}
	return t <= 3 || t == 5 || t%every == 0 || t == rounds || ended
}

// evaluate measures the server half's model (Config.Evaluate) into rec
// (c.mu held or no round running); a failure or a figure that is not
// finite is logged and leaves rec as it was.
func evaluate(c *Coordinator, rec *store.RoundRecord) {
	acc, loss, err := c.cfg.Evaluate(c.server.Model())
	if err == nil && (math.IsNaN(acc) || math.IsInf(acc, 0) || math.IsNaN(loss) || math.IsInf(loss, 0)) {
		// An empty test set, or a model gone astray: not a figure to
		// store or publish (JSON has no NaN).
		err = fmt.Errorf("accuracy %v, loss %v: not finite", acc, loss)
	}
	if err != nil {
		c.front.Log.Warn("evaluation failed", "round", rec.T, "err", err)
		return
	}
	rec.Evaluated, rec.Accuracy, rec.Loss, rec.EvalSamples = true, acc, loss, c.cfg.EvalSamples
}

// evaluateLast evaluates the model the session ends with, the last
// committed round's, if its record has no evaluation (c.mu held, no round
// open): a session the teacher ends between rounds states its final
// model's accuracy, not an earlier round's.
func evaluateLast(c *Coordinator) {
	t := c.loop.committed
	if c.cfg.Evaluate == nil || c.cfg.EvalEvery <= 0 || t == 0 || c.server == nil {
		return
	}
	rec, ok, err := c.store.Round(t)
	if err != nil || !ok || rec.Evaluated {
		return
	}
	evaluate(c, &rec)
	if !rec.Evaluated {
		return
	}
	if err := c.store.UpdateRecord(rec); err != nil {
		c.front.Log.Warn("final evaluation not stored", "round", t, "err", err)
		return
	}
	c.loop.lastEval = evalPoint{T: t, Accuracy: rec.Accuracy, Loss: rec.Loss, Samples: rec.EvalSamples, Valid: true}
}

// Discard abandons the round (roundLoop.discard).
func (sh *roundShell) Discard(_ int, cause error) { sh.c.loop.discard(sh.or, cause) }

// Commit writes round t's record and the server state to the store, with
// the evaluation when one is due; the decision frames are encoded first,
// so nothing can fail after the commit.
func (sh *roundShell) Commit(t int, o engine.Outcome[string]) error {
	c, or := sh.c, sh.or
	cohortIDs := make([]string, 0, len(or.cohort)+len(or.dropped))
	for id := range or.cohort {
		cohortIDs = append(cohortIDs, id)
	}
	for id := range or.dropped {
		cohortIDs = append(cohortIDs, id)
	}
	slices.Sort(cohortIDs)
	rec := store.RoundRecord{T: t, Cohort: cohortIDs, Included: o.Included, Started: or.started, DeadlineHit: or.deadlineHit,
		Committed: time.Now(), BytesIn: or.bytesIn, BytesOut: or.bytesOut}
	if c.cfg.Evaluate != nil && evalDue(t, c.cfg.EvalEvery, c.sess.Rounds, c.life.Ended()) {
		evaluate(c, &rec)
	}
	// Every cohort member's decision is one of two frames: each is
	// encoded once (before the commit, so nothing can fail after it) and
	// the bytes are shared (writers only read them).
	sh.decisions = map[string][]byte{}
	for _, st := range []string{wire.Included, wire.Excluded} {
		b, err := wire.EncodeControl(wire.Decision{T: t, State: st})
		if err != nil {
			return fmt.Errorf("coordinator: round %d: encode the decision: %w", t, err)
		}
		sh.decisions[st] = b
	}
	state := o.State
	if err := c.store.CommitRound(rec, state); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	if c.cfg.OnCommit != nil {
		c.cfg.OnCommit(t)
	}
	c.front.Met.RoundCommitted(rec.Committed.Sub(rec.Started), len(or.included), len(cohortIDs))
	if or.atTarget {
		c.front.Met.ClosedAtTarget.Add(1)
	}
	sh.rec = rec
	return nil
}

// Tell publishes the committed round (model frame, status, histories)
// and sends each member still in it its decision; members that missed it
// (o.Missed) count a miss.
func (sh *roundShell) Tell(t int, o engine.Outcome[string]) {
	c, or, rec := sh.c, sh.or, sh.rec
	mf, mfErr := wire.EncodeRound(wire.RoundFrame{T: t, X: c.server.Model()})
	c.mu.Lock()
	if mfErr == nil {
		c.loop.modelFrame = mf
	}
	c.loop.committed = t
	c.loop.finished = t >= c.sess.Rounds || c.life.Ended()
	if rec.Evaluated {
		c.loop.lastEval = evalPoint{T: t, Accuracy: rec.Accuracy, Loss: rec.Loss, Samples: rec.EvalSamples, Valid: true}
	}
	inc := make(map[string]bool, len(o.Included))
	for _, id := range o.Included {
		inc[id] = true
		c.roster.CountIncluded(id) // as the store counts them
	}
	// Every included direct update joins its sender's history (whatever
	// became of its connection): the history must hold every inclusion
	// for its noise to telescope.
	c.loop.addHistories(or)
	for id := range or.cohort {
		d := c.roster.Get(id)
		if d == nil || d.Round != t {
			continue
		}
		d.Round = 0
		state := wire.Excluded
		if inc[id] {
			state = wire.Included
			d.Participations++
		}
		if o.Missed[id] {
			if n := d.Standing.Missed(); n == c.front.Lim.MaxMisses {
				c.front.Log.Info("device no longer sampled: it did not answer its last rounds", "device", wsconn.ShortID(id), "misses", n)
			}
		}
		if d.Conn != nil {
			d.Conn.Send(wsconn.OutFrame{Data: sh.decisions[state]})
			if d.Removed {
				// Removed while the round held its update: now that
				// the device knows the decision, it goes.
				d.Conn.CloseWith(wire.CodeRemoved, reasonRemoved)
			}
		}
	}
	c.loop.recoveryPause = roster.NextRecoveryPause(or.recovery, len(o.Included) > 0, c.loop.recoveryPause)
	c.loop.recoveryAfter = time.Now().Add(c.loop.recoveryPause)
	if c.loop.finished {
		c.life.MarkEnded(c.sess, c.loop.committed)
	}
	c.loop.open = nil
	c.mu.Unlock()
	c.loop.signal()
	c.front.Log.Info("round committed", "round", t, "included", len(o.Included), "cohort", len(rec.Cohort),
		"latency_ms", rec.Committed.Sub(rec.Started).Milliseconds(), "bytes_in", or.bytesIn, "bytes_out", or.bytesOut)
	if rec.Evaluated {
		c.front.Log.Info("evaluated", "round", t, "accuracy", rec.Accuracy, "loss", rec.Loss, "test_samples", rec.EvalSamples)
	}
}
