package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"browserfl/coordinator/roster"
	"browserfl/coordinator/store"
	"browserfl/shared/wire"
)

// Phase is a session's state in this process and its record in the
// store. It is not safe for concurrent use: the coordinator calls it
// under its lock, except Done and Wake (channels) and WaitWhile (which
// is given the lock).
type Phase struct {
	store  *store.Store
	roster *roster.Roster // who took part, stored when the session ends
	log    *slog.Logger
	state  string
	// wake is signalled on Start, Resume and End (the round loop waits
	// on it in the lobby and while paused); done is closed by End and
	// cuts the open round short.
	wake  chan struct{}
	done  chan struct{}
	ended bool // End was called (done closed)
}

// New returns the phase of a running session stored in st, whose
// devices r holds.
func New(st *store.Store, r *roster.Roster, log *slog.Logger) *Phase {
	return &Phase{store: st, roster: r, log: log, state: Running, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// State is the session's state.
func (p *Phase) State() string { return p.state }

// Set sets the state (a session restored from its record, or started).
func (p *Phase) Set(state string) { p.state = state }

// Ended reports whether the session was ended (End).
func (p *Phase) Ended() bool { return p.ended }

// End marks the session ended and closes Done. It must be called once.
func (p *Phase) End() {
	p.state, p.ended = Ended, true
	close(p.done)
}

// Done is closed when the session is ended.
func (p *Phase) Done() <-chan struct{} { return p.done }

// Wake is signalled when the state changes (Poke).
func (p *Phase) Wake() <-chan struct{} { return p.wake }

// Poke signals Wake.
func (p *Phase) Poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// WaitWhile blocks while the session is in state st (the round loop: in
// the lobby, or paused); mu is the coordinator's lock.
func (p *Phase) WaitWhile(ctx context.Context, mu sync.Locker, st string) error {
	for {
		mu.Lock()
		in := p.state == st
		mu.Unlock()
		if !in {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.wake:
		}
	}
}

// Move goes from state from to state to and stores it (the session has
// parameters sess and committed rounds); signal wakes the round loop.
func (p *Phase) Move(from, to string, sess wire.SessionParams, committed int, signal func()) error {
	if p.state != from {
		return fmt.Errorf("%w: %s in state %s", ErrState, to, p.state)
	}
	if err := p.Put(to, sess, committed); err != nil {
		return err
	}
	p.state = to
	p.log.Info("session "+to, "committed", committed)
	p.Poke()
	signal()
	return nil
}

// Put stores state with the session's parameters sess; when it ends,
// with who took part and whether it ended before its rounds (committed
// of sess.Rounds). A session in its lobby stores only its end.
func (p *Phase) Put(state string, sess wire.SessionParams, committed int) error {
	if p.state == Lobby && state != Ended {
		return nil
	}
	rec := Record{State: state, Session: sess}
	old, err := Read(p.store)
	if err != nil {
		return err
	}
	rec.Started = old.Started
	if state == Ended {
		rec.People = p.roster.People(p.state == Lobby)
		if old.State == Ended {
			rec.Ended, rec.EndedEarly = old.Ended, old.EndedEarly
		} else {
			rec.Ended = time.Now().UTC()
			rec.EndedEarly = committed < sess.Rounds
		}
	}
	return Put(p.store, rec)
}

// MarkEnded records that the session ended after its last round (all
// its rounds, or the one End cut short), with who took part.
func (p *Phase) MarkEnded(sess wire.SessionParams, committed int) {
	if err := p.Put(Ended, sess, committed); err != nil {
		p.log.Warn("could not store that the session ended", "err", err)
	}
	p.state = Ended
}
