package privacy

import (
	"fmt"
	"math"
)

// LastIterate describes cyclically-sampled DP-SGD that releases only its
// last iterate: Algorithm 1 of Kong and Ribero, "Privacy of the last
// iterate in cyclically-sampled DP-SGD on nonconvex composite losses"
// (shared/papers/last-iterate-cyclic-dpsgd-rdp.txt). The dataset of Records
// records is split into Records/Batch consecutive batches visited
// cyclically; step t computes the mean g_t of the Batch clipped gradients
// (each clipped to norm Clip) and sets
//
//	X_t = prox_{lambda h}(X_{t-1} - StepSize * g_t + N_t),  N_t ~ N(0, Sigma^2 I).
//
// Sigma is the standard deviation of the noise added to the iterate; a
// DP-SGD implementation that adds N(0, s^2 I) to the mean gradient has
// Sigma = StepSize * s. The neighbouring relation is swap (replace one
// record). Use case in the product: a device that runs Steps local cyclic
// DP-SGD steps on its own Records samples and sends only its final model.
//
// Limits (docs/privacy.md, "Private local training"; tests in
// lastiterate_limits_test.go). The bounds are the paper's as stated; the
// product's local algorithm ("local" in shared/optim) does not charge them,
// for three reasons. (1) Proposition 3.4(b), on which Theorems 4.4 and 4.5
// rest, does not hold for clipped steps: a clipped gradient step on a
// convex smooth loss can expand distances (TestClippedStepCanExpand).
// (2) For a record in the last batch of a one-pass run (T = l),
// Theorem 4.5 gives l/2 times less than one Gaussian step, while its proof
// (Proposition A.4) needs T >= t* + 1, which that record violates
// (TestOnePassLastRecordCost). (3) Every bound needs continuous Gaussian
// noise on the iterate (Lemma A.1(a) shifts the noise by arbitrary real
// vectors); the product's devices add discrete Gaussian noise on a grid.
// Theorem 4.3 avoids (1) and (2) but is at least 4 b^2 l times the one-step
// cost a one-pass run is charged instead.
type LastIterate struct {
	Records  int     // k, number of records, >= 1
	Batch    int     // b, batch size, >= 1 and dividing Records
	Steps    int     // T, number of steps, >= Records/Batch
	StepSize float64 // lambda > 0
	Clip     float64 // C > 0, L2 clipping norm of each per-record gradient
	Sigma    float64 // sigma > 0, std of the Gaussian noise added to the iterate

	// Curvature of the per-record losses, assumption (A2)-(A3):
	// -m/2 |x-y|^2 <= f(x) - f(y) - <grad f(y), x-y> <= M/2 |x-y|^2.
	// Only used when CurvatureKnown is true.
	CurvatureKnown bool
	WeakConvexity  float64 // m >= 0 (0: convex)
	UpperCurvature float64 // M >= 0
}

// StepsPerPass is l = Records/Batch.
func (p LastIterate) StepsPerPass() int { return p.Records / p.Batch }

func (p LastIterate) check() error {
	if p.Records < 1 || p.Batch < 1 {
		return invalid("records = %d, batch = %d, want both >= 1", p.Records, p.Batch)
	}
	if p.Records%p.Batch != 0 {
		return invalid("batch %d does not divide records %d (cyclic batches need l = k/b integral)", p.Batch, p.Records)
	}
	if p.Steps < p.StepsPerPass() {
		return invalid("steps T = %d < steps per pass l = %d; the bounds need T >= l", p.Steps, p.StepsPerPass())
	}
	if err := checkPositive("step size", p.StepSize); err != nil {
		return err
	}
	if err := checkPositive("clip", p.Clip); err != nil {
		return err
	}
	return checkPositive("sigma", p.Sigma)
}

func (p LastIterate) checkCurvature() error {
	if !p.CurvatureKnown {
		return invalid("curvature-dependent bound needs CurvatureKnown")
	}
	if err := checkNonNegative("weak convexity m", p.WeakConvexity); err != nil {
		return err
	}
	if err := checkNonNegative("upper curvature M", p.UpperCurvature); err != nil {
		return err
	}
	if s := p.WeakConvexity + p.UpperCurvature; s > 0 && p.StepSize > 1/(2*s) {
		return invalid("step size %v > 1/(2(m+M)) = %v (Theorem 4.5 needs lambda <= 1/(2(m+M)))", p.StepSize, 1/(2*s))
	}
	return nil
}

// LipschitzConstant is L_lambda(m, M) = sqrt(1 + 2 lambda m [1 + m/(M+m)]),
// equation (12) of the paper (the DP-SGD operator's Lipschitz constant,
// Proposition 3.4(b)); 1 when m = 0. The proof of Proposition 3.4 arrives
// at the smaller 1 + 2 lambda m [1 + m/(2(M+m))]; we use the stated (12),
// which is larger and hence conservative, and matches the paper's remarks
// (L = sqrt 3 at lambda = 1/(2m), M = 0).
func LipschitzConstant(lambda, m, M float64) float64 {
	if m == 0 {
		return 1
	}
	return math.Sqrt(1 + 2*lambda*m*(1+m/(M+m)))
}

// Theta is theta_L(s) of equation (6): 0 for s = 0 and
// L^(2(s-1)) / sum_{j=0}^{s-1} L^(2j) for s >= 1, which equals 1/s at
// L = 1 and (1 - L^-2)/(1 - L^-2s) for L > 1. It lies in (0, 1] for s >= 1.
func Theta(L float64, s int) float64 {
	if s <= 0 {
		return 0
	}
	lnL := math.Log(L)
	if lnL <= 0 {
		return 1 / float64(s)
	}
	// (1 - L^-2)/(1 - L^-2s), stable for L near 1 via expm1.
	return math.Expm1(-2*lnL) / math.Expm1(-2*float64(s)*lnL)
}

// CurvatureIndependentRDP is Theorem 4.3: for any losses,
// D_alpha(X_T || X'_T) <= 8 alpha T (lambda C / sigma)^2, valid for T >= l.
func (p LastIterate) CurvatureIndependentRDP(alpha float64) (float64, error) {
	if err := checkOrder(alpha); err != nil {
		return 0, err
	}
	if err := p.check(); err != nil {
		return 0, fmt.Errorf("last iterate (Thm 4.3): %w", err)
	}
	r := p.StepSize * p.Clip / p.Sigma
	return result("rdp", 8*alpha*float64(p.Steps)*r*r)
}

// WeaklyConvexRDP is Theorem 4.5, equation (21): with E = floor(T/l),
//
//	D_alpha <= 4 alpha (lambda C/(b sigma))^2 [theta_L(T - E l) + E theta_L(l)],  L = L_lambda(m, M),
//
// valid when the losses satisfy (A2)-(A3), lambda <= 1/(2(m+M)) and T >= l.
// With m = 0 it is equation (22), the convex bound.
func (p LastIterate) WeaklyConvexRDP(alpha float64) (float64, error) {
	if err := checkOrder(alpha); err != nil {
		return 0, err
	}
	if err := p.check(); err != nil {
		return 0, fmt.Errorf("last iterate (Thm 4.5): %w", err)
	}
	if err := p.checkCurvature(); err != nil {
		return 0, fmt.Errorf("last iterate (Thm 4.5): %w", err)
	}
	l := p.StepsPerPass()
	E := p.Steps / l
	L := LipschitzConstant(p.StepSize, p.WeakConvexity, p.UpperCurvature)
	r := p.StepSize * p.Clip / (float64(p.Batch) * p.Sigma)
	return result("rdp", 4*alpha*r*r*(Theta(L, p.Steps-E*l)+float64(E)*Theta(L, l)))
}

// BoundedDomainRDP is Theorem 4.4: if every iterate lies in a set of
// diameter d (h the indicator of a bounded convex set), the losses satisfy
// (A2)-(A3) and lambda <= 1/(2(m+M)), then
// D_alpha <= alpha/(2 sigma^2) (L_lambda d + 2 lambda C/b)^2.
func (p LastIterate) BoundedDomainRDP(alpha, diameter float64) (float64, error) {
	if err := checkOrder(alpha); err != nil {
		return 0, err
	}
	if err := p.check(); err != nil {
		return 0, fmt.Errorf("last iterate (Thm 4.4): %w", err)
	}
	if err := p.checkCurvature(); err != nil {
		return 0, fmt.Errorf("last iterate (Thm 4.4): %w", err)
	}
	if err := checkPositive("diameter", diameter); err != nil {
		return 0, fmt.Errorf("last iterate (Thm 4.4): %w", err)
	}
	L := LipschitzConstant(p.StepSize, p.WeakConvexity, p.UpperCurvature)
	s := L*diameter + 2*p.StepSize*p.Clip/float64(p.Batch)
	return result("rdp", alpha*s*s/(2*p.Sigma*p.Sigma))
}

// RDP implements RDPEvent: the smaller of Theorem 4.3 and, when the
// curvature is known, Theorem 4.5. Both are valid under their conditions,
// so the minimum is.
func (p LastIterate) RDP(alpha float64) (float64, error) {
	a, err := p.CurvatureIndependentRDP(alpha)
	if err != nil {
		return 0, err
	}
	if !p.CurvatureKnown {
		return a, nil
	}
	b, err := p.WeaklyConvexRDP(alpha)
	if err != nil {
		return 0, err
	}
	return math.Min(a, b), nil
}

// ZCDP returns the standard zCDP rho the RDP bound amounts to: every bound
// of the paper has the form alpha * B / sigma^2, i.e. rho = RDP(alpha)/alpha,
// so a last-iterate release can be charged to a device's Ledger with
// Ledger.ChargeRho.
func (p LastIterate) ZCDP() (float64, error) {
	r, err := p.RDP(2)
	if err != nil {
		return 0, err
	}
	return r / 2, nil
}

// SigmaForRDP returns the smallest iterate-noise sigma for which p.RDP(alpha)
// <= rdp, ignoring p.Sigma. Every bound of the paper is alpha*B/sigma^2,
// so sigma = sqrt(alpha*B/rdp) exactly. (Corollary C.2 of the paper states
// a closed form for sigma that is too small by a factor 4*alpha; see the
// test. This function does not use it.)
func (p LastIterate) SigmaForRDP(alpha, rdp float64) (float64, error) {
	if err := checkPositive("rdp", rdp); err != nil {
		return 0, err
	}
	q := p
	q.Sigma = 1
	r, err := q.RDP(alpha)
	if err != nil {
		return 0, err
	}
	return result("sigma", math.Sqrt(r/rdp))
}
