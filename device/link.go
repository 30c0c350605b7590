package device

import (
	"context"
	"errors"
	"fmt"

	"browserfl/shared/wire"
)

// errEnded is returned by link.handle when the session ended (End).
var errEnded = errors.New("device: the session ended")

// link is one connection as its read loop sees it: it takes the
// coordinator's messages in order and answers them, with what lives only
// as long as the connection (a new connection forgets the last one's
// model, so whole frames come until one arrives, and a round's secure
// aggregation does not survive it). The Runtime holds what outlives it:
// the device's state, its device half and its storage.
type link struct {
	rt       *Runtime
	ws       Conn
	welcomed bool // a welcome arrived on this connection
	// lastX and lastT are the X and round of the last round frame
	// received on this connection: a frame with PrevIsLast takes its
	// x_{t-1} from them.
	lastX []float64
	lastT int
	// sa is the secure aggregation of the current round (secagg.go),
	// nil outside a shared-noise round.
	sa *saRound
}

// lost marks err, once a welcome arrived, as the loss of a connection
// that got that far (errConnected: the backoff starts again), unless it
// refuses for good.
func (c *link) lost(err error) error {
	if err != nil && c.welcomed && !errors.Is(err, ErrRefused) {
		return lostError{err}
	}
	return err
}

// handle handles one message of type typ. A non-nil error ends the
// connection: errEnded when the session ended.
func (c *link) handle(ctx context.Context, typ MessageType, b []byte) error {
	if typ == MessageBinary {
		if !c.welcomed {
			return fmt.Errorf("device: %w: binary frame before welcome", wire.ErrBadFrame)
		}
		if kind, _, err := wire.PeekKind(b); err == nil && kind == wire.KindSecAgg {
			return c.lost(c.secAgg(ctx, b))
		}
		return c.lost(c.round(ctx, b))
	}
	m, err := wire.DecodeControl(b)
	if err != nil {
		return c.lost(fmt.Errorf("device: %w", err))
	}
	switch m := m.(type) {
	case wire.Welcome:
		return c.welcome(ctx, m)
	case wire.Decision:
		return c.decision(ctx, m)
	case wire.Start:
		return c.start(ctx, m)
	case wire.End:
		return c.rt.onEnd(ctx, m)
	case wire.Error:
		return c.lost(refusal(m))
	default:
		return c.lost(fmt.Errorf("device: %w: unexpected %T", wire.ErrBadFrame, m))
	}
}

// welcome takes the coordinator's welcome: the device's credentials, the
// session and the decision of a pending round. The read limit then grows
// to a round frame of the session.
func (c *link) welcome(ctx context.Context, m wire.Welcome) error {
	if c.welcomed {
		return c.lost(fmt.Errorf("device: %w: second welcome", wire.ErrBadFrame))
	}
	if err := c.rt.onWelcome(ctx, m); err != nil {
		if errors.Is(err, ErrRefused) {
			c.rt.pres.leaveOn(c.ws, wire.LeaveStopped, "")
		}
		return err
	}
	c.welcomed = true
	if m.Lobby {
		return nil // nothing to do until Start
	}
	c.ws.SetReadLimit(int64(readLimit(m.Session)))
	// Resumed with its pending decision answered, a device that cannot
	// take part in another round leaves now.
	return c.leaveIfExhausted(func(st *State) bool { return st.Pending == 0 })
}

// decision applies the decision of the pending round.
func (c *link) decision(ctx context.Context, m wire.Decision) error {
	if !c.welcomed {
		return fmt.Errorf("device: %w: decision before welcome", wire.ErrBadFrame)
	}
	if h := c.rt.cfg.Hooks; h != nil && h.DropDecision != nil && h.DropDecision(m.T) {
		return c.lost(errors.New("device: decision dropped by test hook"))
	}
	if err := c.rt.onDecision(ctx, m); err != nil {
		return c.lost(err)
	}
	// The last round this device can answer is decided: leave now rather
	// than wait to be asked again (the session's last round is followed
	// by End instead).
	return c.leaveIfExhausted(func(st *State) bool {
		return st.Pending == 0 && st.Session != nil && m.T < st.Session.Rounds
	})
}

// start takes the final parameters of a lobby session; the device leaves
// if it refuses them.
func (c *link) start(ctx context.Context, m wire.Start) error {
	if !c.welcomed {
		return fmt.Errorf("device: %w: start before welcome", wire.ErrBadFrame)
	}
	if err := c.rt.onStart(ctx, m); err != nil {
		if errors.Is(err, ErrRefused) {
			c.rt.pres.leaveOn(c.ws, wire.LeaveStopped, leaveDetail(err))
		}
		return c.lost(err)
	}
	c.ws.SetReadLimit(int64(readLimit(m.Session)))
	return nil
}

// leaveIfExhausted leaves (wire.LeaveDone) and returns why when check
// holds for the state and the device cannot answer another round.
func (c *link) leaveIfExhausted(check func(*State) bool) error {
	rt := c.rt
	rt.mu.Lock()
	var exhausted error
	var why string
	if check(&rt.st) {
		exhausted = rt.exhaustedAheadLocked()
		why = exhaustedDetail(exhausted)
	}
	rt.unlock()
	if exhausted != nil {
		rt.pres.leaveOn(c.ws, wire.LeaveDone, why)
		return exhausted
	}
	return nil
}

// round answers a round frame: it takes the round, prepares and saves
// the update, and sends it.
func (c *link) round(ctx context.Context, b []byte) error {
	rt := c.rt
	r, err := c.takeRound(b)
	if err != nil {
		return err
	}
	rt.mu.Lock()
	shared := rt.sharedLocked()
	rt.unlock()
	c.sa = nil
	if shared {
		// Nothing is prepared yet: the round's secure aggregation
		// prepares the release at its masking step (secagg.go).
		return c.openSecAgg(r)
	}
	up, err := rt.prepare(ctx, c.ws, r)
	if errors.Is(err, errDataComing) {
		return nil // the round passes unanswered; the device stays
	}
	if err != nil {
		return err
	}
	return rt.sendUpdate(ctx, c.ws, r.T, up)
}

// takeRound decodes a round frame (its x_{t-1} from the last frame when
// it says PrevIsLast), refuses one while an update is undecided, and
// announces the round (EventRound) before its work.
func (c *link) takeRound(b []byte) (wire.RoundFrame, error) {
	rt := c.rt
	rt.mu.Lock()
	defer rt.unlock()
	if rt.algo == nil || rt.st.Session == nil {
		return wire.RoundFrame{}, fmt.Errorf("device: %w: round before a session was set up", wire.ErrBadFrame)
	}
	dim := rt.st.Session.Dim
	r, err := wire.DecodeRound(b, wire.Limits{Dim: dim, MaxBytes: roundFrameMax(dim)})
	if err != nil {
		return wire.RoundFrame{}, fmt.Errorf("device: %w", err)
	}
	if r.PrevIsLast {
		// x_{t-1} is the X of round t-1's frame on this connection. A
		// device that does not hold it says so by ending the connection
		// (a bad frame): the next connection gets whole frames.
		if c.lastX == nil || c.lastT != r.T-1 {
			return wire.RoundFrame{}, fmt.Errorf("device: %w: round %d refers to round %d's model, which this connection did not receive", wire.ErrBadFrame, r.T, r.T-1)
		}
		r.XPrev = c.lastX
	}
	c.lastX, c.lastT = r.X, r.T
	if rt.st.Pending != 0 {
		return wire.RoundFrame{}, fmt.Errorf("device: %w: round %d assigned while round %d is undecided", wire.ErrBadFrame, r.T, rt.st.Pending)
	}
	rt.emit(Event{Kind: EventRound, T: r.T})
	return r, nil
}
