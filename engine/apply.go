package engine

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// Included returns the ids of delivered updates that are still cohort
// members when the round closes, sorted: the order in which their
// vectors are summed and their devices told.
func Included[ID cmp.Ordered, U any](delivered map[ID]U, cohort map[ID]bool) []ID {
	ids := make([]ID, 0, len(delivered))
	for _, id := range slices.Sorted(maps.Keys(delivered)) {
		if cohort[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

// Contribution is one included update as the apply stage needs it.
type Contribution struct {
	// Vec is the decoded vector. It is nil for a member of an edge's
	// aggregate whose sum another member carries.
	Vec []float64
	// Payload is the encoded update; only a server half without
	// optim.SumApplier reads it.
	Payload []byte
}

// ErrNoPayload is returned by Apply when a server half without ApplySum
// is given a contribution without its payload.
var ErrNoPayload = errors.New("engine: a server half without ApplySum needs every payload")

// Apply applies round t's included contributions, in the sorted order of
// their devices, to srv: their vectors summed into sum (reused; length
// the model's dimension) and handed to ApplySum with the number of
// updates, or for a server half without it, their payloads to Apply.
func Apply(srv optim.Server, t int, sum []float64, included []Contribution) error {
	sa, ok := srv.(optim.SumApplier)
	if !ok {
		updates := make([]optim.Update, len(included))
		for i, c := range included {
			if c.Payload == nil {
				return fmt.Errorf("round %d: %w", t, ErrNoPayload)
			}
			updates[i] = optim.Update{T: t, Payload: c.Payload}
		}
		return srv.Apply(t, updates)
	}
	vs := make([][]float64, 0, len(included))
	for _, c := range included {
		if c.Vec != nil {
			vs = append(vs, c.Vec)
		}
	}
	optim.SumVectors(sum, vs)
	return sa.ApplySum(t, sum, len(included))
}

// Servable reports whether the server half's next round can be sent: its
// model and gradient estimate finite and the round frame encodable.
func Servable(s optim.Server, deadlineMillis int) error {
	r := s.Next()
	if err := mechanism.CheckFinite(s.Model()); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if e, ok := s.(optim.Estimator); ok {
		if err := mechanism.CheckFinite(e.Estimate()); err != nil {
			return fmt.Errorf("gradient estimate: %w", err)
		}
	}
	if _, err := wire.EncodeRound(wire.RoundFrame{T: r.T, DeadlineMillis: deadlineMillis, X: r.X, XPrev: r.XPrev}); err != nil {
		return fmt.Errorf("round %d frame: %w", r.T, err)
	}
	return nil
}
