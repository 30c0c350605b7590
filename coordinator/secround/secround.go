package secround

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"browserfl/engine"
	"browserfl/shared/optim/plausible"
	"browserfl/shared/plan"
	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// Session is the secure aggregation of one shared-noise session in this
// process.
type Session struct {
	a   plan.SecAgg
	sum *plausible.SumChecker // the tests of each round's sum (engine.CheckSum)
	log *slog.Logger
	// session is drawn at random by each process, and attempt counts the
	// rounds this process started: (session, wire.SecAggRound(t,
	// attempt)) never repeats, whatever round numbers run again.
	session secagg.SessionID
	attempt uint32
}

// New sets up the secure aggregation of session s (a shared-noise
// session) and logs its plan.
func New(s wire.SessionParams, log *slog.Logger) (*Session, error) {
	a, err := plan.SessionSecAgg(s)
	if err != nil {
		return nil, err
	}
	chk, err := plausible.NewSumChecker(s, s.Dim)
	if err != nil {
		return nil, fmt.Errorf("secure aggregation: %w", err)
	}
	sa := &Session{a: a, sum: chk, log: log}
	if _, err := crand.Read(sa.session[:]); err != nil {
		return nil, fmt.Errorf("secure aggregation session: %w", err)
	}
	log.Info("secure aggregation", "threshold", a.Threshold, "cohort", a.MaxClients,
		"ring_bits", a.Bits, "max_abs", a.MaxAbs, "grid_step", a.Step)
	return sa, nil
}

// Threshold is the number of devices a round needs to the end: no round
// starts with fewer.
func (s *Session) Threshold() int { return s.a.Threshold }

// Round is one round's secure aggregation.
type Round struct {
	s  *Session
	t  int
	id uint64 // wire.SecAggRound(t, attempt)
	sa *engine.SecAggRound[string]
	// err says why the round could not start (too few members can take
	// part); the round then fails when collected.
	err error
	// step is signalled when the open step has every answer; busy is set
	// while a step closes (gone then holds the devices gone meanwhile,
	// dropped once it has closed).
	step chan struct{}
	busy bool
	gone []string
}

// Start opens round t's secure aggregation over members and sends each
// its setup through send (key gives a member's signing key, if it gave
// one). A round in which too few members can take part fails when
// collected.
func (s *Session) Start(t int, members []string, key func(id string) ([32]byte, bool), send func(id string, b []byte)) *Round {
	s.attempt++
	r := &Round{s: s, t: t, id: wire.SecAggRound(t, s.attempt), step: make(chan struct{}, 1)}
	sa, setups, err := engine.NewSecAggRound(s.a, s.session, r.id, members, key)
	r.sa = sa
	if err != nil {
		r.err = err
		return r
	}
	for id, m := range setups {
		b, err := wire.EncodeSecAgg(t, m)
		if err != nil {
			s.log.Error("secure aggregation message not encodable", "round", t, "err", err)
			continue
		}
		send(id, b)
	}
	return r
}

// Taking reports whether the round takes a frame of step now: it
// started, and step is its open step (not closed, nor closing).
func (r *Round) Taking(step byte) bool {
	return r.err == nil && !r.busy && r.sa.Step() == step
}

// LateAttempt reports whether f is a message of an earlier attempt of
// this round (one that failed), come late from a slow device: dropped as
// a late update; refusing it would close the device's connection and
// take it out of the attempt it is now answering.
func (r *Round) LateAttempt(f wire.SecAggFrame) bool {
	return lateAttempt(f, r.s.session, r.id)
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

// Receive takes device id's frame f for the open step (Taking). It
// reports false without an error when the round has its cohort already
// (the device is not in it), and an error when the frame fails the
// checks; a masked input taken means the round holds the device's
// release (it is included if the round completes).
func (r *Round) Receive(id string, f wire.SecAggFrame) (bool, error) {
	err := r.sa.Receive(id, f)
	switch {
	case errors.Is(err, engine.ErrSecAggFull):
		return false, nil
	case err != nil:
		return false, err
	}
	r.signalDone()
	return true, nil
}

// signalDone wakes Collect if the open step has every answer.
func (r *Round) signalDone() {
	if r.sa.Done() {
		select {
		case r.step <- struct{}{}:
		default:
		}
	}
}

// Gone tells the round that device id's connection is gone (its secagg
// client with it), so that the step does not wait for it.
func (r *Round) Gone(id string) {
	if r.err != nil {
		return
	}
	if r.busy {
		// The step is closing outside the lock: drop id once it has.
		r.gone = append(r.gone, id)
		return
	}
	r.sa.Drop(id)
	r.signalDone()
}

// Result is what a completed secure aggregation gives the round: the
// survivors' sum, the survivors (sorted), and whether a step's deadline
// passed.
type Result struct {
	Sum         []float64
	Included    []string
	DeadlineHit bool
}

// Collect runs the round's steps, each until every device expected has
// answered or deadline has passed since the step opened (or end is
// closed: the steps then close at once), sending each step's messages
// through send under mu (the coordinator's lock, which the caller does
// not hold). failed says why the secure aggregation failed, or why its
// sum failed the round's check stage (engine.CheckSum: wrapping
// engine.ErrSumImplausible): the round is then discarded; err is ctx's
// error if ctx ended while a step was open.
func (r *Round) Collect(ctx context.Context, mu sync.Locker, deadline time.Duration, end <-chan struct{},
	send func(id string, b []byte)) (res Result, failed, err error) {
	if r.err != nil {
		return res, r.err, nil
	}
	for {
		mu.Lock()
		step, done := r.sa.Step(), r.sa.Done()
		mu.Unlock()
		if step == 0 {
			break
		}
		if !done {
			timer := time.NewTimer(deadline)
			select {
			case <-r.step:
			case <-timer.C:
				res.DeadlineHit = true
			case <-end:
			case <-ctx.Done():
			}
			timer.Stop()
		}
		if err := ctx.Err(); err != nil {
			return res, nil, err
		}
		if err := r.closeStep(mu, send); err != nil {
			r.s.log.Warn("secure aggregation failed: the round is discarded", "round", r.t, "err", err)
			return res, err, nil
		}
	}
	sum, inc, err := r.sa.Sum()
	if err != nil {
		return res, err, nil
	}
	if err := engine.CheckSum(r.s.sum, sum, len(inc)); err != nil {
		r.s.log.Warn("the round's sum is implausible: the round is discarded", "round", r.t, "devices", len(inc), "err", err)
		return res, err, nil
	}
	res.Sum, res.Included = sum, inc
	return res, nil, nil
}

// closeStep closes the open step and sends its answers: frames that come
// meanwhile are late. The last step's close computes the sum, the costly
// part, outside the lock.
func (r *Round) closeStep(mu sync.Locker, send func(id string, b []byte)) error {
	mu.Lock()
	r.busy = true
	mu.Unlock()
	out, err := r.sa.Close()
	mu.Lock()
	defer mu.Unlock()
	r.busy = false
	for _, id := range r.gone {
		r.sa.Drop(id) // gone while the step closed: the next step does not wait for it
	}
	r.gone = nil
	select { // a Done signalled for the step just closed
	case <-r.step:
	default:
	}
	if err != nil {
		return err
	}
	sent := map[any][]byte{}
	for id, m := range out {
		b, ok := sent[m]
		if !ok {
			if b, err = wire.EncodeSecAgg(r.t, m); err != nil {
				return err
			}
			sent[m] = b
		}
		send(id, b)
	}
	return nil
}
