package privacy

import (
	"fmt"
	"math"
)

// Spent is what a device ledger (or an owner's ledger of several
// sessions) holds, in the form SpentEpsilon reads:
//
//   - Rho is the sum of the charges' zCDP rho; the transcript is
//     sqrt(2 Rho)-GDP once its discrete noise is coupled with rounded
//     continuous Gaussians (docs/privacy.md, section 2a).
//   - TV is eta, the sum of the charges' coupling terms: the actual
//     K E d RoundedGaussianTV(sigma_Z) of a last-iterate charge, and the
//     proven bound DiscretisationSlack rho_n of any other charge (what
//     mechanism.DiscreteSigma checks). Sums are rounded up.
//   - LastIterate records that some charge is a last-iterate charge
//     (local training with several passes, shared/optim/algo.LocalCharge). That
//     charge is proven only as Gaussian DP plus the total-variation term
//     (a discrete Gaussian has infinite Renyi divergence under a shift
//     off its grid, docs/privacy.md 4b): it is no zCDP charge, so such a
//     ledger is never read through the zCDP (CKS) conversion.
//
// The zero value is an empty ledger.
type Spent struct {
	Rho         float64
	LastIterate bool
	TV          float64
}

// Charged is the Spent of ordinary zCDP charges totalling rho (every
// release but a last-iterate one): its coupling term is the proven bound
// DiscretisationSlack rho.
func Charged(rho float64) Spent {
	return Spent{Rho: rho, TV: slackOf(rho)}
}

// LastIterateCharged is the Spent of one last-iterate charge: rho (the
// charge, LocalCharge hidden steps) and tv, the actual total variation of
// coupling its K E steps' discrete noise, K E d RoundedGaussianTV(sigma_Z).
func LastIterateCharged(rho, tv float64) Spent {
	return Spent{Rho: rho, LastIterate: true, TV: tv}
}

// AnyCharged is the Spent of charges of unknown kind totalling rho (a
// ledger stored before ledgers recorded last-iterate charges): it is read
// as a last-iterate ledger with the slack bound DiscretisationSlack rho as
// its TV term, which every charge any device makes satisfies, so the
// reading is valid whatever the charges were, and never the zCDP one.
func AnyCharged(rho float64) Spent {
	if rho == 0 {
		return Spent{}
	}
	return LastIterateCharged(rho, slackOf(rho))
}

// slackOf is DiscretisationSlack rho, rounded up.
func slackOf(rho float64) float64 { return up(DiscretisationSlack * rho) }

// up is the next float64 above x > 0 (x itself for 0): sums and products
// of coupling terms are rounded up, never down.
func up(x float64) float64 {
	if x == 0 {
		return 0
	}
	return math.Nextafter(x, math.Inf(1))
}

// Validate checks that Rho and TV are finite and >= 0.
func (s Spent) Validate() error {
	if err := checkNonNegative("rho", s.Rho); err != nil {
		return err
	}
	return checkNonNegative("total variation", s.TV)
}

// Add composes two ledgers (adaptive composition: rho and the coupling
// terms add, rounded up); the result is a last-iterate ledger if either
// is.
func (s Spent) Add(t Spent) (Spent, error) {
	if err := s.Validate(); err != nil {
		return Spent{}, err
	}
	if err := t.Validate(); err != nil {
		return Spent{}, err
	}
	tv := s.TV + t.TV
	if s.TV != 0 && t.TV != 0 {
		tv = up(tv) // a sum of two terms may round down
	}
	r := Spent{Rho: s.Rho + t.Rho, LastIterate: s.LastIterate || t.LastIterate, TV: tv}
	if !finite(r.Rho) || !finite(r.TV) {
		return Spent{}, fmt.Errorf("%w: total rho %v, total variation %v", ErrNotFinite, r.Rho, r.TV)
	}
	return r, nil
}

// SpentEpsilon is the one reading of a ledger: the epsilon its holder's
// transcript guarantees at delta. Every epsilon the product shows or
// checks for a device or an owner comes from here.
//
// A ledger of ordinary charges (LastIterate false) reads as the
// smaller of the exact Gaussian-DP bound with the coupling term
// DiscretisationSlack rho (LedgerDelta) and the zCDP bound
// (ZCDPToEpsilon: Canonne, Kamath and Steinke 2020), both valid.
//
// A ledger holding a last-iterate charge is read with Gaussian DP plus
// its actual total-variation term only: the smallest epsilon with
// delta_GDP(sqrt(2 rho), epsilon) + (1 + e^epsilon) TV <= delta
// (SpentDelta). When no epsilon meets delta (TV too large) the error
// wraps ErrNotFinite and no number is shown.
func SpentEpsilon(s Spent, delta float64) (float64, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	if !s.LastIterate {
		return ledgerEpsilon(s.Rho, delta)
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if s.Rho == 0 {
		if 2*s.TV <= delta { // epsilon 0: delta_GDP(0, 0) = 0
			return 0, nil
		}
		return 0, fmt.Errorf("ledger epsilon: %w: total-variation term %g leaves no epsilon at delta %g", ErrNotFinite, s.TV, delta)
	}
	e0, err := GDPToEpsilon(math.Sqrt(2*s.Rho), delta)
	if err != nil {
		return 0, fmt.Errorf("ledger epsilon: %w", err)
	}
	// Beyond e0 + 1000, e^epsilon overflows: no larger epsilon is feasible
	// with TV > 0.
	e, ok, err := gdpEpsilon(s.Rho, s.TV, delta, e0+1000)
	if err != nil {
		return 0, fmt.Errorf("ledger epsilon: %w", err)
	}
	if !ok {
		return 0, fmt.Errorf("ledger epsilon: %w: total-variation term %g leaves no epsilon at delta %g", ErrNotFinite, s.TV, delta)
	}
	return e, nil
}

// SpentDelta is the delta at which a last-iterate ledger guarantees
// epsilon: delta_GDP(sqrt(2 rho), epsilon) + (1 + e^epsilon) TV.
func SpentDelta(s Spent, epsilon float64) (float64, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	d, err := gdpDelta(s.Rho, s.TV, epsilon)
	if err != nil {
		return 0, err
	}
	return result("delta", d)
}
