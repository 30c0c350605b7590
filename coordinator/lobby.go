package coordinator

import (
	"context"
	"fmt"
	"time"

	"browserfl/coordinator/lifecycle"
	"browserfl/coordinator/store"
	"browserfl/shared/lesson"
	"browserfl/shared/wire"
)

// The session states of Status.State (lifecycle.Phase). A session with
// Config.Lobby starts in StateLobby; Start moves it to StateRunning;
// Pause and Resume move between StateRunning and StatePaused; End, or the
// last round, moves it to StateEnded, which is final.
const (
	StateLobby   = lifecycle.Lobby
	StateRunning = lifecycle.Running
	StatePaused  = lifecycle.Paused
	StateEnded   = lifecycle.Ended
)

// ErrState is wrapped by Start, Pause, Resume and Remove when the session
// is not in a state the call applies to.
var ErrState = lifecycle.ErrState

// oneLesson is the default Config.Size: the "one lesson" preset.
func oneLesson(tmpl wire.SessionParams, n int) (wire.SessionParams, error) {
	s, _, err := lesson.OneLesson(tmpl, n)
	return s, err
}

// Lifecycle is what the store keeps of a session's state: the state and,
// once started, the final parameters.
type Lifecycle = lifecycle.Record

// ReadLifecycle returns the lifecycle stored in s (a finished
// session's, for a Host's list of sessions).
func ReadLifecycle(s *store.Store) (Lifecycle, error) { return lifecycle.Read(s) }

// PutLifecycle stores l in s: for a Host that ends a session no process
// runs (a restart that starts a new one).
func PutLifecycle(s *store.Store, l Lifecycle) error { return lifecycle.Put(s, l) }

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
	if c.life.State() != StateLobby {
		st := c.life.State()
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
	if c.life.State() != StateLobby { // ended meanwhile
		return fmt.Errorf("%w: start in state %s", ErrState, c.life.State())
	}
	prevSess, prevServer := c.sess, c.server
	c.sess, c.server, c.minDevices = final, server, minDevicesFor(c.cfg, final)
	if err := c.prepare(); err != nil {
		c.sess, c.server, c.minDevices = prevSess, prevServer, minDevicesFor(c.cfg, prevSess)
		return fmt.Errorf("coordinator: start: %w", err)
	}
	if err := lifecycle.Put(c.store, Lifecycle{State: StateRunning, Session: final, Started: time.Now().UTC()}); err != nil {
		return fmt.Errorf("coordinator: start: %w", err)
	}
	c.life.Set(StateRunning)
	sent := 0
	for _, d := range c.roster.Devices() {
		if d.Conn != nil && !d.Left && !d.Removed && d.Conn.SendControl(wire.Start{Session: final}) {
			sent++
		}
	}
	c.front.Log.Info("session started", "devices", n, "sent", sent, "M", final.M, "cohort", final.Cohort,
		"rounds", final.Rounds, "deadline_ms", final.DeadlineMillis)
	c.life.Poke()
	c.loop.signal()
	return nil
}

// Pause stops new rounds from starting (an open round still finishes);
// Resume lets them start again. Both return an error wrapping ErrState if
// the session is not running (Pause) or not paused (Resume).
func (c *Coordinator) Pause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.life.Move(StateRunning, StatePaused, c.sess, c.loop.committed, c.loop.signal)
}

// Resume continues a paused session.
func (c *Coordinator) Resume() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.life.Move(StatePaused, StateRunning, c.sess, c.loop.committed, c.loop.signal)
}

// End finishes the session early (in any state but ended): an open round
// closes at once with the updates that arrived and is committed, no new
// round starts, every device gets wire.End and the store records that
// the session ended. Calling End on an ended session does nothing.
func (c *Coordinator) End() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.life.Ended() {
		return nil
	}
	if err := c.life.Put(StateEnded, c.sess, c.loop.committed); err != nil {
		return err
	}
	c.life.End()
	c.loop.finished = true
	if c.loop.open == nil {
		// No round to finish: the last one's model is the final one
		// (evaluated here, under the lock, once: the session has ended,
		// so the frames and hellos it holds up for that moment have
		// nothing left to do; a status read after End has the figure);
		// tell the devices now (the round loop may be in the lobby or
		// paused; it returns after it sends End too).
		evaluateLast(c)
		for _, d := range c.roster.Devices() {
			if d.Conn != nil {
				d.Conn.SendControl(wire.End{Committed: c.loop.committed})
			}
		}
	}
	c.front.Log.Info("session ended by the teacher", "committed", c.loop.committed, "rounds", c.sess.Rounds)
	c.life.Poke()
	c.loop.signal()
	return nil
}

// State returns the session's state (StateLobby, StateRunning,
// StatePaused or StateEnded).
func (c *Coordinator) State() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.life.State()
}

// Session returns the session's parameters: the template in the lobby,
// the final ones from Start on.
func (c *Coordinator) Session() wire.SessionParams {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}
