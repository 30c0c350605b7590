package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
	"browserfl/shared/lesson"
	"browserfl/shared/wire"
)

// The session states of Status.State. A session with Config.Lobby starts
// in StateLobby; Start moves it to StateRunning; Pause and Resume move
// between StateRunning and StatePaused; End, or the last round, moves it
// to StateEnded, which is final.
const (
	StateLobby   = "lobby"
	StateRunning = "running"
	StatePaused  = "paused"
	StateEnded   = "ended"
)

// ErrState is wrapped by Start, Pause and Resume when the session is not
// in a state the call applies to.
var ErrState = errors.New("coordinator: not possible in the session's state")

// oneLesson is the default Config.Size: the "one lesson" preset.
func oneLesson(tmpl wire.SessionParams, n int) (wire.SessionParams, error) {
	s, _, err := lesson.OneLesson(tmpl, n)
	return s, err
}

// Lifecycle is what the store keeps of a session's state: the state and,
// once started, the final parameters.
type Lifecycle struct {
	State      string             `json:"state"`
	Session    wire.SessionParams `json:"session"`
	Started    time.Time          `json:"started,omitzero"`
	Ended      time.Time          `json:"ended,omitzero"`
	EndedEarly bool               `json:"ended_early,omitempty"`
	// People is the dashboard's list when the session ended (no device
	// ids), so that a finished session can still be shown.
	People []view.Person `json:"people,omitempty"`
}

const keyLifecycle = "lifecycle"

// ReadLifecycle returns the lifecycle stored in s (a finished
// session's, for a Host's list of sessions).
func ReadLifecycle(s *store.Store) (Lifecycle, error) { return readLifecycle(s) }

// readLifecycle returns the stored lifecycle (State "" if none was stored:
// a session without a lobby that has not ended).
func readLifecycle(s *store.Store) (Lifecycle, error) {
	var l Lifecycle
	v, err := s.Meta(keyLifecycle)
	if err == nil && v != nil {
		err = json.Unmarshal(v, &l)
	}
	if err != nil {
		return Lifecycle{}, fmt.Errorf("read lifecycle: %w", err)
	}
	return l, nil
}

// putLifecycle stores l.
func putLifecycle(s *store.Store, l Lifecycle) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("store lifecycle: %w", err)
	}
	if err := s.PutMeta(keyLifecycle, b); err != nil {
		return fmt.Errorf("store lifecycle: %w", err)
	}
	return nil
}

func (c *Coordinator) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// waitStarted blocks while the session is in its lobby.
func (c *Coordinator) waitStarted(ctx context.Context) error {
	for {
		c.mu.Lock()
		lobby := c.state == StateLobby
		c.mu.Unlock()
		if !lobby {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.wake:
		}
	}
}

// waitResumed blocks while the session is paused.
func (c *Coordinator) waitResumed(ctx context.Context) error {
	for {
		c.mu.Lock()
		paused := c.state == StatePaused
		c.mu.Unlock()
		if !paused {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.wake:
		}
	}
}

// Start leaves the lobby: it sizes the final parameters from the devices
// present (Config.Size), builds the server half (Config.NewServer),
// stores the final parameters and sends them to every connected device in
// a wire.Start. Each device checks them against its owner's budget and
// takes part or leaves. Start returns an error wrapping ErrState outside
// the lobby.
func (c *Coordinator) Start(ctx context.Context) error {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	c.mu.Lock()
	if c.state != StateLobby {
		st := c.state
		c.mu.Unlock()
		return fmt.Errorf("%w: start in state %s", ErrState, st)
	}
	n := c.roster.InLobby()
	c.mu.Unlock()
	if n == 0 {
		return fmt.Errorf("%w: nobody is in the lobby yet", ErrState)
	}
	final, err := c.cfg.Size(c.cfg.Session, n)
	if err != nil {
		return fmt.Errorf("coordinator: start: %w", err)
	}
	if err := wire.ValidateSession(final); err != nil {
		return fmt.Errorf("coordinator: start: %w", err)
	}
	server, err := c.cfg.NewServer(final)
	if err != nil {
		return fmt.Errorf("coordinator: start: server half: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != StateLobby { // ended meanwhile
		return fmt.Errorf("%w: start in state %s", ErrState, c.state)
	}
	prevSess, prevServer := c.sess, c.server
	c.sess, c.server, c.minDevices = final, server, c.minDevicesFor(final)
	if err := c.prepare(); err != nil {
		c.sess, c.server, c.minDevices = prevSess, prevServer, c.minDevicesFor(prevSess)
		return fmt.Errorf("coordinator: start: %w", err)
	}
	if err := putLifecycle(c.store, Lifecycle{State: StateRunning, Session: final, Started: time.Now().UTC()}); err != nil {
		return fmt.Errorf("coordinator: start: %w", err)
	}
	c.state = StateRunning
	sent := 0
	for _, d := range c.roster.Devices() {
		if d.Conn != nil && !d.Left && !d.Removed && d.Conn.SendControl(wire.Start{Session: final}) {
			sent++
		}
	}
	c.front.Log.Info("session started", "devices", n, "sent", sent, "M", final.M, "cohort", final.Cohort,
		"rounds", final.Rounds, "deadline_ms", final.DeadlineMillis)
	c.poke()
	c.signal()
	return nil
}

// Pause stops new rounds from starting (an open round still finishes);
// Resume lets them start again. Both return an error wrapping ErrState if
// the session is not running (Pause) or not paused (Resume).
func (c *Coordinator) Pause() error { return c.move(StateRunning, StatePaused) }

// Resume continues a paused session.
func (c *Coordinator) Resume() error { return c.move(StatePaused, StateRunning) }

func (c *Coordinator) move(from, to string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != from {
		return fmt.Errorf("%w: %s in state %s", ErrState, to, c.state)
	}
	if err := c.putStateLocked(to); err != nil {
		return err
	}
	c.state = to
	c.front.Log.Info("session "+to, "committed", c.committed)
	c.poke()
	c.signal()
	return nil
}

func (c *Coordinator) putStateLocked(state string) error {
	if c.state == StateLobby && state != StateEnded {
		return nil
	}
	l := Lifecycle{State: state, Session: c.sess}
	old, err := readLifecycle(c.store)
	if err != nil {
		return err
	}
	l.Started = old.Started
	if state == StateEnded {
		l.People = c.roster.People(c.state == StateLobby)
		if old.State == StateEnded {
			l.Ended, l.EndedEarly = old.Ended, old.EndedEarly
		} else {
			l.Ended = time.Now().UTC()
			l.EndedEarly = c.committed < c.sess.Rounds
		}
	}
	return putLifecycle(c.store, l)
}

// End finishes the session early (in any state but ended): an open round
// closes at once with the updates that arrived and is committed, no new
// round starts, every device gets wire.End and the store records that
// the session ended. Calling End on an ended session does nothing.
func (c *Coordinator) End() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return nil
	}
	if err := c.putStateLocked(StateEnded); err != nil {
		return err
	}
	c.state, c.ended, c.finished = StateEnded, true, true
	close(c.endCh)
	if c.round == nil {
		// No round to finish: tell the devices now (the round loop may
		// be in the lobby or paused; it returns after it sends End too).
		for _, d := range c.roster.Devices() {
			if d.Conn != nil {
				d.Conn.SendControl(wire.End{Committed: c.committed})
			}
		}
	}
	c.front.Log.Info("session ended by the teacher", "committed", c.committed, "rounds", c.sess.Rounds)
	c.poke()
	c.signal()
	return nil
}

// markEndedLocked records that the session ended after its last round
// (all its rounds, or the one End cut short), with who took part.
func (c *Coordinator) markEndedLocked() {
	if err := c.putStateLocked(StateEnded); err != nil {
		c.front.Log.Warn("could not store that the session ended", "err", err)
	}
	c.state = StateEnded
}

// State returns the session's state (StateLobby, StateRunning,
// StatePaused or StateEnded).
func (c *Coordinator) State() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Session returns the session's parameters: the template in the lobby,
// the final ones from Start on.
func (c *Coordinator) Session() wire.SessionParams {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}
