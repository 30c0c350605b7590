package plan

import (
	"fmt"
	"math"

	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/privacy"
)

// sharedFigures fills in the two figures of a shared-noise session
// ("shared", docs/privacy.md section 4c), at f.Delta, from the noise
// share each device draws (algo.NCSigma, nc's calibration times
// algo.ShareScale):
//
//   - the floor: against a coordinator that sees everything but the
//     device's own noise (every other member of its cohorts fake), the
//     device's own shares alone: each release of sensitivity
//     algo.Sensitivity under a share of algo.NCSigma costs
//     privacy.GaussianZCDP of them, for the WorstReleases of the worst
//     case;
//   - the promise: against a coordinator that sees only each round's sum
//     of at least Threshold updates, at most Colluders of them its own,
//     one replaced sample is hidden by the h = t - c honest survivors'
//     share chains at once, each carrying 1/h of its shift, split into
//     integer parts at the grid's (1 + h/GridFactor): the floor's rho
//     times (1 + h/GridFactor)^2 / h, read as Gaussian DP with the
//     coupling term of the h chains (algo.SharedPromiseTV).
//
// The dimension comes from the session's model, features and classes;
// without them the coupling term is the proven bound of every charge,
// DiscretisationSlack times the floor's rho for each of the h chains.
func sharedFigures(p optim.Params, f *Figures) error {
	f.Shared = true
	f.Threshold, f.Colluders, f.Honest = p.SharedThreshold(), p.Colluders, p.SharedHonest()
	if f.Honest < 1 {
		return fmt.Errorf("session figures: threshold %d and colluders %d leave no honest survivor", f.Threshold, f.Colluders)
	}
	sens := algo.Sensitivity(p)
	nc := algo.NewNC(p) // rho_p solved from the budget once, not at every release
	var floor privacy.Ledger
	for n := 1; n <= f.WorstReleases; n++ {
		r, err := privacy.GaussianZCDP(sens, nc.Sigma(n))
		if err != nil {
			return fmt.Errorf("session figures: floor of release %d: %w", n, err)
		}
		if err := floor.ChargeRho(r); err != nil {
			return fmt.Errorf("session figures: floor: %w", err)
		}
	}
	floorRho := floor.Spent().Rho
	h := float64(f.Honest)
	promiseRho := floorRho * (1 + h/mechanism.GridFactor) * (1 + h/mechanism.GridFactor) / h
	tv := h * privacy.DiscretisationSlack * floorRho
	if m, err := model.New(p.Model, p.Features, p.Classes); err == nil {
		if tv, err = algo.SharedPromiseTV(p, m.Dim()); err != nil {
			return fmt.Errorf("session figures: %w", err)
		}
	}
	tv = math.Nextafter(tv, math.Inf(1))
	// The promise is a Gaussian-DP statement with its own coupling term,
	// read like a last-iterate charge: GDP and the actual TV term only.
	f.PromiseSpent = privacy.LastIterateCharged(promiseRho, tv)
	var err error
	if f.Promise, err = privacy.SpentEpsilon(f.PromiseSpent, f.Delta); err != nil {
		return fmt.Errorf("session figures: promise: %w", err)
	}
	f.FloorSpent = privacy.Charged(floorRho)
	if f.Floor, err = privacy.SpentEpsilon(f.FloorSpent, f.Delta); err != nil {
		return fmt.Errorf("session figures: floor: %w", err)
	}
	return nil
}

// sharedText is Figures.Text for a shared-noise session: the promise,
// the threshold and colluders it assumes, and the floor, e.g. "ε = 8.00
// at δ = 1e-5 if the server sees only sums of at least 7 updates, none
// of them its own; ε = 29.25 from this device's own noise alone (zCDP ρ
// = 1.388 and 9.554, 40 releases at most)".
func (f Figures) sharedText() string {
	own := "none of them its own"
	if f.Colluders > 0 {
		own = fmt.Sprintf("at most %d of them its own", f.Colluders)
	}
	return fmt.Sprintf("ε = %s at δ = %s if the server sees only sums of at least %d updates, %s; ε = %s from this device's own noise alone (zCDP ρ = %s and %s, %d releases at most)",
		f.PromiseText(), f.DeltaText(), f.Threshold, own, f.FloorText(), FormatRho(f.PromiseSpent.Rho), FormatRho(f.FloorSpent.Rho), f.WorstReleases)
}
