package engine

import (
	"cmp"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"

	"browserfl/shared/plan"
	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// Secure aggregation of a shared-noise round (wire.SharedNoiseAlgorithm).
//
// In such a round the collect stage is five steps of shared/secagg, and
// the coordinator holds only masked vectors until the last one gives it
// the sum of the survivors' releases. SecAggRound holds the rules of those
// steps, as the rest of this package holds the round's: which device may
// say what at each step (its own secagg id only), which set each step
// closes with, what each device is sent next, and the sum. The shell owns
// the transport and the clock: it delivers each device's frame to Receive
// (under its lock), and closes each step with Close when every device
// expected has answered (Done) or the step's deadline has passed.
//
// A device that stops answering is left out of the next step; secagg
// refuses to close any step with fewer than the threshold t, and the
// round is then discarded (every member told "excluded", so every device
// aborts its pending release and its noise state stays consistent). The
// sum is that of exactly the devices of U3, whose masked input arrived
// before the masked step closed; those are the round's included devices.

// ErrSecAggFull is returned by Receive for an advertisement beyond the
// cohort: the round's sum holds at most m devices (the ring is sized for
// them). It is not the device's fault; the shell ignores the message.
var ErrSecAggFull = errors.New("engine: the round's secure aggregation has its cohort")

// ErrSecAggSender is wrapped by Receive for a message that speaks for
// another device or arrives at another step: the sender is hostile.
var ErrSecAggSender = errors.New("engine: secure aggregation message out of place")

// SecAggRound is one round's secure aggregation at the coordinator.
type SecAggRound[ID cmp.Ordered] struct {
	a    plan.SecAgg
	srv  *secagg.Server
	num  map[ID]uint32
	ids  map[uint32]ID
	step byte            // the device step expected now; 0 once the sum is out
	want map[uint32]bool // the devices expected at this step
	got  map[uint32]bool // of which answered
	gone map[uint32]bool // the devices dropped (Drop): no later step waits for them
	u3   []ID
	sum  []int64
}

// NewSecAggRound starts the secure aggregation of a round whose members
// are members (sorted) and whose secagg session and round are sid and
// round (wire.SecAggRound): each member with a signing key (key) gets the
// id of its rank, 1-based, and the setup to send it. Members without a
// key take no part. It is an error if fewer than the threshold have one.
func NewSecAggRound[ID cmp.Ordered](a plan.SecAgg, sid secagg.SessionID, round uint64, members []ID, key func(ID) ([32]byte, bool)) (*SecAggRound[ID], map[ID]*wire.SecAggSetup, error) {
	if len(members) > secagg.MaxID {
		return nil, nil, fmt.Errorf("engine: secure aggregation of %d members, at most %d", len(members), secagg.MaxID)
	}
	r := &SecAggRound[ID]{a: a, num: map[ID]uint32{}, ids: map[uint32]ID{}, step: wire.StepAdvertise,
		want: map[uint32]bool{}, got: map[uint32]bool{}, gone: map[uint32]bool{}}
	dir := secagg.Directory{}
	var list []wire.SecAggMember
	for _, id := range members {
		k, ok := key(id)
		if !ok {
			continue
		}
		n := uint32(len(list) + 1)
		r.num[id], r.ids[n] = n, id
		dir[n] = ed25519.PublicKey(slices.Clone(k[:]))
		list = append(list, wire.SecAggMember{ID: n, Key: k})
		r.want[n] = true
	}
	if len(list) < a.Threshold {
		return nil, nil, fmt.Errorf("engine: %d of %d members can take part, threshold %d: %w", len(list), len(members), a.Threshold, secagg.ErrBelowThreshold)
	}
	srv, err := secagg.NewServer(a.Params(sid, round), dir)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: %w", err)
	}
	r.srv = srv
	setups := make(map[ID]*wire.SecAggSetup, len(list))
	for _, m := range list {
		setups[r.ids[m.ID]] = &wire.SecAggSetup{Session: sid, Round: round, You: m.ID, Members: list}
	}
	return r, setups, nil
}

// Step is the device step the round expects now (wire.StepAdvertise,
// StepShareKeys, StepMasked, StepSignature, StepUnmasked), 0 once the sum
// is out or the round failed.
func (r *SecAggRound[ID]) Step() byte { return r.step }

// Receive takes device id's message of the current step. It refuses
// (ErrSecAggSender) a message of another step, from a device not expected
// at this step or that already answered, or that names another sender;
// then the server half's checks apply (shared/secagg's errors). Nothing
// is kept of a refused message.
func (r *SecAggRound[ID]) Receive(id ID, f wire.SecAggFrame) error {
	n, ok := r.num[id]
	switch {
	case !ok:
		return fmt.Errorf("%w: not a member of the round's secure aggregation", ErrSecAggSender)
	case f.Step != r.step:
		return fmt.Errorf("%w: step %d, the round is at step %d", ErrSecAggSender, f.Step, r.step)
	case !r.want[n]:
		return fmt.Errorf("%w: not expected at step %d", ErrSecAggSender, f.Step)
	case r.got[n]:
		return fmt.Errorf("%w: second message at step %d", ErrSecAggSender, f.Step)
	}
	var from uint32
	var err error
	switch m := f.Msg.(type) {
	case *secagg.AdvertiseKeys:
		from = m.Client
		if from == n && len(r.got) >= r.a.MaxClients {
			return ErrSecAggFull
		}
		if from == n {
			err = r.srv.ReceiveAdvertise(m)
		}
	case *secagg.ShareKeys:
		from = m.From
		if from == n {
			err = r.srv.ReceiveShares(m)
		}
	case *secagg.MaskedInput:
		from = m.From
		if from == n {
			err = r.srv.ReceiveMasked(m)
		}
	case *secagg.ConsistencySig:
		from = m.From
		if from == n {
			err = r.srv.ReceiveConsistency(m)
		}
	case *secagg.UnmaskResponse:
		from = m.From
		if from == n {
			err = r.srv.ReceiveUnmask(m)
		}
	default:
		return fmt.Errorf("%w: %T", ErrSecAggSender, f.Msg)
	}
	if from != n {
		return fmt.Errorf("%w: device %d speaks for %d", ErrSecAggSender, n, from)
	}
	if err != nil {
		return err
	}
	r.got[n] = true
	return nil
}

// Done reports whether every device expected at the current step has
// answered, or the advertisements already fill the cohort (the members
// asked beyond it take no part): the shell may close the step before its
// deadline.
func (r *SecAggRound[ID]) Done() bool {
	return r.step != 0 && (len(r.got) == len(r.want) || r.step == wire.StepAdvertise && len(r.got) >= r.a.MaxClients)
}

// Close closes the current step with the devices that answered and
// returns the message each device of the next step is sent (none after
// the last step: Sum holds the result). An error (below the threshold,
// or a reconstructed secret that does not match) fails the round: the
// shell discards it.
func (r *SecAggRound[ID]) Close() (map[ID]any, error) {
	out := map[ID]any{}
	next := map[uint32]bool{}
	send := func(n uint32, m any) { out[r.ids[n]], next[n] = m, true }
	var err error
	switch r.step {
	case wire.StepAdvertise:
		var kl *secagg.KeyList
		if kl, err = r.srv.KeyList(); err == nil {
			for _, a := range kl.Clients {
				send(a.Client, kl)
			}
		}
	case wire.StepShareKeys:
		var ds []*secagg.ShareDelivery
		if ds, err = r.srv.Deliveries(); err == nil {
			for _, d := range ds {
				send(d.To, d)
			}
		}
	case wire.StepMasked:
		var sl *secagg.SurvivorList
		if sl, err = r.srv.SurvivorList(); err == nil {
			for _, n := range sl.Survivors {
				send(n, sl)
				r.u3 = append(r.u3, r.ids[n])
			}
			slices.Sort(r.u3)
		}
	case wire.StepSignature:
		var ur *secagg.UnmaskRequest
		if ur, err = r.srv.UnmaskRequest(); err == nil {
			for _, n := range r.srv.Signers() {
				send(n, ur)
			}
		}
	case wire.StepUnmasked:
		r.sum, err = r.srv.Sum()
	default:
		err = fmt.Errorf("engine: secure aggregation closed at step %d", r.step)
	}
	if err != nil {
		step := r.step
		r.step = 0
		return nil, fmt.Errorf("engine: secure aggregation closing step %d: %w", step, err)
	}
	if r.step == wire.StepUnmasked {
		r.step = 0
	} else {
		r.step += 2 // the device's next step: every step is a server message and a device answer
	}
	for n := range r.gone {
		// A device gone after answering this step is sent the next
		// step's message (nothing receives it) but not waited for.
		delete(next, n)
	}
	r.want, r.got = next, map[uint32]bool{}
	return out, nil
}

// Masked reports whether device id's masked input is held (the round
// holds its update; it is in the sum if the round completes).
func (r *SecAggRound[ID]) Masked(id ID) bool {
	n, ok := r.num[id]
	return ok && (r.step == wire.StepMasked && r.got[n] || slices.Contains(r.u3, id))
}

// Sum returns the sum of the releases of the devices whose masked input
// the round holds (U3), the grid's integers times its step (exact while
// they stay below 2^53), and those devices, sorted: the round's included
// devices. It is an error before the last step closed.
func (r *SecAggRound[ID]) Sum() ([]float64, []ID, error) {
	if r.sum == nil {
		return nil, nil, errors.New("engine: no secure aggregation sum yet")
	}
	out := make([]float64, len(r.sum))
	for i, v := range r.sum {
		out[i] = float64(v) * r.a.Step
	}
	return out, slices.Clone(r.u3), nil
}

// Drop says device id can no longer answer (its connection, and with it
// its secagg client, is gone): neither the current step nor any later
// one waits for it, as if it let each deadline pass. What it sent before
// stays (a masked input is still in the sum, and its answer to the
// current step, if it gave one, counts).
func (r *SecAggRound[ID]) Drop(id ID) {
	n, ok := r.num[id]
	if !ok {
		return
	}
	r.gone[n] = true
	if !r.got[n] {
		delete(r.want, n)
	}
}
