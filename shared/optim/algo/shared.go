package algo

import (
	"fmt"
	"math"

	"browserfl/shared/mechanism"
	"browserfl/shared/privacy"
	"browserfl/shared/session"
)

// Shared noise ("shared").
//
// "shared" is "nc" for a coordinator that sees only the sum of each
// round's surviving updates (secure aggregation): every device keeps its
// own noise-cancellation chain (it sends s + y_N - y_(N-1) and commits y_N
// only when the round includes it), but each y_N is a share of the noise,
// drawn with NCSigma(nc) times ShareScale:
//
//	sigma_share,N^2 = sigma_nc,N^2 (1 + h/GridFactor)^2 / h,   h = t - c,
//
// where t (Threshold) is the fewest updates a round's sum may hold (a
// round with fewer survivors is discarded) and c (Colluders) the most
// cohort members assumed to share their secrets with the coordinator; h
// is then the fewest honest devices whose fresh shares enter each round's
// sum. docs/privacy.md ("Shared noise") proves two figures:
//
//   - the promise: against a coordinator that sees only sums of at least
//     t updates with at most c colluding members, a device's whole
//     session is as private as in "nc" (the session's budget): one
//     replaced sample is hidden by h honest survivors' share chains at
//     once, each carrying 1/h of its shift, and the (1 + h/GridFactor)^2
//     pays for splitting an integer shift into h integer parts;
//   - the floor: against a coordinator that sees everything but the
//     device's own noise (every other member fake), the device's own
//     share alone, costing 1/ShareScale^2 times the promise per release.
//
// The ledger charges each release its promise cost (nc's cost, so that K
// releases spend the budget and the device's refusal rule is nc's); the
// floor is the ledger times FloorFactor.

// ShareScale is the factor a "shared" device's noise carries against
// "nc"'s at the same participation: (1 + h/GridFactor)/sqrt(h) with h =
// SharedHonest. It is 1 for every other algorithm.
func ShareScale(p session.Params) float64 {
	h := p.SharedHonest()
	if h < 1 {
		return 1
	}
	return (1 + float64(h)/mechanism.GridFactor) / math.Sqrt(float64(h))
}

// FloorFactor is what the floor of a "shared" device's privacy costs
// against the promise, release by release: 1/ShareScale^2 (1 for every
// other algorithm, whose one figure is its own).
func FloorFactor(p session.Params) float64 {
	s := ShareScale(p)
	return 1 / (s * s)
}

// validateShared checks the fields only "shared" uses.
func validateShared(p session.Params) []error {
	var errs []error
	if p.Algorithm != "shared" {
		if p.Threshold != 0 {
			errs = append(errs, fmt.Errorf("threshold = %d: only \"shared\" has a threshold", p.Threshold))
		}
		if p.Colluders != 0 {
			errs = append(errs, fmt.Errorf("colluders = %d: only \"shared\" assumes colluders", p.Colluders))
		}
		return errs
	}
	t := p.SharedThreshold()
	switch {
	case p.Threshold < 0 || p.Threshold > p.Cohort:
		errs = append(errs, fmt.Errorf("threshold t = %d, want 1 <= t <= m = %d (0: ceil(%g m))", p.Threshold, p.Cohort, session.DefaultThresholdShare))
	case p.Colluders < 0 || p.Colluders >= t:
		errs = append(errs, fmt.Errorf("colluders c = %d, want 0 <= c < t = %d (the t - c honest survivors carry the noise)", p.Colluders, t))
	}
	return errs
}

// SharedPromiseTV is the total-variation term of the promise's coupling
// (docs/privacy.md, "Shared noise"): the h honest survivors' share chains
// that hide one sample hold at most K shares each, and each of their d
// coordinates is coupled to a rounded continuous Gaussian at a cost of
// privacy.RoundedGaussianTV(sigma_Z) (sigma_Z of that participation), so
// the term is h sum_{k=1..K} d RoundedGaussianTV(sigma_Z,k), rounded up.
func SharedPromiseTV(p session.Params, d int) (float64, error) {
	if p.Algorithm != "shared" {
		return 0, fmt.Errorf("optim: promise of %q: only \"shared\" has one", p.Algorithm)
	}
	if err := Validate(p); err != nil {
		return 0, err
	}
	sens := Sensitivity(p)
	step, err := mechanism.GridStep(sens, d)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnsafe, err)
	}
	tv := 0.0
	nc := NewNC(p) // rho_p solved from the budget once, not at every release
	for n := 1; n <= p.ReleaseCap(); n++ {
		z, err := mechanism.DiscreteSigma(nc.Sigma(n), sens, step, d)
		if err != nil {
			return 0, fmt.Errorf("%w: participation %d: %v", ErrUnsafe, n, err)
		}
		tv += float64(d) * privacy.RoundedGaussianTV(float64(z))
	}
	return math.Nextafter(float64(p.SharedHonest())*tv, math.Inf(1)), nil
}
