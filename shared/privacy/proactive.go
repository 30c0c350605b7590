package privacy

import (
	"fmt"
	"math"
)

// This file implements the a-priori calibration of van Dijk, Nguyen,
// Nguyen, Nguyen and Nguyen, "Proactive DP: A Multiple Target Optimization
// Framework for DP-SGD" (shared/papers/proactive-dp-dpsgd-calibration.txt),
// Theorem 3.1 and Theorem B.4. Their DP-SGD samples each round's
// minibatch of expected size s_i from a local data set of N records,
// clips per-record gradients to C and adds N(0, C^2 sigma^2) noise; K =
// sum s_i gradient computations, k = K/N epochs, T rounds, mean sample
// size s = K/T and theta = s_max/s. The neighbouring relation is
// add/remove one record (probabilistic sampling, paper footnote 14).

// ProactivePlan is the input of the calibration: a target (Epsilon, Delta),
// the data size, the number of epochs and the sample-size variation.
type ProactivePlan struct {
	Epsilon float64 // target epsilon > 0 (Theorem 3.1 needs < 0.5)
	Delta   float64 // target delta in (0, 1) (Theorem 3.1 needs <= 1/N)
	Records int     // N, local data set size (Theorem 3.1 needs >= 10000)
	Epochs  float64 // k = K/N > 0
	Theta   float64 // s_max / mean sample size, >= 1 (1: constant sample size; Theorem 3.1 needs <= 6.85)
	// Sigma is the noise multiplier. 0 (the default) chooses it by (6)/(35)
	// with equality. A larger value is accepted by TheoremB4 (whose gamma
	// and condition (33) then use it); Theorem31 requires equality.
	Sigma float64
}

// ProactiveResult is what the calibration chooses.
type ProactiveResult struct {
	Sigma         float64 // noise multiplier sqrt(2(eps + ln(1/delta))/eps), eq. (6)/(35)
	Gamma         float64 // smallest gamma of Theorem 3.1 / B.4
	MinRounds     float64 // lower bound on T: gamma theta^2 k^2/eps, eq. (8)/(34) (and (32) for B.4)
	Rounds        int     // ceil(MinRounds): the admissible T closest to the bound
	MeanSample    float64 // s = k N / Rounds, the mean sample size at Rounds
	AsymMinRounds float64 // theta^2 k^2/(2 eps): below this, Theorem 3.2 shows (eps, delta) is violated asymptotically
}

// ProactiveSigma is equation (6): sigma = sqrt(2 (eps + ln(1/delta)) / eps).
func ProactiveSigma(epsilon, delta float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	return result("sigma", math.Sqrt(2*(epsilon+math.Log(1/delta))/epsilon))
}

// ProactiveEpsilon inverts equation (6) for a given sigma: eps = 2 ln(1/delta)/(sigma^2 - 2),
// which needs sigma^2 > 2.
func ProactiveEpsilon(sigma, delta float64) (float64, error) {
	if err := checkPositive("sigma", sigma); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if sigma*sigma <= 2 {
		return 0, invalid("sigma = %v, equation (6) needs sigma^2 > 2", sigma)
	}
	return result("epsilon", 2*math.Log(1/delta)/(sigma*sigma-2))
}

// proactiveGammaRHS is the right-hand side of the gamma condition of
// Theorem 3.1 / B.4 at alphaBar = eps/(gamma k); +Inf outside its domain
// (alphaBar >= 1 or sigma(1-alphaBar) <= 2e sqrt(alphaBar)).
func proactiveGammaRHS(alphaBar, sigma float64) float64 {
	sa := math.Sqrt(alphaBar)
	den := sigma*(1-alphaBar) - 2*math.E*sa
	if !(alphaBar < 1) || !(den > 0) {
		return math.Inf(1)
	}
	inner := sigma/((1-sa)*(1-sa)) + math.Pow(math.E, 3)/(sigma*den)
	return 2/(1-alphaBar) + 16*alphaBar/(1-alphaBar)*inner*math.Exp(3/(sigma*sigma))
}

// ProactiveGamma is the smallest gamma with
//
//	gamma >= 2/(1-a) + 2^4 a/(1-a) (sigma/(1-sqrt a)^2 + e^3/(sigma (sigma(1-a) - 2e sqrt a))) e^(3/sigma^2),  a = eps/(gamma k).
//
// The right-hand side decreases in gamma, so the solutions form [gamma*, inf)
// and gamma* is found by bisection on gamma - RHS(gamma) (to 1e-12
// relative, rounded up so the returned gamma satisfies the inequality).
func ProactiveGamma(epsilon, sigma, epochs float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if err := checkPositive("sigma", sigma); err != nil {
		return 0, err
	}
	if err := checkPositive("epochs", epochs); err != nil {
		return 0, err
	}
	f := func(g float64) float64 { return g - proactiveGammaRHS(epsilon/(g*epochs), sigma) }
	lo, hi := 2.0, 4.0
	for f(hi) < 0 {
		lo, hi = hi, 2*hi
		if hi > 1e12 {
			return 0, fmt.Errorf("proactive gamma: %w: no gamma up to 1e12 (eps=%v, sigma=%v, k=%v)", ErrNotFinite, epsilon, sigma, epochs)
		}
	}
	for hi-lo > 1e-12*hi {
		mid := lo + (hi-lo)/2
		if f(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

func (p ProactivePlan) check() error {
	if err := checkEpsilon(p.Epsilon); err != nil {
		return err
	}
	if err := checkDelta(p.Delta); err != nil {
		return err
	}
	if p.Records < 1 {
		return invalid("records N = %d, want >= 1", p.Records)
	}
	if err := checkPositive("epochs", p.Epochs); err != nil {
		return err
	}
	if !(p.Theta >= 1) || math.IsInf(p.Theta, 0) {
		return invalid("theta = %v, want a finite theta >= 1 (s_max/mean)", p.Theta)
	}
	return nil
}

func (p ProactivePlan) base() (ProactiveResult, error) {
	var r ProactiveResult
	var err error
	if r.Sigma, err = ProactiveSigma(p.Epsilon, p.Delta); err != nil {
		return r, err
	}
	if p.Sigma != 0 {
		if !(p.Sigma >= r.Sigma*(1-1e-12)) || math.IsInf(p.Sigma, 0) {
			return r, invalid("sigma = %v below sqrt(2(eps + ln(1/delta))/eps) = %v, condition (35)", p.Sigma, r.Sigma)
		}
		r.Sigma = p.Sigma
	}
	if r.Gamma, err = ProactiveGamma(p.Epsilon, r.Sigma, p.Epochs); err != nil {
		return r, err
	}
	k2 := p.Epochs * p.Epochs
	r.MinRounds = r.Gamma * p.Theta * p.Theta * k2 / p.Epsilon
	r.AsymMinRounds = p.Theta * p.Theta * k2 / (2 * p.Epsilon)
	return r, nil
}

func (p ProactivePlan) finish(r ProactiveResult) (ProactiveResult, error) {
	K := p.Epochs * float64(p.Records)
	if r.MinRounds > K {
		return r, invalid("minimum rounds %.0f exceed the K = kN = %.0f gradient computations (mean sample size < 1)", r.MinRounds, K)
	}
	if r.MinRounds > math.MaxInt32 {
		return r, fmt.Errorf("%w: minimum rounds %v", ErrNotFinite, r.MinRounds)
	}
	r.Rounds = int(math.Ceil(r.MinRounds))
	r.MeanSample = K / float64(r.Rounds)
	return r, nil
}

// Theorem31 applies Theorem 3.1: sigma from (6), gamma, and T >= gamma
// theta^2 k^2/eps from (8). It returns an error wrapping
// ErrInvalidParameter when a condition of the theorem fails: eps < 0.5,
// delta <= 1/N, N >= 10000, theta <= 6.85, (2/e)^2 k^2 >= 1/2 + ln(1/delta),
// or T <= K.
func (p ProactivePlan) Theorem31() (ProactiveResult, error) {
	if err := p.check(); err != nil {
		return ProactiveResult{}, fmt.Errorf("theorem 3.1: %w", err)
	}
	switch {
	case !(p.Epsilon < 0.5):
		return ProactiveResult{}, invalid("theorem 3.1 needs epsilon < 0.5, got %v (use TheoremB4)", p.Epsilon)
	case p.Delta > 1/float64(p.Records):
		return ProactiveResult{}, invalid("theorem 3.1 needs delta <= 1/N = %v, got %v", 1/float64(p.Records), p.Delta)
	case p.Records < 10000:
		return ProactiveResult{}, invalid("theorem 3.1 assumes N >= 10000, got %d", p.Records)
	case p.Theta > 6.85:
		return ProactiveResult{}, invalid("theorem 3.1 assumes theta <= 6.85, got %v", p.Theta)
	case p.Sigma != 0 && math.Abs(p.Sigma-math.Sqrt(2*(p.Epsilon+math.Log(1/p.Delta))/p.Epsilon)) > 1e-12*p.Sigma:
		return ProactiveResult{}, invalid("theorem 3.1 needs sigma to satisfy (6) with equality; leave Sigma 0 or use TheoremB4")
	case (2/math.E)*(2/math.E)*p.Epochs*p.Epochs < 0.5+math.Log(1/p.Delta):
		return ProactiveResult{}, invalid("theorem 3.1 condition (7) fails: (2/e)^2 k^2 = %v < 1/2 + ln(1/delta) = %v",
			(2/math.E)*(2/math.E)*p.Epochs*p.Epochs, 0.5+math.Log(1/p.Delta))
	}
	r, err := p.base()
	if err != nil {
		return r, fmt.Errorf("theorem 3.1: %w", err)
	}
	r, err = p.finish(r)
	if err != nil {
		return r, fmt.Errorf("theorem 3.1: %w", err)
	}
	return r, nil
}

// proactiveH is h(x) = (sqrt(1 + (e/x)^2) - e/x)^2 of Theorem B.4.
func proactiveH(x float64) float64 {
	a := math.E / x
	v := math.Sqrt(1+a*a) - a
	return v * v
}

// TheoremB4 applies Theorem B.4, valid for any eps > 0 and delta: sigma
// meets (35) with equality; T must satisfy (34), T >= gamma theta^2 k^2/eps,
// and (32), T >= theta k max{e sigma, 1/h(sigma)} (sigma of (35)); (33),
// eps <= gamma h(sigma) k, must hold or an error is returned.
func (p ProactivePlan) TheoremB4() (ProactiveResult, error) {
	if err := p.check(); err != nil {
		return ProactiveResult{}, fmt.Errorf("theorem B.4: %w", err)
	}
	r, err := p.base()
	if err != nil {
		return r, fmt.Errorf("theorem B.4: %w", err)
	}
	if c33 := r.Gamma * proactiveH(r.Sigma) * p.Epochs; p.Epsilon > c33 {
		return r, invalid("theorem B.4 condition (33) fails: eps = %v > gamma h(sigma) k = %v", p.Epsilon, c33)
	}
	// (32): s <= g(sigma_35)/theta N with g(x) = min{1/(e x), h(x)} and
	// sigma_35 = sqrt(2(eps + ln(1/delta))/eps), i.e. T >= theta k / g(sigma_35).
	s35, _ := ProactiveSigma(p.Epsilon, p.Delta)
	g := math.Min(1/(math.E*s35), proactiveH(s35))
	r.MinRounds = math.Max(r.MinRounds, p.Theta*p.Epochs/g)
	r, err = p.finish(r)
	if err != nil {
		return r, fmt.Errorf("theorem B.4: %w", err)
	}
	return r, nil
}

// ProactiveCheck checks a concrete sample-size schedule (s_0, ..., s_{T-1},
// each >= 1) against Theorem B.4 for noise multiplier sigma and target
// (epsilon, delta) on N records; nil means the schedule is
// (epsilon, delta)-DP by that theorem.
func ProactiveCheck(epsilon, delta, sigma float64, records int, schedule []int) error {
	if len(schedule) == 0 {
		return invalid("empty schedule")
	}
	K, smax := 0, 0
	for i, s := range schedule {
		if s < 1 {
			return invalid("schedule[%d] = %d, want >= 1", i, s)
		}
		K += s
		smax = max(smax, s)
	}
	T := len(schedule)
	mean := float64(K) / float64(T)
	p := ProactivePlan{Epsilon: epsilon, Delta: delta, Records: records, Epochs: float64(K) / float64(records), Theta: float64(smax) / mean}
	if err := p.check(); err != nil {
		return fmt.Errorf("proactive check: %w", err)
	}
	p.Sigma = sigma
	r, err := p.TheoremB4()
	if err != nil {
		return fmt.Errorf("proactive check: %w", err)
	}
	if float64(T) < r.MinRounds {
		return invalid("theorem B.4: T = %d rounds < required %v", T, r.MinRounds)
	}
	return nil
}
