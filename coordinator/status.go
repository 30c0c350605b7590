package coordinator

import (
	"time"

	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
	"browserfl/coordinator/wsconn"
)

// Status returns a snapshot for the dashboard.
func (c *Coordinator) Status() view.Status {
	var s view.Status
	c.mu.Lock()
	s.Session, s.MinDevices, s.State = c.sess, c.minDevices, c.life.State()
	s.People = c.roster.People(c.life.State() == StateLobby)
	s.Committed, s.Finished = c.loop.committed, c.loop.finished
	node := c.node
	most := c.roster.Tally(&s)
	s.Full = c.roster.Connected() >= c.front.Lim.MaxDevices
	if or := c.loop.open; or != nil {
		s.Round = &view.RoundView{T: or.t, Cohort: len(or.cohort), Received: len(or.updates), Closed: or.closed,
			DeadlineLeftMs: max(0, time.Until(or.deadline).Milliseconds())}
	}
	if c.loop.lastEval.Valid {
		s.LastEval = &view.EvalView{T: c.loop.lastEval.T, Accuracy: c.loop.lastEval.Accuracy, Loss: c.loop.lastEval.Loss, Samples: c.loop.lastEval.Samples}
	}
	c.mu.Unlock()
	s.AccuracyNote = c.cfg.EvalNote
	s.Privacy = view.SessionPrivacy(s.Session)
	s.Privacy.MaxParticipations = most
	s.BytesIn, s.BytesOut = c.front.Met.BytesIn.Load(), c.front.Met.BytesOut.Load()
	s.LatencyP50Ms = float64(c.front.Met.Quantile(0.5).Microseconds()) / 1000
	s.LatencyP99Ms = float64(c.front.Met.Quantile(0.99).Microseconds()) / 1000
	s.BadFrames = c.front.Met.BadFrames.Load()
	s.UptimeSec = time.Since(c.started).Seconds()
	if node != nil {
		s.Edges = node.Edges()
	}
	return s
}

// What the session's HTTP API (coordinator/api) reads of a Coordinator
// besides Status, Session, Committed and the teacher's controls (Start,
// Pause, Resume, End, Remove): these accessors are its whole view of the
// session core (api.Session).

// Activity returns the session's plan and where it stands now.
func (c *Coordinator) Activity() view.Activity {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := view.Activity{Session: c.sess, MinDevices: c.minDevices}
	a.Committed, a.Finished, a.Lobby = c.loop.committed, c.loop.finished, c.life.State() == StateLobby
	c.roster.TallyActivity(&a)
	return a
}

// Model returns the global model after the last committed round.
func (c *Coordinator) Model() view.ModelSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := view.ModelSnapshot{Frame: c.loop.modelFrame, Committed: c.loop.committed, Finished: c.loop.finished}
	if ev := c.loop.lastEval; ev.Valid {
		m.LastEval = &view.EvalView{T: ev.T, Accuracy: ev.Accuracy, Loss: ev.Loss, Samples: ev.Samples}
	}
	return m
}

// Config returns the configuration the Coordinator was built with (its
// defaults filled in).
func (c *Coordinator) Config() Config { return c.cfg }

// Store returns the session's store.
func (c *Coordinator) Store() *store.Store { return c.store }

// Front returns the session's device front: its gate, counters, limits,
// logger and websocket endpoint (ServeWS).
func (c *Coordinator) Front() *wsconn.Front { return c.front }

// Started returns when this process's Coordinator was built (the session
// start, if the store has none, is counted from it).
func (c *Coordinator) Started() time.Time { return c.started }
