package privacy

import (
	"fmt"
	"math"
)

// GaussianGDP is the mu of one Gaussian release with L2 sensitivity Delta
// and noise standard deviation sigma: it is exactly mu-GDP with
// mu = Delta/sigma (Dong, Roth and Su 2022, Theorem 2.7).
func GaussianGDP(sensitivity, sigma float64) (float64, error) {
	if err := checkNonNegative("sensitivity", sensitivity); err != nil {
		return 0, err
	}
	if err := checkPositive("sigma", sigma); err != nil {
		return 0, err
	}
	return result("mu", sensitivity/sigma)
}

// ComposeGDP composes mu_1, ..., mu_k-GDP mechanisms: the result is
// sqrt(sum mu_i^2)-GDP (Dong, Roth and Su 2022, Corollary 3.3).
func ComposeGDP(mus ...float64) (float64, error) {
	s := 0.0
	for _, m := range mus {
		if err := checkNonNegative("mu", m); err != nil {
			return 0, err
		}
		s = math.Hypot(s, m)
	}
	return result("mu", s)
}

// PoissonSubsampledGDP is the central-limit approximation of Dong, Roth and
// Su (2022, Corollary 5.4; Bu et al. 2020, eq. (3)) for T steps of the
// Poisson-subsampled Gaussian mechanism with sampling rate q and noise
// multiplier sigma: mu = q sqrt(T (exp(1/sigma^2) - 1)). steps may be
// fractional (an epoch count times N/b), as in the CLT.
//
// This is an asymptotic approximation (T -> infinity with q sqrt(T) fixed),
// not a bound: it can under-state the privacy loss for small T. It is
// provided because the calibration paper's comparison tables use it; the
// product's guarantees use the RDP accountant.
func PoissonSubsampledGDP(q, sigma, steps float64) (float64, error) {
	if err := checkCLT(q, sigma, steps); err != nil {
		return 0, err
	}
	return result("mu", q*math.Sqrt(steps*math.Expm1(1/(sigma*sigma))))
}

// UniformSubsampledGDP is the central-limit approximation of Bu, Dong, Long
// and Su (2020, Theorem 5 / eq. (4)) for T steps of the Gaussian mechanism
// on minibatches drawn uniformly without replacement at rate q:
//
//	mu = sqrt(2) q sqrt(T (e^(1/sigma^2) Phi(1.5/sigma) + 3 Phi(-0.5/sigma) - 2)).
//
// Like PoissonSubsampledGDP it is an approximation, not a bound. This is
// the "f-DP accountant" of the calibration paper's Tables 9-11.
func UniformSubsampledGDP(q, sigma, steps float64) (float64, error) {
	if err := checkCLT(q, sigma, steps); err != nil {
		return 0, err
	}
	v := math.Exp(1/(sigma*sigma))*stdNormalCDF(1.5/sigma) + 3*stdNormalCDF(-0.5/sigma) - 2
	return result("mu", math.Sqrt2*q*math.Sqrt(steps*math.Max(v, 0)))
}

func checkCLT(q, sigma, steps float64) error {
	if err := checkRate(q); err != nil {
		return err
	}
	if err := checkPositive("sigma", sigma); err != nil {
		return err
	}
	return checkNonNegative("steps", steps)
}

// stdNormalCDF is Phi(x).
func stdNormalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// GDPToDelta is the exact privacy profile of mu-GDP (Dong, Roth and Su
// 2022, Corollary 2.13):
//
//	delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2).
func GDPToDelta(mu, epsilon float64) (float64, error) {
	if err := checkNonNegative("mu", mu); err != nil {
		return 0, err
	}
	if !(epsilon >= 0) || math.IsInf(epsilon, 0) {
		return 0, invalid("epsilon = %v, want a finite value >= 0", epsilon)
	}
	if mu == 0 {
		return 0, nil
	}
	a := stdNormalCDF(-epsilon/mu + mu/2)
	b := 0.0
	if c := stdNormalCDF(-epsilon/mu - mu/2); c > 0 {
		b = math.Exp(epsilon + math.Log(c))
	}
	return result("delta", math.Max(0, a-b))
}

// GDPToEpsilon is the smallest epsilon >= 0 with GDPToDelta(mu, epsilon)
// <= delta, found by bisection to an absolute accuracy of 1e-10 and rounded
// up (the returned epsilon is always feasible).
func GDPToEpsilon(mu, delta float64) (float64, error) {
	if err := checkNonNegative("mu", mu); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	d0, err := GDPToDelta(mu, 0)
	if err != nil {
		return 0, err
	}
	if d0 <= delta {
		return 0, nil
	}
	lo, hi := 0.0, math.Max(1, mu)
	for {
		d, err := GDPToDelta(mu, hi)
		if err != nil {
			return 0, fmt.Errorf("gdp to epsilon: %w", err)
		}
		if d <= delta {
			break
		}
		lo, hi = hi, 2*hi
		if hi > 1e12 {
			return 0, fmt.Errorf("gdp to epsilon (mu=%v): %w", mu, ErrNotFinite)
		}
	}
	for hi-lo > 1e-10 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break // adjacent floats (epsilon above about 1e6)
		}
		d, err := GDPToDelta(mu, mid)
		if err != nil {
			return 0, fmt.Errorf("gdp to epsilon: %w", err)
		}
		if d <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// GDPFromEpsilon is the largest mu with GDPToEpsilon(mu, delta) <= epsilon.
func GDPFromEpsilon(epsilon, delta float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	lo, hi := 0.0, 1.0
	for {
		d, err := GDPToDelta(hi, epsilon)
		if err != nil {
			return 0, err
		}
		if d > delta {
			break
		}
		lo, hi = hi, 2*hi
		if hi > 1e12 {
			return 0, fmt.Errorf("gdp from epsilon: %w", ErrNotFinite)
		}
	}
	for hi-lo > 1e-12*hi {
		mid := lo + (hi-lo)/2
		d, err := GDPToDelta(mid, epsilon)
		if err != nil {
			return 0, err
		}
		if d <= delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
