package privacy

import (
	"errors"
	"fmt"
	"math"
)

// The device's guarantee: exact Gaussian DP for discrete Gaussian releases.
//
// A device releases integer vectors V + Z, Z a vector of independent
// discrete Gaussians N_Z(0, sigma^2) with an integer sigma (package
// mechanism). The exact Gaussian-DP accountant (Dong, Roth and Su 2022) is
// a theorem about continuous Gaussian noise; it reaches the discrete
// release through a coupling (docs/privacy.md, section 2a, has the proof):
//
//  1. Post-processing. Let R = round(G), G ~ N(0, s^2) with
//     s^2 = sigma^2 - 1/12. For an integer vector V, V + R = round(V + G)
//     is a post-processing of the continuous Gaussian mechanism V + G, so
//     a release with R in place of Z is exactly (Delta_Z / s)-GDP, and an
//     adaptive sequence of them composes to sqrt(sum mu_n^2)-GDP.
//  2. Total variation. Per coordinate, TV(N_Z(0, sigma^2), R) is at most
//     RoundedGaussianTV(sigma) (Poisson summation and Parseval; the proof
//     bounds the characteristic functions' difference by t^4/2160).
//     Replacing the noise of the releases a sample can affect changes the
//     law of the device's whole transcript by at most eta, the sum of d
//     RoundedGaussianTV(sigma_n) over those releases.
//  3. Together: for every event S and neighbouring data,
//     P[M(D) in S] <= e^eps P[M(D') in S] + delta_GDP(mu, eps) + (1 + e^eps) eta.
//
// mechanism.DiscreteSigma makes every release satisfy
// d RoundedGaussianTV(sigma_Z) <= DiscretisationSlack * rho_n, where rho_n
// is what the ledger charges for the release, and Delta_Z^2 / s^2 <= 2 rho_n.
// So a ledger holding rho (the sum of the charges) bounds the transcript by
// mu = sqrt(2 rho) and eta <= DiscretisationSlack * rho: LedgerDelta.

// MinDiscreteSigma is the smallest integer sigma (grid units) a device's
// discrete Gaussian may have: RoundedGaussianTV is proven for
// sigma >= MinDiscreteSigma.
const MinDiscreteSigma = 64

// roundedGaussianTVConst is c in RoundedGaussianTV = c / sigma^4: the
// proof gives 2.45e-3 for sigma >= 64 (the exact distance is about
// 4.9e-4 / sigma^4, TestRoundedGaussianTV).
const roundedGaussianTVConst = 2.5e-3

// DiscretisationSlack is kappa: every device release satisfies
// d RoundedGaussianTV(sigma_Z) <= kappa rho_n (checked by
// mechanism.DiscreteSigma). With sigma_Z >= 64 and the grid's
// Delta_Z >= 1000 sqrt(d), d 2.5e-3 / sigma_Z^4 <= kappa Delta_Z^2 / (2 sigma_Z^2)
// holds for kappa = 5e-9 / 64^2 = 1.2207e-12; the constant rounds it up.
const DiscretisationSlack = 1.25e-12

// RoundedGaussianTV bounds the total-variation distance between the
// discrete Gaussian N_Z(0, sigma^2) and round(N(0, sigma^2 - 1/12)): it is
// 2.5e-3 / sigma^4 for sigma >= MinDiscreteSigma and +Inf below, where the
// bound is not proven.
func RoundedGaussianTV(sigma float64) float64 {
	if !(sigma >= MinDiscreteSigma) {
		return math.Inf(1)
	}
	s2 := sigma * sigma
	return roundedGaussianTVConst / (s2 * s2)
}

// LedgerDelta is the delta at which a device ledger holding rho (the sum
// of its releases' Delta^2 / (2 sigma^2), see the package comment of this
// file) guarantees epsilon: the exact Gaussian-DP profile of
// mu = sqrt(2 rho) plus the discretisation term (1 + e^epsilon) kappa rho.
func LedgerDelta(rho, epsilon float64) (float64, error) {
	if err := checkNonNegative("rho", rho); err != nil {
		return 0, err
	}
	d, err := ledgerDelta(rho, epsilon)
	if err != nil {
		return 0, err
	}
	return result("delta", d)
}

// ledgerDelta is LedgerDelta without the finiteness check: +Inf when
// e^epsilon overflows.
func ledgerDelta(rho, epsilon float64) (float64, error) {
	return gdpDelta(rho, DiscretisationSlack*rho, epsilon)
}

// gdpDelta is delta_GDP(sqrt(2 rho), epsilon) + (1 + e^epsilon) eta
// without the finiteness check: +Inf when e^epsilon overflows and
// eta > 0.
func gdpDelta(rho, eta, epsilon float64) (float64, error) {
	d, err := GDPToDelta(math.Sqrt(2*rho), epsilon)
	if err != nil {
		return 0, err
	}
	if eta == 0 {
		return d, nil
	}
	return d + (1+math.Exp(epsilon))*eta, nil
}

// LedgerEpsilon is SpentEpsilon(Charged(rho), delta): the epsilon a
// ledger of ordinary (not last-iterate) charges holding rho guarantees
// at delta.
func LedgerEpsilon(rho, delta float64) (float64, error) {
	return SpentEpsilon(Charged(rho), delta)
}

// ledgerEpsilon is SpentEpsilon's reading of a ledger of ordinary
// charges holding rho: the smaller of two valid bounds, the exact Gaussian-DP one
// (LedgerDelta, the tighter one wherever its discretisation term is small)
// and the zCDP one (ZCDPToEpsilon: Canonne, Kamath and Steinke 2020,
// Theorem 14 and Proposition 12, which needs no coupling). Every epsilon
// the product shows or checks for such a ledger comes from here. rho = 0
// gives 0. Above about rho = 5.9e11 (at delta 1e-5) the GDP epsilon is out
// of GDPToEpsilon's range and the zCDP one is returned, finite up to
// rho near math.MaxFloat64; beyond that the error wraps ErrNotFinite and
// no number is shown (callers refuse the release or the session).
func ledgerEpsilon(rho, delta float64) (float64, error) {
	z, err := ZCDPToEpsilon(rho, delta)
	if err != nil {
		return 0, err
	}
	if rho == 0 {
		return 0, nil
	}
	g, ok, err := gdpEpsilon(rho, DiscretisationSlack*rho, delta, z)
	if err != nil {
		return 0, fmt.Errorf("ledger epsilon: %w", err)
	}
	if ok && g < z {
		return g, nil
	}
	return z, nil
}

// gdpEpsilon returns the smallest float64 epsilon in [0, limit] with
// gdpDelta(rho, eta, epsilon) <= delta, or ok =
// false when no epsilon below limit is feasible. Below the feasible
// region gdpDelta decreases in epsilon; its coupling term grows,
// so the feasible set is an interval whose left end is found by bisection
// from a feasible point.
func gdpEpsilon(rho, eta, delta, limit float64) (float64, bool, error) {
	feasible := func(eps float64) (bool, error) {
		d, err := gdpDelta(rho, eta, eps)
		return d <= delta, err
	}
	// The GDP part alone reaches delta at e0; the discretisation term can
	// only move the left end up, so search [e0, limit].
	e0, err := GDPToEpsilon(math.Sqrt(2*rho), delta)
	if errors.Is(err, ErrNotFinite) {
		// mu so large (rho above about 5.9e11 at delta 1e-5) that the
		// GDP epsilon lies beyond GDPToEpsilon's search (1e12): no GDP
		// bound below the finite zCDP one the caller holds.
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if !(e0 < limit) {
		return 0, false, nil
	}
	// Find a feasible point: scan up from e0 in small steps (LedgerDelta's
	// GDP part falls fast, the slack term is tiny until e^eps is huge).
	lo, hi := e0, e0
	found := false
	for step := 1e-9 * math.Max(1, e0); hi <= limit; step *= 2 {
		ok, err := feasible(hi)
		if err != nil {
			return 0, false, err
		}
		if ok {
			found = true
			break
		}
		lo, hi = hi, hi+step
	}
	if !found {
		return 0, false, nil
	}
	if lo == hi { // e0 itself is feasible
		return hi, true, nil
	}
	for {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break // adjacent floats: hi is the left end, rounded up
		}
		ok, err := feasible(mid)
		if err != nil {
			return 0, false, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true, nil
}

// LedgerRho is the inverse of LedgerEpsilon: the largest rho whose
// LedgerEpsilon at delta is at most epsilon (to a relative accuracy of
// 1e-12; the result is always feasible). The planner and every
// calibration from an owner's (epsilon, delta) use it.
func LedgerRho(epsilon, delta float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	// LedgerEpsilon is the minimum of two increasing functions of rho, so
	// {rho : LedgerEpsilon(rho) <= epsilon} is an interval [0, r]. The
	// zCDP inverse is in it; the Gaussian-DP inverse without the
	// discretisation term bounds it from above. Bisect with LedgerEpsilon
	// itself, so that LedgerEpsilon(LedgerRho(e)) <= e exactly.
	lo, err := ZCDPFromEpsilon(epsilon, delta)
	if err != nil {
		return 0, err
	}
	mu, err := GDPFromEpsilon(epsilon, delta)
	if err != nil {
		return 0, err
	}
	hi := mu * mu / 2
	if !(hi > lo) {
		return lo, nil
	}
	fits := func(rho float64) (bool, error) {
		e, err := LedgerEpsilon(rho, delta)
		return e <= epsilon, err
	}
	if ok, err := fits(hi); err != nil || ok {
		return hi, err
	}
	for hi-lo > 1e-12*hi {
		mid := lo + (hi-lo)/2
		ok, err := fits(mid)
		if err != nil {
			return 0, fmt.Errorf("ledger rho: %w", err)
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
