package privacy

import (
	"fmt"
	"math"
)

// ZCDPToEpsilonBS is the Bun–Steinke (2016, Proposition 1.3) conversion:
// rho-zCDP implies (rho + 2 sqrt(rho ln(1/delta)), delta)-DP.
func ZCDPToEpsilonBS(rho, delta float64) (float64, error) {
	if err := checkNonNegative("rho", rho); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	return result("epsilon", rho+2*math.Sqrt(rho*math.Log(1/delta)))
}

// ZCDPToEpsilon converts rho-zCDP to (epsilon, delta)-DP with the
// Canonne–Kamath–Steinke (2020, Proposition 12 / Corollary 13) bound,
//
//	epsilon = inf_{alpha > 1} alpha rho + ln(1 - 1/alpha) - (ln delta + ln alpha)/(alpha - 1),
//
// which is never worse than ZCDPToEpsilonBS (the smaller of the two is
// returned, so this holds by construction). rho = 0 gives 0.
func ZCDPToEpsilon(rho, delta float64) (float64, error) {
	bs, err := ZCDPToEpsilonBS(rho, delta)
	if err != nil {
		return 0, err
	}
	if rho == 0 {
		return 0, nil
	}
	f := func(alpha float64) float64 {
		return alpha*rho + math.Log1p(-1/alpha) - (math.Log(delta)+math.Log(alpha))/(alpha-1)
	}
	eps := minimizeOverOrder(f)
	if !(eps < bs) { // NaN-safe: keep the Bun–Steinke value unless CKS is smaller
		eps = bs
	}
	return result("epsilon", math.Max(eps, 0))
}

// minimizeOverOrder returns (an upper bound on) inf_{alpha>1} f(alpha) for
// a function that is unimodal in ln(alpha-1): a grid over
// alpha-1 in [1e-6, 1e8] followed by a golden-section refinement around the
// best grid point. Any value it returns is f at some alpha > 1, so for a
// valid conversion bound the result is itself valid; the search only
// affects tightness.
func minimizeOverOrder(f func(alpha float64) float64) float64 {
	const lo, hi, n = -6 * math.Ln10, 8 * math.Ln10, 281
	g := func(u float64) float64 {
		v := f(1 + math.Exp(u))
		if math.IsNaN(v) {
			return math.Inf(1)
		}
		return v
	}
	step := (hi - lo) / (n - 1)
	best, bestU := math.Inf(1), lo
	for i := 0; i < n; i++ {
		u := lo + float64(i)*step
		if v := g(u); v < best {
			best, bestU = v, u
		}
	}
	a, b := bestU-step, bestU+step
	const phi = 0.6180339887498949
	c, d := b-phi*(b-a), a+phi*(b-a)
	fc, fd := g(c), g(d)
	for i := 0; i < 60; i++ {
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - phi*(b-a)
			fc = g(c)
		} else {
			a, c, fc = c, d, fd
			d = a + phi*(b-a)
			fd = g(d)
		}
	}
	return math.Min(best, math.Min(fc, fd))
}

// ZCDPFromEpsilon is the inverse of ZCDPToEpsilon: the largest rho whose
// conversion at delta is at most epsilon (to a relative accuracy of 1e-12).
// The planner uses it to turn an owner's (epsilon, delta) budget into a
// zCDP budget.
func ZCDPFromEpsilon(epsilon, delta float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	// The Bun–Steinke inverse is feasible (CKS is never larger), so it
	// is a lower bracket.
	lo, err := ZCDPFromEpsilonBS(epsilon, delta)
	if err != nil {
		return 0, err
	}
	// epsilon(rho) >= rho - ln(1/delta)... is not a clean bound, so find
	// an infeasible upper bracket by doubling.
	hi := math.Max(2*lo, epsilon)
	for i := 0; ; i++ {
		e, err := ZCDPToEpsilon(hi, delta)
		if err != nil {
			return 0, fmt.Errorf("zcdp from epsilon: %w", err)
		}
		if e > epsilon {
			break
		}
		lo = hi
		hi *= 2
		if i > 200 {
			return 0, fmt.Errorf("zcdp from epsilon: %w: no upper bracket", ErrNotFinite)
		}
	}
	for hi-lo > 1e-12*hi {
		mid := lo + (hi-lo)/2
		e, err := ZCDPToEpsilon(mid, delta)
		if err != nil {
			return 0, fmt.Errorf("zcdp from epsilon: %w", err)
		}
		if e <= epsilon {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// ZCDPFromEpsilonBS inverts the Bun–Steinke conversion in closed form:
// rho = (sqrt(L + epsilon) - sqrt(L))^2 with L = ln(1/delta).
func ZCDPFromEpsilonBS(epsilon, delta float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	L := math.Log(1 / delta)
	// (sqrt(L+e) - sqrt(L))^2 = e^2 / (sqrt(L+e) + sqrt(L))^2, stable form.
	s := math.Sqrt(L+epsilon) + math.Sqrt(L)
	return result("rho", epsilon*epsilon/(s*s))
}
