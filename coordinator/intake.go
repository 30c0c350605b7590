package coordinator

import (
	"browserfl/coordinator/roster"
	"browserfl/coordinator/wsconn"
	"browserfl/engine/check"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim/plausible"
	"browserfl/shared/wire"
	"fmt"
	"slices"
)

// intake takes updates into the open round: a device's own (decoded,
// checked and tested against its history), an edge's sum of its devices'
// updates (all or nothing, cluster.go) and, in a shared-noise session,
// the secure aggregation's frames (secagg.go). Every refused update goes
// through reject, so the teacher sees each device's refusals. Its fields
// are set by prepare (chk, bound, keepPayloads) before any round.
type intake struct {
	c *Coordinator
	// bound is the largest L2 norm of an accepted update
	// (plausible.UpdateBound; +Inf: finiteness only).
	bound float64
	// chk tests each direct update (plausible.Checker; its NormBound is bound).
	chk *plausible.Checker
	// keepPayloads: the server half is not an optim.SumApplier, so the
	// round is applied from the payloads (decoded a second time by
	// Apply) and each accepted update keeps its payload too.
	keepPayloads bool
	// vecs recycles the decoded update vectors between rounds.
	vecs *wsconn.FreeList[*[]float64]
}

// update is an accepted update: its vector, decoded and validated once
// as it arrived, and (only when the server half has no ApplySum) its
// payload. The members of an edge's aggregate share one vector, the sum,
// carried by the first; the others have none.
type update struct {
	vec     *[]float64
	payload []byte
	hist    *check.History // the sender's history, to add vec to on inclusion (direct updates)
	// agg: the update came in an edge's aggregate (its vector is the
	// edge's sum, shared with the other members): it cannot be taken out
	// of the round on its own.
	agg bool
}

// vec returns a vector of length dim for decoding an update into.
func (in *intake) vec(dim int) *[]float64 { return wsconn.TakeVec(in.vecs, dim) }

// recycle returns the vectors of a finished round's updates for reuse.
func (in *intake) recycle(us []*update) {
	for _, u := range us {
		if u.vec != nil {
			in.vecs.Put(u.vec)
		}
	}
}

// accept handles an update frame from device d on connection cn.
// It returns a protocol error for an update the device had no business
// sending; late updates are dropped without error.
//
// The payload is decoded (finite, right dimension) once, outside the
// coordinator's lock, between two looks at the round under it: the first
// refuses an update that was not asked for before any decoding, the
// second tests it (plausible.Checker, which reads the device's history and
// asks, so under the lock: about five passes over d) and decides, so each
// update is counted at most once whatever happened meanwhile.
func (in *intake) accept(cn *wsconn.Conn, u wire.UpdateFrame, frameLen int) error {
	c := in.c
	c.mu.Lock()
	dim, drop, err := in.check(cn, u.T)
	c.mu.Unlock()
	if drop || err != nil {
		return err
	}
	// Validate the payload with the mechanism's decoder before it can
	// reach the server half: a bad payload never touches the model.
	vec := in.vec(dim)
	norm, err := mechanism.DecodeNorm(*vec, u.Payload)
	if err != nil {
		in.vecs.Put(vec)
		return fmt.Errorf("%w: update payload: %v", wire.ErrBadFrame, err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if _, drop, err := in.check(cn, u.T); drop || err != nil {
		in.vecs.Put(vec)
		return err
	}
	d, or := c.roster.Get(cn.ID), c.loop.open
	// The tests of the session's public parameters (plausible.Checker: the
	// norm bound, coordinates and blocks, and the device's running sum):
	// an honest device fails them with probability at most
	// plausible.UpdateRejectProb over the whole session. A rejected update is
	// excluded (the device aborts it, so its noise state stays
	// consistent) and never reaches the aggregate.
	// The history gives the rounds asked (limits by the noise of the
	// device's releases so far) and, when the checker tracks sums, the
	// running sum.
	hist := &d.Hist
	if err := check.Message(in.chk, *vec, norm, hist); err != nil {
		in.vecs.Put(vec)
		in.reject(d, or, u.T, plausible.TeacherWords(err, norm, in.bound))
		cn.SendControl(wire.Decision{T: u.T, State: wire.Excluded, Reason: err.Error()})
		return nil
	}
	up := &update{vec: vec}
	if in.chk.Tracks() {
		up.hist = hist
	}
	if in.keepPayloads {
		up.payload = slices.Clone(u.Payload)
	}
	or.updates[cn.ID] = up
	d.Standing.Accepted()
	or.bytesIn += int64(frameLen)
	c.front.Met.Updates.Add(1)
	or.checkAllIn()
	return nil
}

// reject excludes device d's update for the open round or
// (round t) because validation rejected it, and records why: every reason
// an update is rejected for (the norm bound, at an edge or here, and any
// later plausibility test) goes through here, so the teacher's view of the
// dashboard shows each device's count and last reason. why is in plain
// words (no jargon: the teacher reads it on the projector). The caller
// tells the device (a Decision "excluded": the device aborts the update,
// so its noise state stays consistent); the update never reaches the
// aggregate.
func (in *intake) reject(d *roster.Device, or *openRound, t int, why string) {
	c := in.c
	c.front.Met.RejectedUpdates.Add(1)
	d.Standing.Refused()
	d.RejectWhy = why
	c.front.Log.Warn("update rejected", "device", wsconn.ShortID(d.ID), "round", t, "why", why)
	delete(or.cohort, d.ID)
	or.dropped[d.ID] = true
	d.Round = 0
	or.checkAllIn()
	c.loop.signal()
}

// check looks at an update for round t from cn: drop is set
// for one to ignore (a superseded connection, a late update), err for
// one the device had no business sending; otherwise it returns the
// session's dimension.
func (in *intake) check(cn Link, t int) (dim int, drop bool, err error) {
	c := in.c
	id := cn.DeviceID()
	d := c.roster.Get(id)
	if d == nil || d.Conn != cn {
		return 0, true, nil // superseded connection
	}
	or := c.loop.open
	switch {
	case c.sa != nil:
		// A shared-noise device sends only masked inputs: an update of
		// its own would show its release with a share of the noise.
		return 0, false, fmt.Errorf("%w: an update frame in a shared-noise session, whose devices send only masked inputs", wire.ErrBadFrame)
	case t <= c.loop.committed || (or != nil && or.t == t && or.closed && or.cohort[id]):
		c.front.Met.LateUpdates.Add(1)
		return 0, true, nil
	case or == nil || or.t != t || !or.cohort[id] || d.Round != t:
		return 0, false, fmt.Errorf("update for round %d that was not assigned to this device", t)
	case or.updates[id] != nil:
		return 0, false, fmt.Errorf("duplicate update for round %d", t)
	}
	return c.sess.Dim, false, nil
}
