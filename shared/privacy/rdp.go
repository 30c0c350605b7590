package privacy

import (
	"fmt"
	"math"
)

// RDPEvent is a mechanism whose Rényi-DP curve is known: RDP(alpha) bounds
// D_alpha(M(x) || M(x')) over neighbours x, x' for every order alpha > 1.
// An event's meaning never changes once composed into an accountant.
type RDPEvent interface {
	RDP(alpha float64) (float64, error)
}

// Gaussian is Steps releases of the Gaussian mechanism with L2 sensitivity
// Sensitivity and noise standard deviation Sigma, without subsampling.
// RDP(alpha) = Steps * alpha * Sensitivity^2 / (2 Sigma^2) (Mironov 2017,
// Proposition 7).
type Gaussian struct {
	Sensitivity float64 // L2 sensitivity, >= 0
	Sigma       float64 // noise standard deviation, > 0
	Steps       int     // number of releases, >= 0
}

// RDP implements RDPEvent.
func (g Gaussian) RDP(alpha float64) (float64, error) {
	if err := checkOrder(alpha); err != nil {
		return 0, err
	}
	if g.Steps < 0 {
		return 0, invalid("steps = %d, want >= 0", g.Steps)
	}
	rho, err := GaussianZCDP(g.Sensitivity, g.Sigma)
	if err != nil {
		return 0, err
	}
	return result("rdp", float64(g.Steps)*alpha*rho)
}

// ZCDP is a mechanism known to be Rho-zCDP (standard rho); its RDP curve is
// alpha * Rho.
type ZCDP struct {
	Rho float64 // standard zCDP rho, >= 0
}

// RDP implements RDPEvent.
func (z ZCDP) RDP(alpha float64) (float64, error) {
	if err := checkOrder(alpha); err != nil {
		return 0, err
	}
	if err := checkNonNegative("rho", z.Rho); err != nil {
		return 0, err
	}
	return result("rdp", alpha*z.Rho)
}

// SubsampledGaussian is Steps steps of the Poisson-subsampled Gaussian
// mechanism: each record is included independently with probability Rate,
// the included records' contributions (each of L2 norm <= 1 after
// clipping) are summed and N(0, NoiseMultiplier^2 I) is added. The
// neighbouring relation is add/remove one record. This is DP-SGD with
// noise multiplier sigma = noise std / clipping norm.
//
// RDP is computed from Mironov, Talwar and Zhang (2019), "Rényi
// Differential Privacy of the Sampled Gaussian Mechanism", Section 3.3:
// the exact binomial expansion of A_alpha for integer orders and the
// two-sided series for fractional orders, whose truncation error is
// bounded and added (so the result is an upper bound).
type SubsampledGaussian struct {
	Rate            float64 // Poisson sampling rate q in (0, 1]
	NoiseMultiplier float64 // sigma > 0
	Steps           int     // number of steps, >= 0
}

// RDP implements RDPEvent.
func (s SubsampledGaussian) RDP(alpha float64) (float64, error) {
	if s.Steps < 0 {
		return 0, invalid("steps = %d, want >= 0", s.Steps)
	}
	r, err := SubsampledGaussianRDP(s.Rate, s.NoiseMultiplier, alpha)
	if err != nil {
		return 0, err
	}
	return result("rdp", float64(s.Steps)*r)
}

func checkOrder(alpha float64) error {
	if !(alpha > 1) || math.IsInf(alpha, 0) {
		return invalid("order alpha = %v, want a finite alpha > 1", alpha)
	}
	return nil
}

// SubsampledGaussianRDP is the RDP at order alpha of one step of the
// Poisson-subsampled Gaussian mechanism with rate q and noise multiplier
// sigma (see SubsampledGaussian): ln(A_alpha)/(alpha-1), where
// A_alpha = E_{z~N(0,sigma^2)}[((1-q) + q exp((2z-1)/(2 sigma^2)))^alpha].
// The result never exceeds the unsampled Gaussian's alpha/(2 sigma^2)
// (subsampling cannot hurt: A_alpha is convex in the mixture weight).
func SubsampledGaussianRDP(q, sigma, alpha float64) (float64, error) {
	if err := checkRate(q); err != nil {
		return 0, err
	}
	if err := checkPositive("sigma", sigma); err != nil {
		return 0, err
	}
	if err := checkOrder(alpha); err != nil {
		return 0, err
	}
	full := alpha / (2 * sigma * sigma)
	if !finite(full) {
		return 0, fmt.Errorf("%w: alpha/(2 sigma^2) overflows (alpha=%v, sigma=%v)", ErrNotFinite, alpha, sigma)
	}
	if q == 1 {
		return full, nil
	}
	var logA float64
	if alpha == math.Trunc(alpha) && alpha <= 1e6 {
		logA = logAInteger(q, sigma, int(alpha))
	} else {
		var err error
		logA, err = logAFractional(q, sigma, alpha)
		if err != nil {
			return 0, err
		}
	}
	r := logA / (alpha - 1)
	if !(r < full) { // also catches NaN
		r = full
	}
	return result("rdp", math.Max(r, 0))
}

// logAInteger is ln A_alpha for integer alpha >= 2 by the binomial
// expansion (Mironov, Talwar and Zhang 2019, Section 3.3, integer case):
// A_alpha = sum_k C(alpha,k) (1-q)^(alpha-k) q^k exp((k^2-k)/(2 sigma^2)).
func logAInteger(q, sigma float64, alpha int) float64 {
	la := float64(alpha)
	l1q, lq := math.Log1p(-q), math.Log(q)
	acc := math.Inf(-1)
	for k := 0; k <= alpha; k++ {
		kf := float64(k)
		t := logBinomAbs(la, kf) + (la-kf)*l1q + kf*lq + (kf*kf-kf)/(2*sigma*sigma)
		acc = logAddExp(acc, t)
	}
	return acc
}

// logAFractional is ln A_alpha for real alpha > 1 by the two series of
// Mironov, Talwar and Zhang (2019), Section 3.3, split at
// z0 = sigma^2 ln(1/q - 1) + 1/2:
//
//	A1 = sum_i C(alpha,i) (1-q)^(alpha-i) q^i exp((i^2-i)/(2 sigma^2)) erfc((i-z0)/(sqrt2 sigma))/2
//	A2 = sum_i C(alpha,i) q^(alpha-i) (1-q)^i exp((j^2-j)/(2 sigma^2)) erfc((z0-j)/(sqrt2 sigma))/2, j = alpha-i.
//
// For i > alpha+1 the binomial coefficients alternate in sign and the
// magnitudes of the combined terms decrease monotonically, so the tail
// after truncation is bounded by the first omitted term, which is added to
// make the result an upper bound.
func logAFractional(q, sigma, alpha float64) (float64, error) {
	z0 := sigma*sigma*math.Log(1/q-1) + 0.5
	l1q, lq := math.Log1p(-q), math.Log(q)
	s2 := 2 * sigma * sigma
	pos, neg := math.Inf(-1), math.Inf(-1) // log of the positive and negative parts
	const maxTerms = 100000
	const relTol = -36.0 // stop when a term is below e^-36 (2e-16) of the sum
	for i := 0; i < maxTerms; i++ {
		fi := float64(i)
		lb, sign := logBinom(alpha, fi)
		j := alpha - fi
		t1 := lb + (alpha-fi)*l1q + fi*lq + (fi*fi-fi)/s2 + logErfc((fi-z0)/(math.Sqrt2*sigma)) - math.Ln2
		t2 := lb + j*lq + fi*l1q + (j*j-j)/s2 + logErfc((z0-j)/(math.Sqrt2*sigma)) - math.Ln2
		t := logAddExp(t1, t2)
		if sign > 0 {
			pos = logAddExp(pos, t)
		} else {
			neg = logAddExp(neg, t)
		}
		if fi > alpha+1 && (t-pos < relTol || i == maxTerms-1) {
			// Tail bound: the rest is an alternating series with
			// decreasing terms, bounded in magnitude by this term. At
			// the term cap (slow polynomial decay, alpha near 1 and q
			// near 1/2) the bound is looser but still valid.
			pos = logAddExp(pos, t)
			return logSub(pos, neg)
		}
	}
	return 0, fmt.Errorf("%w: series for A_alpha did not converge (q=%v, sigma=%v, alpha=%v)", ErrNotFinite, q, sigma, alpha)
}

// logBinom returns ln|C(alpha, k)| and its sign for real alpha and integer k >= 0.
func logBinom(alpha, k float64) (float64, int) {
	a, _ := math.Lgamma(alpha + 1)
	b, _ := math.Lgamma(k + 1)
	c, sc := math.Lgamma(alpha - k + 1)
	if alpha-k+1 <= 0 && alpha-k+1 == math.Trunc(alpha-k+1) {
		return math.Inf(-1), 1 // pole: C(alpha,k) = 0 for integer alpha < k
	}
	return a - b - c, sc
}

func logBinomAbs(alpha, k float64) float64 {
	v, _ := logBinom(alpha, k)
	return v
}

// logErfc is ln erfc(x), accurate also where erfc underflows.
func logErfc(x float64) float64 {
	if x < 25 {
		return math.Log(math.Erfc(x))
	}
	// Asymptotic series erfc(x) = exp(-x^2)/(x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6) + ...);
	// at x >= 25 the first omitted term is below 2e-11 relative.
	x2 := x * x
	return -x2 - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log1p(-1/(2*x2)+3/(4*x2*x2)-15/(8*x2*x2*x2))
}

// logAddExp is ln(e^a + e^b).
func logAddExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// logSub is ln(e^a - e^b) for a > b.
func logSub(a, b float64) (float64, error) {
	if math.IsInf(b, -1) {
		return a, nil
	}
	if !(a > b) {
		return 0, fmt.Errorf("%w: cancellation in A_alpha series", ErrNotFinite)
	}
	return a + math.Log1p(-math.Exp(b-a)), nil
}
