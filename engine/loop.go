package engine

import (
	"cmp"
	"context"
	"fmt"

	"browserfl/shared/optim"
)

// Shell is the transport of a round: the stages the engine does not own
// (ask, collect, commit, tell). The coordinator implements it over
// websockets and NATS, the simulator with calls into its device halves.
// The engine calls the methods of one round in this order, from one
// goroutine: Ask, then (if the round started) Collect, then either
// Discard, or Commit and then Tell.
type Shell[ID cmp.Ordered] interface {
	// Ask starts round t if it can start now: with its roster held still
	// (under the shell's lock, live), it calls start once with the sorted
	// eligible ids, which of them are sure and the sorted probeable ids,
	// and sends the returned round to the plan's members. It reports
	// false, and asks nobody, when the round cannot start now (too few
	// devices, or paused); an error from start is returned as is.
	Ask(t int, start func(eligible []ID, sure func(ID) bool, probeable []ID) (Plan[ID], optim.Round, error)) (bool, error)
	// Collect waits until round t closes (its target reached, every
	// member in, its deadline passed, or the session ended) and returns
	// the closed round. It returns ctx's error when ctx ends first: the
	// round is then neither committed nor discarded.
	Collect(ctx context.Context, t int) (Collected[ID], error)
	// Discard abandons round t (the server half is back at the state
	// before it): every member still in it is told "excluded", so its
	// device aborts and its noise state stays consistent.
	Discard(t int, cause error)
	// Commit records round t's outcome durably before any member is
	// told; an error stops the loop.
	Commit(t int, o Outcome[ID]) error
	// Tell gives each member still in round t its decision.
	Tell(t int, o Outcome[ID])
}

// Collected is a closed round as the shell saw it.
type Collected[ID cmp.Ordered] struct {
	Cohort    map[ID]bool         // members still counted in the round
	Delivered map[ID]Contribution // accepted updates (members or not)
	Unsure    map[ID]bool         // members that were not sure when asked
	AtTarget  bool                // closed at its target while members were still out
	// Failed says why the round cannot be decided from what arrived (a
	// shared-noise round whose secure aggregation fell below its
	// threshold): the round is discarded, never committed.
	Failed error
}

// Outcome is what a round decided.
type Outcome[ID cmp.Ordered] struct {
	Included []ID        // sorted
	Missed   map[ID]bool // members that missed the round (Missed)
	State    []byte      // the server half's state after the round
}

// Engine drives rounds of one session through a shell: the one round
// loop of the coordinator and the simulator.
type Engine[ID cmp.Ordered] struct {
	srv            optim.Server
	cohort, rounds int
	askAll         int // PlanCohort's askAll (SetAskAll)
	seed           uint64
	deadlineMillis int
	sum            []float64
	last           []byte // the state the last commit wrote; nil before the first
}

// New returns an engine for a session of cohort m and T rounds served by
// srv; seed is the cohort seed and deadlineMillis the round frame's.
func New[ID cmp.Ordered](srv optim.Server, m, rounds int, seed uint64, deadlineMillis int) *Engine[ID] {
	return &Engine[ID]{srv: srv, cohort: m, rounds: rounds, seed: seed, deadlineMillis: deadlineMillis,
		sum: make([]float64, len(srv.Model()))}
}

// SetAskAll sets the most members a round asks when no eligible device
// is sure (PlanCohort; 0, the default: only the cohort). Call it before
// the rounds start.
func (e *Engine[ID]) SetAskAll(n int) { e.askAll = n }

// Round runs round t through sh: Begin, sh.Collect, then Finish. It
// reports whether the round was committed; a round that did not start
// (too few devices) or was discarded runs again under the same number.
func (e *Engine[ID]) Round(ctx context.Context, t int, sh Shell[ID]) (committed bool, err error) {
	if started, err := e.Begin(t, sh); !started || err != nil {
		return false, err
	}
	c, err := sh.Collect(ctx, t)
	if err != nil {
		return false, err
	}
	return e.Finish(t, c, sh)
}

// Begin plans round t and has sh ask it (the plan and the ask stages). It
// reports whether the round started.
func (e *Engine[ID]) Begin(t int, sh Shell[ID]) (bool, error) {
	return sh.Ask(t, func(eligible []ID, sure func(ID) bool, probeable []ID) (Plan[ID], optim.Round, error) {
		p := PlanCohort(eligible, sure, probeable, e.cohort, ProbesPerRound(e.cohort), e.askAll, e.seed, t)
		if len(eligible) == 0 && len(probeable) > 0 {
			p = PlanRecovery(probeable, e.cohort, e.seed, t)
		}
		r := e.srv.Next()
		if r.T != t {
			return p, r, fmt.Errorf("engine: the server half is at round %d, want %d", r.T, t)
		}
		return p, r, nil
	})
}

// Finish decides the closed round t (the close, apply, commit and decide
// stages): the included set, the apply (the server half is restored and
// the round discarded through sh if the result cannot be served), the
// misses, then sh.Commit before sh.Tell. It reports whether the round was
// committed.
func (e *Engine[ID]) Finish(t int, c Collected[ID], sh Shell[ID]) (committed bool, err error) {
	if c.Failed != nil {
		// Nothing was applied: the server half is as before the round.
		sh.Discard(t, c.Failed)
		return false, nil
	}
	o := Outcome[ID]{Included: Included(c.Delivered, c.Cohort), Missed: map[ID]bool{}}
	// The state before the round, to return to if its result cannot be
	// served (validation should make that impossible; this is the second
	// line of defence, and it never ends the loop).
	before := e.last
	if before == nil {
		if before, err = e.srv.MarshalBinary(); err != nil {
			return false, fmt.Errorf("engine: marshal the server state: %w", err)
		}
	}
	cs := make([]Contribution, len(o.Included))
	for i, id := range o.Included {
		cs[i] = c.Delivered[id]
	}
	applyErr := Apply(e.srv, t, e.sum, cs)
	if applyErr == nil && t < e.rounds {
		applyErr = Servable(e.srv, e.deadlineMillis)
	}
	if applyErr != nil {
		if err := e.srv.UnmarshalBinary(before); err != nil {
			return false, fmt.Errorf("engine: restore the state before round %d: %w", t, err)
		}
		sh.Discard(t, applyErr)
		return false, nil
	}
	if o.State, err = e.srv.MarshalBinary(); err != nil {
		return false, fmt.Errorf("engine: marshal the server state: %w", err)
	}
	for id := range c.Cohort {
		_, delivered := c.Delivered[id]
		if Missed(delivered, c.AtTarget, c.Unsure[id]) {
			o.Missed[id] = true
		}
	}
	if err := sh.Commit(t, o); err != nil {
		return false, err
	}
	e.last = o.State
	sh.Tell(t, o)
	return true, nil
}
