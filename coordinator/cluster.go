package coordinator

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"browserfl/coordinator/bus"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/roster"
	"browserfl/coordinator/view"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/optim/plausible"
	"browserfl/shared/wire"
)

// The cluster shape's session side (docs/cluster.md): edge processes hold
// the devices' websockets and meet the session over NATS through a
// session node (coordinator/sessionnode), which sits above this package.
// The node calls the core through the exported methods below (its
// sessionnode.Session); the core calls the node back through Relay.

// Relay is the session node as the core calls it.
type Relay interface {
	// SendRounds publishes round t to every edge that holds cohort
	// members, with the session's parameters and update bound (called
	// under c.mu, after the round frames were queued on their links).
	SendRounds(t int, sess wire.SessionParams, bound float64)
	// Holds reports whether l is a device held by an edge.
	Holds(l Link) bool
	// Edges lists the edges the node knows, sorted by id (/api/status).
	Edges() []view.EdgeStatus
	// MetricRows returns the node's rows of /metrics.
	MetricRows() []metrics.Row
	// MsgRate is the lowest per-connection message rate of the edges
	// (0 if none said): the session paces its rounds for it.
	MsgRate() float64
}

// ErrNotSummable is returned by AttachNode (so by sessionnode.New) for a
// session whose server half needs every update on its own: edges only
// forward sums.
var ErrNotSummable = errors.New("coordinator: the cluster shape needs a server half that takes summed updates (optim.SumApplier)")

// AttachNode attaches the cluster's session side to c (before c.Run).
func (c *Coordinator) AttachNode(r Relay) error {
	if c.server != nil {
		if _, ok := c.server.(optim.SumApplier); !ok {
			return fmt.Errorf("%w: algorithm %q", ErrNotSummable, c.sess.Algorithm)
		}
	} else if c.cfg.NewServer != nil {
		// A lobby: the server half is built at Start; try the template.
		if s, err := c.cfg.NewServer(c.sess); err == nil {
			if _, ok := s.(optim.SumApplier); !ok {
				return fmt.Errorf("%w: algorithm %q", ErrNotSummable, c.sess.Algorithm)
			}
		}
	}
	c.mu.Lock()
	c.node = r
	if c.loop.eng != nil {
		// An edge's sum is all or nothing and a round takes at most m
		// updates: a round that asked everyone eligible would have edge
		// sums past m, each refused whole, and include nobody (prepare
		// leaves it off once a node is attached).
		c.loop.eng.SetAskAll(0)
	}
	c.mu.Unlock()
	return nil
}

// Beat calls publish, under c.mu, with where the session stands: the
// digest of the join code, the last committed round, the open round and
// whether the session finished. The node publishes the beat to every edge
// inside publish, so a beat that says round t committed follows round t's
// decisions on every edge's subject.
func (c *Coordinator) Beat(publish func(bus.SessionBeat)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := bus.SessionBeat{JoinCodeHash: bus.CodeDigest(c.cfg.JoinCode), Committed: c.loop.committed, Finished: c.loop.finished}
	if c.loop.open != nil {
		b.Open = c.loop.open.t
	}
	publish(b)
}

// AdmitForwarded is admission (admission.admit) for a hello an edge forwarded
// on l: its credentials come as digests (busCred), never in the hello.
func (c *Coordinator) AdmitForwarded(l Link, h wire.Hello, codeHash, secretHash []byte) error {
	_, err := c.adm.admit(l, h, &busCred{codeHash: codeHash, secretHash: secretHash})
	return err
}

// Adopt binds device id, which an edge's roster names as connected on l
// (its secret checked by the node), to l, as after a hello, with the
// signing key of its hello (wire.Hello.SignKey, as the roster carries
// it: a device without a valid one takes no part in secure
// aggregation). A device bound to l already (a repeated roster) has its
// pending round answered again unless it is still the open round (then
// the round's own decision will come).
func (c *Coordinator) Adopt(l Link, id, nickname string, pending int, signKey string) error {
	c.mu.Lock()
	d := c.roster.Get(id)
	var err error
	if d != nil && d.Conn == l {
		again := pending > 0 && d.Round != pending
		c.mu.Unlock()
		if again {
			var dec wire.Decision
			if dec, err = c.Decision(id, pending); err == nil && dec.State != wire.Pending {
				l.SendControl(dec)
			}
		}
	} else {
		nick, _ := gate.NormalizeNickname(nickname) // "" if NFKC made it invalid
		err = c.adm.bind(l, nick, pending, nil)
		if d := c.roster.Get(id); err == nil && d != nil {
			d.SignKey, d.HasKey = wire.Hello{SignKey: signKey}.SignKeyBytes()
		}
		c.mu.Unlock()
	}
	return err
}

// AcceptAggregate takes an edge's sum of the updates of ids (links[i] is
// nil for a connection the node does not know) for round t. The sum is
// all or nothing: if any member is not an open cohort member of round t
// bound to that edge connection (it reconnected elsewhere, was dropped,
// answered twice), it would take the round past the cohort m (rounds
// over-select: engine.PlanCohort), or the sum fails validation (dimension,
// finite, norm at most len(ids) times the update bound), none is
// counted, and the
// members still in the round are excluded at once with a reason. The
// members in missing did not answer the edge by its deadline: they are
// excluded now, so the round need not wait for them.
func (c *Coordinator) AcceptAggregate(t int, links []Link, ids []string, body []byte, bytesIn int64, missing []Link) bool {
	vec := c.in.vec(c.sess.Dim)
	decodeErr := bus.DecodeVector(*vec, body)
	norm := math.NaN()
	if decodeErr == nil {
		if err := mechanism.CheckFinite(*vec); err == nil {
			norm = mechanism.Norm(*vec)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.loop.signal()
	if c.sa != nil {
		// A shared-noise session's devices send masked inputs only, which
		// their edges relay (AcceptForwardedSecAgg): a sum is refused unread.
		c.in.vecs.Put(vec)
		c.front.Log.Warn("edge aggregate in a shared-noise session refused", "round", t, "members", len(ids))
		return false
	}
	or := c.loop.open
	for _, l := range missing {
		if d := c.roster.Get(l.DeviceID()); d != nil && d.Conn == l && or != nil && or.t == t && d.Round == t &&
			or.cohort[d.ID] && or.updates[d.ID] == nil && !or.closed {
			delete(or.cohort, d.ID)
			or.dropped[d.ID] = true
			d.Round = 0
			d.Standing.Missed()
			d.Conn.SendControl(wire.Decision{T: t, State: wire.Excluded, Reason: "no update before the deadline"})
		}
	}
	if or != nil {
		or.checkAllIn()
	}
	if len(ids) == 0 {
		c.in.vecs.Put(vec)
		return true
	}
	if t <= c.loop.committed || or == nil || or.t != t || or.closed {
		// Late: whoever is still in round t is excluded at its commit.
		c.front.Met.LateUpdates.Add(int64(len(ids)))
		c.in.vecs.Put(vec)
		return false
	}
	why := ""
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		d := c.roster.Get(id)
		switch {
		case links[i] == nil || d == nil || d.Conn != links[i]:
			why = "a member's connection is not the one the edge named (it reconnected elsewhere)"
		case seen[id]:
			why = "a member appears twice"
		case !or.cohort[id] || d.Round != t || or.updates[id] != nil:
			why = "a member is not waiting for its update in this round"
		}
		seen[id] = true
		if why != "" {
			break
		}
	}
	if why == "" {
		switch {
		case len(or.updates)+len(ids) > c.sess.Cohort:
			// Over-selection (engine.PlanCohort) asks more than m devices; a
			// round never includes more than m (the server half refuses
			// more), and an edge's sum is all or nothing.
			why = fmt.Sprintf("the round has %d updates already; a sum of %d more would pass the cohort m = %d", len(or.updates), len(ids), c.sess.Cohort)
		case decodeErr != nil:
			why = decodeErr.Error()
		case math.IsNaN(norm):
			why = "the sum is not finite"
		case !(norm <= float64(len(ids))*c.in.bound):
			why = fmt.Sprintf("the sum's norm %.4g is above %d times the session's bound %.4g", norm, len(ids), c.in.bound)
			c.front.Met.RejectedUpdates.Add(int64(len(ids)))
		}
	}
	if why != "" {
		c.in.vecs.Put(vec)
		c.front.Log.Warn("edge aggregate refused; its members are excluded", "round", t, "members", len(ids), "why", why)
		for _, id := range ids {
			d := c.roster.Get(id)
			if d == nil || d.Round != t || !or.cohort[id] || or.updates[id] != nil {
				continue
			}
			delete(or.cohort, id)
			or.dropped[id] = true
			d.Round = 0
			roster.Control(d.Conn, wire.Decision{T: t, State: wire.Excluded, Reason: "the batch of your connection's server was refused: " + why})
		}
		or.checkAllIn()
		return false
	}
	for i, id := range ids {
		u := &update{agg: true}
		if i == 0 {
			u.vec = vec
		}
		or.updates[id] = u
		c.roster.Get(id).Standing.Accepted()
	}
	or.bytesIn += bytesIn
	c.front.Met.Updates.Add(int64(len(ids)))
	or.checkAllIn()
	return true
}

// RejectedAtEdge removes a device whose update its edge rejected (the
// edge told the device) from round t (not in a shared-noise session,
// whose edges see no update). why is the edge's reason in plain
// words (cut to wire.MaxLeaveDetail bytes of valid UTF-8); without one,
// the norm bound's.
func (c *Coordinator) RejectedAtEdge(l Link, t int, norm float64, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, or := c.roster.Get(l.DeviceID()), c.loop.open
	if c.sa != nil || d == nil || d.Conn != l || or == nil || or.t != t || !or.cohort[d.ID] || or.updates[d.ID] != nil || or.closed {
		return
	}
	if why == "" {
		why = plausible.NormWords(norm, c.in.bound)
	}
	c.in.reject(d, or, t, plainReason(why))
}

// plainReason makes a reason from another process fit for the dashboard:
// valid UTF-8, no control characters, at most wire.MaxLeaveDetail bytes.
func plainReason(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) { // and bidi overrides
			return ' '
		}
		return r
	}, s)
	for len(s) > wire.MaxLeaveDetail {
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
	}
	return s
}
