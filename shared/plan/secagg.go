package plan

import (
	"fmt"

	"browserfl/shared/optim/algo"
	"browserfl/shared/optim/plausible"
	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// SecAgg is the secure aggregation of a shared-noise session
// (wire.SharedNoiseAlgorithm), derived from its public parameters only,
// so that the coordinator and every device compute the same: the one
// home of the threshold, the ring and the grid a round runs with.
type SecAgg struct {
	// Threshold is t (optim.Params.SharedThreshold): no sum of fewer
	// updates is unmasked, and the noise shares are calibrated to it.
	Threshold int
	// MaxClients is the cohort m: the most devices a round's sum holds.
	MaxClients int
	// Dim is the model dimension d.
	Dim int
	// Step is the grid step: the sum's integers times Step are the sum
	// of the releases (plausible.SharedGrid).
	Step float64
	// MaxAbs bounds every coordinate of an honest release in grid units
	// (plausible.SharedGrid).
	MaxAbs int64
	// Bits is the ring's k (secagg.RingBits of MaxAbs and MaxClients):
	// no sum of at most m honest releases wraps.
	Bits int
}

// SessionSecAgg returns the secure aggregation of session s, which must
// be a shared-noise session whose threshold exceeds half its cohort (the
// consistency round's condition, secagg.Params.Threshold).
func SessionSecAgg(s wire.SessionParams) (SecAgg, error) {
	p := s
	if p.Algorithm != wire.SharedNoiseAlgorithm {
		return SecAgg{}, fmt.Errorf("plan: secure aggregation of a %q session: only %q runs it", p.Algorithm, wire.SharedNoiseAlgorithm)
	}
	if err := algo.Validate(p); err != nil {
		return SecAgg{}, fmt.Errorf("plan: secure aggregation: %w", err)
	}
	step, maxAbs, err := plausible.SharedGrid(p, s.Dim)
	if err != nil {
		return SecAgg{}, fmt.Errorf("plan: secure aggregation: %w", err)
	}
	a := SecAgg{Threshold: p.SharedThreshold(), MaxClients: p.Cohort, Dim: s.Dim, Step: step, MaxAbs: maxAbs}
	if a.Bits, err = secagg.RingBits(maxAbs, a.MaxClients); err != nil {
		return SecAgg{}, fmt.Errorf("plan: secure aggregation: %w", err)
	}
	if err := a.Params(secagg.SessionID{}, 0).Validate(); err != nil {
		return SecAgg{}, fmt.Errorf("plan: secure aggregation of cohort %d, threshold %d: %w", a.MaxClients, a.Threshold, err)
	}
	return a, nil
}

// Params are the secagg parameters of one round: the session's, with the
// round's secagg session id and round number (wire.SecAggRound).
func (a SecAgg) Params(session secagg.SessionID, round uint64) secagg.Params {
	return secagg.Params{Session: session, Round: round, Threshold: a.Threshold, MaxClients: a.MaxClients, Dim: a.Dim, MaxAbs: a.MaxAbs}
}
