package coordinator

import (
	"browserfl/coordinator/bus"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/roster"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/engine/check"
	"browserfl/shared/wire"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"time"
)

// admission decides hellos (a websocket's, or one an edge forwarded) and
// binds each admitted device to its link, answering its pending round;
// the link's end (DisconnectedLink) and a Leave unbind it. Its fields are
// guarded by the coordinator's lock.
type admission struct {
	c *Coordinator
	// removed holds the ids the teacher removed (Remove): their hellos
	// are refused for the rest of the session. Loaded from the store by
	// New, written there before it changes here.
	removed map[string]bool
	closing bool // Shutdown: every hello is refused
}

// busCred are a hello's credentials as an edge forwards them (the
// hello itself carries neither the join code nor the secret): the
// SHA-256 of the join code the device gave, and of its secret (of a
// returning device) or of the secret the edge issued it (a new device;
// the edge adds the secret to the welcome itself).
type busCred struct {
	codeHash, secretHash []byte
}

// admit authenticates hello and binds the device to cn, resolving
// the device's pending round; it returns the welcome it queued. The
// credentials come as cred (nil: in the hello, from a websocket).
func (a *admission) admit(cn Link, h wire.Hello, cred *busCred) (wire.Welcome, error) {
	c := a.c
	if h.Version != wire.Version {
		return wire.Welcome{}, &wsconn.CloseError{Code: wire.CodeVersion, Reason: fmt.Sprintf("protocol version %d, want %d", h.Version, wire.Version)}
	}
	codeOK := gate.JoinCodeEqual(h.JoinCode, c.cfg.JoinCode)
	if cred != nil {
		want := sha256.Sum256([]byte(wire.NormalizeJoinCode(c.cfg.JoinCode)))
		codeOK = subtle.ConstantTimeCompare(cred.codeHash, want[:]) == 1
	}
	if !codeOK {
		c.front.Met.AuthFailures.Add(1)
		return wire.Welcome{}, &wsconn.CloseError{Code: wire.CodeJoinCode, Reason: "wrong join code"}
	}
	// The nickname, normalised, must not look like a present one: checked
	// here before the store is touched, and again under the lock that
	// binds it (bind).
	nick, err := gate.NormalizeNickname(h.Nickname)
	if err != nil {
		return wire.Welcome{}, roster.NicknameError(err)
	}
	h.Nickname = nick
	c.mu.Lock()
	err = c.roster.CheckNickname(h.DeviceID, nick)
	c.mu.Unlock()
	if err != nil {
		return wire.Welcome{}, err
	}
	w := wire.Welcome{Version: wire.Version}
	if h.DeviceID == "" {
		id, secret, err := gate.NewCredentials()
		if err != nil {
			return wire.Welcome{}, err
		}
		if cred != nil {
			err, secret = c.store.AddDeviceHash(id, cred.secretHash), ""
		} else {
			err = c.store.AddDevice(id, secret)
		}
		if err != nil {
			return wire.Welcome{}, err
		}
		w.DeviceID, w.Secret = id, secret
		c.front.Met.NewDevices.Add(1)
	} else {
		auth := func() error { return c.store.Authenticate(h.DeviceID, h.Secret) }
		if cred != nil {
			auth = func() error { return c.store.AuthenticateHash(h.DeviceID, cred.secretHash) }
		}
		if err := auth(); err != nil {
			c.front.Met.AuthFailures.Add(1)
			if errors.Is(err, store.ErrUnknownDevice) || errors.Is(err, store.ErrBadSecret) {
				return wire.Welcome{}, &wsconn.CloseError{Code: wire.CodeAuth, Reason: "unknown device id or wrong secret"}
			}
			return wire.Welcome{}, err
		}
		w.DeviceID = h.DeviceID
	}
	cn.SetDeviceID(w.DeviceID)

	if c.cfg.BeforeAdmit != nil {
		c.cfg.BeforeAdmit(w.DeviceID, h.Pending)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if err := a.bind(cn, h.Nickname, h.Pending, &w); err != nil {
		return wire.Welcome{}, err
	}
	if d := c.roster.Get(w.DeviceID); d != nil {
		d.SignKey, d.HasKey = h.SignKeyBytes()
	}
	return w, nil
}

// bind binds the authenticated device cn.deviceID() to cn and
// resolves its pending round. With w (a hello) it completes the welcome
// and queues it as cn's first frame; without (an edge's roster after the
// session process restarted: the device is connected already) it sends
// the pending round's decision as a Decision.
func (a *admission) bind(cn Link, nickname string, pending int, w *wire.Welcome) error {
	c := a.c
	id := cn.DeviceID()
	if a.closing {
		return &wsconn.CloseError{Code: wire.CodeShutdown, Reason: "coordinator is shutting down"}
	}
	if a.removed[id] {
		return &wsconn.CloseError{Code: wire.CodeRemoved, Reason: reasonRemoved}
	}
	if w != nil { // a hello (a roster's devices are bound already)
		if err := c.roster.CheckNickname(id, nickname); err != nil {
			return err
		}
	}
	d := c.roster.Get(id)
	if d == nil {
		if c.roster.Connected() >= c.front.Lim.MaxDevices {
			return &wsconn.CloseError{Code: wire.CodeFull, Reason: "too many devices"}
		}
		d = &roster.Device{ID: id, Joined: time.Now(), Gen: bus.RandomGen()}
		// Registered just now (a welcome with a new secret), or no round
		// was sent before this process: it has made no release in this
		// session that this process did not see.
		d.Hist = check.NewHistory((w != nil && w.Secret != "") || (c.loop.seenAll && !c.roster.HistLost(id)))
		c.roster.Add(d)
	}

	// The pending round's decision. It is read under the lock: a round
	// commits (store, then c.loop.committed and c.loop.open under the lock), so
	// here either the open round still holds the update, or the round is
	// committed and its record is in the store. Reading the record
	// before taking the lock would let the round commit in between and
	// answer "excluded" for an included update.
	or := c.loop.open
	holding := false // the open round holds this device's update
	var pendingDec *wire.Decision
	if pending > 0 {
		dec := wire.Decision{T: pending, State: wire.Excluded}
		switch {
		case or != nil && or.t == pending && or.cohort[d.ID] && or.updates[d.ID] != nil &&
			(!or.closed || slices.Contains(or.included, d.ID)):
			dec.State = wire.Pending
			holding = true
		case pending <= c.loop.committed:
			rec, ok, err := c.store.Round(pending)
			if err != nil {
				return err
			}
			if ok && rec.Includes(d.ID) {
				dec.State = wire.Included
			}
		}
		pendingDec = &dec
	}
	if old := c.roster.Attach(d, cn); old != nil {
		old.CloseWith(wire.CodeDuplicate, "the device opened another connection")
		c.loop.open.secAggGone(d)
	}
	// misses survive a reconnection and a new hello: only an accepted
	// update shows that the device answers its rounds.
	d.Left, d.LeftWhy = false, ""
	d.SetNickname(nickname)
	if d.Round != 0 && !holding {
		// Assigned but the update never arrived on the old connection:
		// it is excluded now and a late copy will not be accepted.
		// A closed round's maps are read without the lock by
		// finishRound: it is left as it is (the device is not in its
		// included list, and the welcome says "excluded").
		if or != nil && or.t == d.Round {
			d.Standing.Missed() // asked, and came back without its update
			if !or.closed {
				delete(or.cohort, d.ID)
				delete(or.updates, d.ID)
				or.dropped[d.ID] = true
				or.checkAllIn()
			}
		}
		d.Round = 0
	}
	c.front.Met.Connects.Add(1)
	if w != nil {
		w.Session, w.Lobby = c.sess, c.life.State() == StateLobby
		w.Committed = c.loop.committed
		w.Pending = pendingDec
		// Queue the welcome before the lock is released: from now on the
		// device is eligible, and its first frame must be the welcome.
		if !cn.SendControl(*w) {
			return errors.New("could not queue the welcome")
		}
	} else if pendingDec != nil && !holding {
		cn.SendControl(*pendingDec)
	}
	if c.loop.finished {
		cn.SendControl(wire.End{Committed: c.loop.committed})
	}
	c.loop.signal()
	return nil
}

// DisconnectedLink unbinds l from its device (a websocket's or an
// edge's link). A cohort member of the open round whose update has not
// arrived is dropped from the round at once: frames are read in order, so
// an update it sent before the connection ended has already been
// accepted, and if it comes back it would be excluded anyway (see
// admission.admit). The round therefore never waits for a device that has gone.
func (c *Coordinator) DisconnectedLink(cn Link) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.roster.Get(cn.DeviceID())
	if d == nil || d.Conn != cn {
		return
	}
	c.roster.Detach(d)
	c.loop.open.secAggGone(d)
	if c.loop.dropUnanswered(d, "disconnected") {
		d.Standing.Missed() // asked, and went without its update
	}
}

// LeaveLink handles a Leave message on l (a websocket's or an edge's
// link): the device is not sampled again until its next hello, and
// leaves the open round if it has not answered it.
func (c *Coordinator) LeaveLink(cn Link, l wire.Leave) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.roster.Get(cn.DeviceID())
	if d == nil || d.Conn != cn {
		return
	}
	c.front.Met.Leaves.Add(1)
	if !d.Left {
		c.front.Log.Info("device left", "device", wsconn.ShortID(d.ID), "reason", l.Reason, "detail", l.Detail)
	}
	d.Left = true
	d.LeftWhy = l.Detail
	c.loop.open.secAggGone(d)
	c.loop.dropUnanswered(d, "left: "+l.Reason)
	c.loop.signal()
}
