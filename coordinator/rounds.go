package coordinator

import (
	"browserfl/coordinator/roster"
	"browserfl/coordinator/secround"
	"browserfl/coordinator/wsconn"
	"browserfl/engine"
	"browserfl/shared/wire"
	"context"
	"slices"
	"time"
)

// roundLoop is the round loop (Run) and the state of the rounds: the open
// round, the last committed one and what was published after it. The
// rounds themselves are the engine's (package engine); the loop drives
// them through a roundShell (shell.go). Its fields are guarded by the
// coordinator's lock, except eng, recoveryPause and roundsMarked, which
// only the loop's goroutine uses.
type roundLoop struct {
	c         *Coordinator
	open      *openRound // the round being collected or committed; nil between rounds
	committed int
	finished  bool
	lastEval  evalPoint
	// modelFrame is the global model after the last committed round as a
	// wire round frame (X = model, T = committed), for /api/model.
	modelFrame []byte
	changed    chan struct{} // signalled when eligibility may have changed
	// eng is the round engine (package engine) the round loop drives
	// through a roundShell.
	eng *engine.Engine[string]
	// seenAll is set when no round of the session was sent before this
	// process (the store's RoundsStarted): every ask and inclusion of
	// every device is then seen here, and each device's history is from
	// its start. roundsMarked: this process has recorded that rounds
	// started.
	seenAll, roundsMarked bool
	// recoveryPause is the pause after a recovery round nobody answered
	// (roster.NextRecoveryPause), recoveryAfter the time before which no
	// recovery round starts.
	recoveryPause time.Duration
	recoveryAfter time.Time
}

type evalPoint struct {
	T                   int
	Accuracy, Loss      float64
	Samples             int
	HaveAccuracy, Valid bool
}

type openRound struct {
	t        int
	cohort   map[string]bool    // sampled devices still counted in the round
	updates  map[string]*update // received valid updates
	dropped  map[string]bool    // cohort members that reconnected without their update: excluded
	closed   bool               // no more updates accepted (deadline passed, target reached or all in)
	included []string           // frozen at close
	// target is the number of updates that closes the round (the
	// session's cohort m, or fewer eligible devices); members asked
	// beyond it are over-selected (engine.PlanCohort).
	target int
	// unsure are the members that were not sure when asked: their
	// silence counts as a miss however the round closed.
	unsure map[string]bool
	// atTarget: the round closed because its target was reached while
	// members were still out.
	atTarget bool
	// recovery: nobody was eligible; every member is a probe
	// (engine.PlanRecovery).
	recovery bool
	// deadlineHit: the round closed because its deadline passed (some
	// cohort member neither answered nor was dropped as gone).
	deadlineHit bool
	allIn       chan struct{}
	// sa is the round's secure aggregation (shared-noise sessions;
	// secagg.go), nil in the other sessions.
	sa       *secround.Round
	started  time.Time
	deadline time.Time
	bytesIn  int64
	bytesOut int64
}

// close freezes the included set of or (sorted ids); the caller holds the
// coordinator's lock.
func (or *openRound) close() {
	if or.closed {
		return
	}
	or.closed = true
	or.included = engine.Included(or.updates, or.cohort)
}

// checkAllIn closes the round and allIn once every device still in the
// cohort has delivered its update, or as soon as the round's target of
// updates has arrived (over-selection: the members still out are
// excluded at the commit, and an update of theirs that comes later is
// late). The caller holds the coordinator's lock.
func (or *openRound) checkAllIn() {
	if or.sa != nil {
		return // the secure aggregation's steps close the round (collectSecAgg)
	}
	if or.closed || (len(or.updates) < len(or.cohort) && len(or.updates) < or.target) {
		return
	}
	or.atTarget = len(or.updates) < len(or.cohort)
	or.close()
	select {
	case <-or.allIn:
	default:
		close(or.allIn)
	}
}

func (l *roundLoop) signal() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// Run drives rounds until the session has run all its rounds or ctx is
// done. Dropouts never stall it: a round closes at its deadline with the
// updates that arrived.
func (c *Coordinator) Run(ctx context.Context) error {
	if err := c.life.WaitWhile(ctx, &c.mu, StateLobby); err != nil {
		return err
	}
	for {
		c.mu.Lock()
		t := c.loop.committed + 1
		done := c.loop.finished
		c.mu.Unlock()
		if done {
			c.loop.endSession()
			return nil
		}
		if err := c.life.WaitWhile(ctx, &c.mu, StatePaused); err != nil {
			return err
		}
		c.mu.Lock()
		done = c.loop.finished
		c.mu.Unlock()
		if done {
			continue
		}
		if err := c.loop.waitEligible(ctx); err != nil {
			return err
		}
		began := time.Now()
		if err := c.loop.runRound(ctx, t); err != nil {
			return err
		}
		if gap := max(c.cfg.RoundGap, c.minRoundPeriod()-time.Since(began)); gap > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(gap):
			}
		}
	}
}

// minRoundPeriod is the shortest time from one round's start to the
// next's, so that the coordinator's own pace, with no round gap, never
// gets an honest device closed for flooding: a device sends its frames of
// a round (one update, or wire.SecAggFramesUp under shared noise) within
// the message rate each connection is held to (wsconn.Limits.MsgRate).
// A device asked in every round (a cohort of every connected device) is
// held to the rate exactly; when a round asks a share of them, the period
// is that share of it times two, so that a device asked more often than
// its share for a while stays within the rate's burst. Behind edges the
// rate is the lowest of this process's and the edges' (Relay.MsgRate).
func (c *Coordinator) minRoundPeriod() time.Duration {
	c.mu.Lock()
	shared, cohort, connected := c.sess.Algorithm == wire.SharedNoiseAlgorithm, c.sess.Cohort, c.roster.Connected()
	rate := c.front.Lim.MsgRate
	if c.node != nil {
		if r := c.node.MsgRate(); r > 0 {
			rate = min(rate, r)
		}
	}
	c.mu.Unlock()
	frames := 1.0
	if shared {
		frames = wire.SecAggFramesUp
	}
	share := 1.0
	if connected > 0 {
		share = min(1, 2*float64(cohort)/float64(connected))
	}
	return time.Duration(share * frames / rate * float64(time.Second))
}

func (l *roundLoop) waitEligible(ctx context.Context) error {
	c := l.c
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var since time.Time // when MinDevices or more first became eligible
	for {
		c.mu.Lock()
		e := c.roster.CountEligible()
		// Devices out of sampling for their misses count as the probes
		// a round would ask (engine.Askable, roster.Probes).
		n := engine.Askable(e, len(c.roster.Probes(e, time.Now(), l.recoveryAfter)), c.sess.Cohort)
		stop := c.life.Ended() || c.life.State() == StatePaused
		// When every device that could take part is eligible, a round
		// does not wait for the ones that are not there: a session
		// started from a lobby had its class present at Start, and
		// after the first round (which waited FillWait for a whole
		// cohort) waiting longer only helps if someone new joins.
		present := n >= c.minDevices && e == c.roster.Present() && (c.cfg.Lobby || l.committed > 0)
		c.mu.Unlock()
		start, fill := roundReady(e, n, c.minDevices, c.sess.Cohort, present)
		switch {
		case stop:
			return nil // the round loop looks at the state again
		case start:
			return nil
		case fill:
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) >= c.cfg.FillWait {
				return nil
			}
		default:
			since = time.Time{}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.changed:
		case <-c.life.Wake():
		case <-tick.C:
		}
	}
}

// roundReady says whether a round starts now (start) or after the fill
// wait (fill), with e devices eligible, n askable (engine.Askable),
// minDevices needed, cohort m and present (every live device eligible).
// No round starts with fewer than minDevices askable, even with a whole
// cohort eligible: Ask refuses it, and the round loop, told "start", then
// spun until more devices came (min-devices above m).
func roundReady(e, n, minDevices, m int, present bool) (start, fill bool) {
	switch {
	case n < minDevices:
		return false, false
	case e >= m || present:
		return true, false
	default:
		return false, true
	}
}

// runRound runs round t through the engine.
func (l *roundLoop) runRound(ctx context.Context, t int) error {
	c := l.c
	sh := &roundShell{c: c, ctx: ctx}
	defer sh.recycle()
	_, err := l.eng.Round(ctx, t, sh)
	return err
}

// beginRound samples round t's cohort and sends it the round (the engine's
// Begin); it returns nil (and no error) when too few devices are eligible
// any more.
func (l *roundLoop) beginRound(ctx context.Context, t int) (*openRound, error) {
	c := l.c
	sh := &roundShell{c: c, ctx: ctx}
	_, err := l.eng.Begin(t, sh)
	return sh.or, err
}

// finishRound closes round or and has the engine decide it (apply,
// commit, tell, or discard).
func (l *roundLoop) finishRound(ctx context.Context, or *openRound) error {
	c := l.c
	sh := &roundShell{c: c, ctx: ctx, or: or}
	defer sh.recycle()
	col, err := sh.closed()
	if err != nil {
		return err
	}
	_, err = l.eng.Finish(or.t, col, sh)
	return err
}

// addHistories adds every included direct update of the closed
// round or to its sender's history (whatever became of its connection:
// the history must hold every inclusion for its noise to telescope). An
// inclusion in an edge's aggregate is not seen one by one: the device's
// history starts again after it, no longer from the start.
func (l *roundLoop) addHistories(or *openRound) {
	c := l.c
	for _, id := range or.included {
		d, u := c.roster.Get(id), or.updates[id]
		switch {
		case d == nil || u == nil:
		case u.agg:
			d.Hist.Restart()
		case u.hist == &d.Hist && u.vec != nil:
			d.Hist.Include(*u.vec)
		}
	}
}

// discard abandons round or without committing it: every cohort
// member is told "excluded" (its device aborts, so the noise state stays
// consistent) and the same round number runs again.
func (l *roundLoop) discard(or *openRound, cause error) {
	c := l.c
	c.front.Met.DiscardedRounds.Add(1)
	c.front.Log.Error("round discarded: the state before it is kept", "round", or.t, "err", cause)
	c.mu.Lock()
	for id := range or.cohort {
		d := c.roster.Get(id)
		if d == nil || d.Round != or.t {
			continue
		}
		d.Round = 0
		roster.Control(d.Conn, wire.Decision{T: or.t, State: wire.Excluded, Reason: "the round was discarded"})
		if d.Removed && d.Conn != nil {
			d.Conn.CloseWith(wire.CodeRemoved, reasonRemoved)
		}
	}
	l.open = nil
	c.mu.Unlock()
	l.signal()
}

// dropUnanswered removes d from the open round if it is a cohort
// member whose update has not arrived (it is then excluded), and reports
// whether it did.
func (l *roundLoop) dropUnanswered(d *roster.Device, why string) bool {
	c := l.c
	or := l.open
	if or == nil || d.Round != or.t || !or.cohort[d.ID] || or.updates[d.ID] != nil || or.closed {
		return false
	}
	delete(or.cohort, d.ID)
	or.dropped[d.ID] = true
	d.Round = 0
	c.front.Met.GraceDrops.Add(1)
	c.front.Log.Info("cohort member dropped from the round", "device", wsconn.ShortID(d.ID), "round", or.t, "why", why)
	or.checkAllIn()
	return true
}

func (l *roundLoop) endSession() {
	c := l.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.roster.Devices() {
		if d.Conn != nil {
			d.Conn.SendControl(wire.End{Committed: l.committed})
		}
	}
}

// Decision answers a status query for round t from device id.
func (c *Coordinator) Decision(id string, t int) (wire.Decision, error) {
	// Under the lock for the same reason as in admit: the round must not
	// commit between the store read and the look at the open round.
	c.mu.Lock()
	defer c.mu.Unlock()
	dec := wire.Decision{T: t, State: wire.Excluded}
	if or := c.loop.open; or != nil && or.t == t && or.cohort[id] && or.updates[id] != nil &&
		(!or.closed || slices.Contains(or.included, id)) {
		dec.State = wire.Pending
		return dec, nil
	}
	if t <= c.loop.committed {
		rec, ok, err := c.store.Round(t)
		if err != nil {
			return wire.Decision{}, err
		}
		if ok && rec.Includes(id) {
			dec.State = wire.Included
		}
	}
	return dec, nil
}
