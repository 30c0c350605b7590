package device

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"

	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// Secure aggregation (sessions of wire.SharedNoiseAlgorithm).
//
// A shared-noise device never sends an update frame: its release, a
// share of the noise, leaves only masked (shared/secagg). A round frame
// opens the round (announced as usual) without preparing anything; the
// coordinator's setup names the device's secagg id and the round's
// directory, and the device answers each step with its secagg client,
// whose parameters it derives itself from the session
// (plan.SessionSecAgg: the threshold, the cohort, the ring), never from
// the coordinator. A round whose announced cohort (the setup's
// directory) is smaller than the session's threshold is refused at once:
// the device's share is calibrated for at least that many. The release is prepared, charged and saved as pending
// only when the shares of at least the threshold of devices have arrived
// (the share delivery), and leaves as the masked input; the decision
// commits or aborts it as in every mode. A step refused by the client (a
// coordinator that cuts a set below the threshold, shows two survivor
// sets, or asks for both shares of one device) ends the connection: the
// device then learns its decision on a later hello, and its pending
// release is aborted unless the round included it.

// saRound is the device's secure aggregation of its current round.
type saRound struct {
	r      wire.RoundFrame
	a      plan.SecAgg
	client *secagg.Client
}

// shared reports whether the session set up is a shared-noise one. Call
// with rt.mu held.
func (rt *Runtime) sharedLocked() bool {
	return rt.st.Session != nil && rt.st.Session.Algorithm == wire.SharedNoiseAlgorithm
}

// openSecAgg keeps round r, just taken, for its secure aggregation.
func (c *link) openSecAgg(r wire.RoundFrame) error {
	rt := c.rt
	rt.mu.Lock()
	defer rt.unlock()
	if rt.saOf == nil || rt.saFor != *rt.st.Session {
		a, err := plan.SessionSecAgg(*rt.st.Session)
		if err != nil {
			return fmt.Errorf("device: %w: %w", ErrRefused, err)
		}
		rt.saOf, rt.saFor = &a, *rt.st.Session
	}
	c.sa = &saRound{r: r, a: *rt.saOf}
	return nil
}

// secAgg answers a secure aggregation frame of the current round.
func (c *link) secAgg(ctx context.Context, b []byte) error {
	rt := c.rt
	sa := c.sa
	rt.mu.Lock()
	var lim wire.Limits
	if rt.st.Session != nil {
		lim.MaxBytes = readLimit(*rt.st.Session)
	}
	rt.unlock()
	if sa == nil {
		return fmt.Errorf("device: %w: secure aggregation frame outside a shared-noise round", wire.ErrBadFrame)
	}
	f, err := wire.DecodeSecAggToDevice(b, lim)
	if err != nil {
		return fmt.Errorf("device: %w", err)
	}
	if f.T != sa.r.T {
		return fmt.Errorf("device: %w: secure aggregation step of round %d in round %d", wire.ErrBadFrame, f.T, sa.r.T)
	}
	var out any
	switch m := f.Msg.(type) {
	case *wire.SecAggSetup:
		if out, err = c.secAggSetup(sa, m); err == nil {
			rt.mu.Lock()
			rt.emit(Event{Kind: EventCohort, T: f.T, Cohort: len(m.Members)})
			rt.unlock()
		}
	case *secagg.KeyList:
		if sa.client == nil {
			return fmt.Errorf("device: %w: key list before the setup", wire.ErrBadFrame)
		}
		out, err = sa.client.ShareKeys(m)
	case *secagg.ShareDelivery:
		if sa.client == nil {
			return fmt.Errorf("device: %w: share delivery before the setup", wire.ErrBadFrame)
		}
		return c.secAggMask(ctx, sa, m)
	case *secagg.SurvivorList:
		if sa.client == nil {
			return fmt.Errorf("device: %w: survivor list before the setup", wire.ErrBadFrame)
		}
		out, err = sa.client.Consistency(m)
	case *secagg.UnmaskRequest:
		if sa.client == nil {
			return fmt.Errorf("device: %w: unmask request before the setup", wire.ErrBadFrame)
		}
		out, err = sa.client.Unmask(m)
	}
	if err != nil {
		return fmt.Errorf("device: secure aggregation of round %d: %w", f.T, err)
	}
	return c.sendSecAgg(ctx, f.T, out)
}

// secAggSetup starts the device's secagg client with the round's
// directory, which must list this device's own key under its id.
func (c *link) secAggSetup(sa *saRound, m *wire.SecAggSetup) (any, error) {
	if sa.client != nil {
		return nil, fmt.Errorf("%w: second setup of round %d", wire.ErrBadFrame, sa.r.T)
	}
	if len(m.Members) < sa.a.Threshold {
		// A cohort below the threshold: fewer honest shares of the noise
		// than the device's own share is calibrated for. It takes no part.
		return nil, fmt.Errorf("round %d announces a cohort of %d, below the session's threshold %d: %w", sa.r.T, len(m.Members), sa.a.Threshold, secagg.ErrBelowThreshold)
	}
	dir := make(secagg.Directory, len(m.Members))
	for _, e := range m.Members {
		dir[e.ID] = ed25519.PublicKey(e.Key[:])
	}
	cl, err := secagg.NewClient(sa.a.Params(m.Session, m.Round), m.You, c.rt.signKey, dir)
	if err != nil {
		return nil, err
	}
	sa.client = cl
	return cl.AdvertiseKeys()
}

// secAggMask is the masking step: with the shares of at least the
// threshold of devices delivered, the release is prepared and saved
// pending (as every mode's update), then only its masked form is sent.
func (c *link) secAggMask(ctx context.Context, sa *saRound, m *secagg.ShareDelivery) error {
	rt := c.rt
	if len(m.Shares)+1 < sa.a.Threshold {
		return fmt.Errorf("device: secure aggregation of round %d: shares of %d devices, threshold %d: %w", sa.r.T, len(m.Shares)+1, sa.a.Threshold, secagg.ErrBelowThreshold)
	}
	if _, err := rt.prepare(ctx, c.ws, sa.r); errors.Is(err, errDataComing) {
		return nil // the round passes unanswered; the device stays
	} else if err != nil {
		return err
	}
	rt.mu.Lock()
	gr, ok := rt.algo.(optim.GridReleaser)
	var x []int64
	err := fmt.Errorf("device: algorithm %q releases no integers", rt.param.Algorithm)
	if ok {
		x, err = gr.GridRelease(sa.r.T)
	}
	rt.unlock()
	if err != nil {
		return err
	}
	masked, err := sa.client.MaskedInput(m, x)
	if err != nil {
		return fmt.Errorf("device: secure aggregation of round %d: %w", sa.r.T, err)
	}
	if h := rt.cfg.Hooks; h != nil && h.BeforeSend != nil {
		if _, disconnect := h.BeforeSend(sa.r.T); disconnect {
			return errors.New("device: disconnect before the masked input by test hook")
		}
	}
	if err := c.sendSecAgg(ctx, sa.r.T, masked); err != nil {
		return err
	}
	rt.mu.Lock()
	rt.emit(Event{Kind: EventSent, T: sa.r.T})
	rt.unlock()
	if h := rt.cfg.Hooks; h != nil && h.AfterSend != nil && h.AfterSend(sa.r.T) {
		return errors.New("device: disconnect right after the masked input by test hook")
	}
	return nil
}

// sendSecAgg writes a secure aggregation message of round t, unless the
// device left meanwhile (ErrLeft).
func (c *link) sendSecAgg(ctx context.Context, t int, m any) error {
	b, err := wire.EncodeSecAgg(t, m)
	if err != nil {
		return err
	}
	return c.rt.pres.write(ctx, c.ws, b, fmt.Sprintf("secure aggregation step of round %d", t))
}
