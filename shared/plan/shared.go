package plan

import (
	"fmt"
	"math"

	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/privacy"
)

// SharedFigures are the two figures of a shared-noise session ("shared")
// for one device, both at the owner's delta (docs/privacy.md, "Shared
// noise"):
//
//   - Promise: against a coordinator that sees only each round's sum of at
//     least Threshold updates, with at most Colluders of the cohort on
//     its side. It is the session's budget, read with Gaussian DP and the
//     actual coupling term of the Honest share chains that hide a sample.
//   - Floor: against a coordinator that sees everything but the device's
//     own noise (every other member of its cohorts fake): the device's
//     own shares alone, optim.FloorFactor times the promise's rho.
type SharedFigures struct {
	Threshold, Colluders, Honest int

	PromiseSpent privacy.Spent
	Promise      float64
	FloorSpent   privacy.Spent
	Floor        float64
	Delta        float64
}

// Shared computes a shared-noise session's two figures at the owner's
// delta (0: DefaultDelta). The model's dimension comes from the
// session's model, features and classes; without them the coupling term
// is the proven bound of every charge, DiscretisationSlack times the
// floor's rho for each of the Honest chains.
func Shared(p optim.Params, ownerDelta float64) (SharedFigures, error) {
	if p.Algorithm != "shared" {
		return SharedFigures{}, fmt.Errorf("plan: shared figures of %q: only \"shared\" has two", p.Algorithm)
	}
	f, err := SessionFigures(p, ownerDelta)
	if err != nil {
		return SharedFigures{}, err
	}
	s := SharedFigures{Threshold: p.SharedThreshold(), Colluders: p.Colluders, Honest: p.SharedHonest(), Delta: f.Delta}
	floorRho := f.WorstRho * optim.FloorFactor(p)
	tv := float64(s.Honest) * privacy.DiscretisationSlack * floorRho
	if m, err := model.New(p.Model, p.Features, p.Classes); err == nil {
		if tv, err = optim.SharedPromiseTV(p, m.Dim()); err != nil {
			return SharedFigures{}, fmt.Errorf("plan: %w", err)
		}
	}
	tv = math.Nextafter(tv, math.Inf(1))
	// The promise is a Gaussian-DP statement with its own coupling term,
	// read like a last-iterate charge: GDP and the actual TV term only.
	s.PromiseSpent = privacy.LastIterateCharged(f.WorstRho, tv)
	if s.Promise, err = privacy.SpentEpsilon(s.PromiseSpent, f.Delta); err != nil {
		return SharedFigures{}, fmt.Errorf("plan: promise: %w", err)
	}
	s.FloorSpent = privacy.Charged(floorRho)
	if s.Floor, err = privacy.SpentEpsilon(s.FloorSpent, f.Delta); err != nil {
		return SharedFigures{}, fmt.Errorf("plan: floor: %w", err)
	}
	return s, nil
}

// Text is the one sentence every surface prints for a shared-noise
// session: the promise, the threshold and colluders it assumes, and the
// floor, e.g. "ε = 8.00 at δ = 1e-5 if the server sees only sums of at
// least 35 updates, none of them its own; ε = 89.13 from this device's
// own noise alone".
func (s SharedFigures) Text() string {
	own := "none of them its own"
	if s.Colluders > 0 {
		own = fmt.Sprintf("at most %d of them its own", s.Colluders)
	}
	return fmt.Sprintf("ε = %s at δ = %s if the server sees only sums of at least %d updates, %s; ε = %s from this device's own noise alone",
		FormatEpsilon(s.Promise), FormatDelta(s.Delta), s.Threshold, own, FormatEpsilon(s.Floor))
}
