// Package plan turns a session's public parameters (optim.Params) into the
// privacy figures the product shows and enforces: the noise standard
// deviation each party uses and each device's worst-case (epsilon, delta).
// The planning command (cmd/flplan), the coordinator (to set up a session)
// and the device (to check one before joining) call the same functions, so
// the numbers agree everywhere.
//
// It also holds the readings of a session's parameters that need more
// than the algorithms (its task, its features, a teacher's switch of
// algorithm), and the one owner's-budget comparison (Budget.Over) that both the pre-join
// check (Check) and the device runtime's per-release check make. It sits
// above shared/optim, shared/privacy and shared/wire, which import nothing
// of it (the layering rules are in internal/archtest).
//
// Invariants:
//   - Noise scales come from algo.NoiseScale (the algorithms' own noise
//     formulas); costs from privacy.GaussianZCDP; conversions from
//     privacy.SpentEpsilon. Nothing here re-derives a noise formula.
//   - Worst case means: the device is chosen in every round it is allowed to
//     take part in (every round for "trusted"; for "nc" until it has made
//     ReleaseCap releases; until its ledger would exceed the budget for
//     the fresh-noise algorithms, which is PlannedReleases releases), and
//     never more than ReleaseCap (MaxReleases, or T) releases: a re-asked
//     round counts, and optim's device refuses the one after the cap.
//     The neighbouring relation is replace-one
//     sample of that device (see docs/privacy.md).
//   - Every figure is finite or an error is returned.
package plan

import (
	"fmt"
	"math"

	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/privacy"
)

// Noise is one party's noise at one kind of release.
type Noise struct {
	Party string  // "device" or "server"
	When  string  // e.g. "participation 1", "participation T", "each round"
	Sigma float64 // per-coordinate standard deviation
}

// Report is a session plan's privacy summary for one device.
type Report struct {
	Algorithm string
	Private   bool
	Trusted   bool // the server sees un-noised updates
	Delta     float64

	Noise []Noise

	// BudgetRho is the per-device budget in standard zCDP rho (the
	// paper's rho_p^2/2); RhoPaper is rho_p.
	BudgetRho, RhoPaper float64

	// WorstParticipations is the largest number of releases a device can
	// make; WorstRho its zCDP cost, WorstSpent the ledger that holds it
	// (a last-iterate one for "local" with the last-iterate charge) and
	// WorstEpsilon its reading (privacy.SpentEpsilon) at Delta.
	WorstParticipations int
	WorstRho            float64
	WorstSpent          privacy.Spent
	WorstEpsilon        float64
	// WorstSchedule is the worst-case ledger's rho after each release:
	// WorstSchedule[n-1] after n releases, WorstSchedule of the last
	// release being WorstRho.
	WorstSchedule []float64

	// ExpectedParticipations is T m / M (uniform cohorts), with the
	// corresponding zCDP cost and epsilon (rounded up to whole releases).
	// For "trusted" the expected cost equals the worst case: the server's
	// noisy q_t carries every earlier contribution, chosen or not.
	ExpectedParticipations float64
	ExpectedRho            float64
	ExpectedSpent          privacy.Spent
	ExpectedEpsilon        float64

	// AmplifiedEpsilon is, for the fresh-noise algorithms with a known
	// local data size, the RDP accountant's epsilon for the Poisson-
	// subsampled Gaussian with rate b/LocalSize over the worst-case
	// releases (noise multiplier sigma/Sensitivity). It assumes Poisson
	// sampling and add/remove neighbours, which the product's fixed-size
	// minibatches do not implement: an indication, not the enforced
	// guarantee. 0 when not applicable.
	AmplifiedEpsilon float64
}

// ForNoise returns a copy of p whose privacy target is the one that makes
// the first release's noise standard deviation equal sigma. Every
// algorithm's noise scale is proportional to 1/rho_p (algo.NCSigma,
// TrustedSigma, FreshSigma), so rho_p = sigma(rho_p = 1) / sigma.
func ForNoise(p optim.Params, sigma float64) (optim.Params, error) {
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return p, fmt.Errorf("plan: sigma = %v, want a finite value > 0", sigma)
	}
	q := p
	q.Rho, q.Epsilon, q.Delta = 1, 0, 0
	s1, err := algo.NoiseScale(q, 1)
	if err != nil {
		return p, fmt.Errorf("plan: %w", err)
	}
	if s1 == 0 {
		return p, fmt.Errorf("plan: algorithm %q adds no noise", p.Algorithm)
	}
	q.Rho = s1 / sigma
	if !(q.Rho > 0) || math.IsInf(q.Rho, 0) {
		return p, fmt.Errorf("plan: sigma = %v gives rho_p = %v", sigma, q.Rho)
	}
	return q, nil
}

// Compute returns the report for p at delta (used when p's target is
// Rho; when p has Epsilon and Delta, pass p.Delta).
func Compute(p optim.Params, delta float64) (Report, error) {
	if err := algo.Validate(p); err != nil {
		return Report{}, err
	}
	r := Report{Algorithm: p.Algorithm, Private: algo.Private(p), Trusted: algo.Trusted(p), Delta: delta}
	if !r.Private {
		return r, nil
	}
	if !(delta > 0 && delta < 1) {
		return Report{}, fmt.Errorf("plan: delta = %v, want 0 < delta < 1", delta)
	}
	budget, err := algo.ZCDPBudget(p)
	if err != nil {
		return Report{}, err
	}
	r.BudgetRho, r.RhoPaper = budget, privacy.PaperRhoFromZCDP(budget)
	// Carry the target as rho_p from here on: the same noise, without
	// re-solving the (epsilon, delta) -> rho inverse at every release.
	p.Rho, p.Epsilon, p.Delta = r.RhoPaper, 0, 0
	T := p.Rounds
	r.ExpectedParticipations = float64(T) * float64(p.Cohort) / float64(p.M)
	expectedN := int(math.Ceil(r.ExpectedParticipations - 1e-9))

	// cost(n) is the zCDP cost of a device's n-th release.
	var cost func(n int) (float64, error)
	switch p.Algorithm {
	case "nc", "shared":
		// "shared" is charged its promise, nc's cost (algo.NCChargeSigma);
		// its floor is FloorFactor times that (SharedFigures).
		sens := 2 * p.S() / float64(p.Batch)
		nc := algo.NewNC(p)
		cost = func(n int) (float64, error) {
			return privacy.GaussianZCDP(sens, nc.ChargeSigma(n))
		}
		K := p.ReleaseCap()
		s1, _ := algo.NoiseScale(p, 1)
		sK, _ := algo.NoiseScale(p, K)
		last := fmt.Sprintf("participation %d (= T)", K)
		if K < T {
			last = fmt.Sprintf("participation %d (= cap)", K)
		}
		r.Noise = []Noise{{"device", "participation 1", s1}, {"device", last, sK}}
		r.WorstParticipations = K
	case "trusted":
		// The server adds N(0, sigma^2) to q_t, which holds the mean of m
		// clipped minibatch means: replace-one sensitivity 2S/(b m) per
		// round the device's contribution is in (at most T).
		sens := algo.TrustedSensitivity(p)
		s, err := algo.NoiseScale(p, 1)
		if err != nil {
			return Report{}, err
		}
		cost = func(int) (float64, error) { return privacy.GaussianZCDP(sens, s) }
		r.Noise = []Noise{{"server", "each round, on q_t", s}}
		r.WorstParticipations = T
	default: // fresh device noise per release
		if cost, err = freshNoise(p, delta, &r); err != nil {
			return Report{}, err
		}
	}
	expectedN = min(expectedN, r.WorstParticipations)
	var ledger privacy.Ledger
	for n := 1; n <= r.WorstParticipations; n++ {
		c, err := cost(n)
		if err != nil {
			return Report{}, fmt.Errorf("plan: release %d: %w", n, err)
		}
		if err := ledger.ChargeRho(c); err != nil {
			return Report{}, fmt.Errorf("plan: %w", err)
		}
		r.WorstSchedule = append(r.WorstSchedule, ledger.Rho())
		if n == expectedN {
			r.ExpectedSpent = ledger.Spent()
		}
	}
	r.WorstSpent = ledger.Spent()
	if p.Algorithm == "trusted" {
		// q_t accumulates: a sample used in round tau is inside every
		// noisy q_t with t >= tau whether or not its device is chosen
		// again, so its exposure does not shrink with participation.
		r.ExpectedSpent = r.WorstSpent
	}
	r.WorstRho, r.ExpectedRho = r.WorstSpent.Rho, r.ExpectedSpent.Rho
	if r.WorstEpsilon, err = privacy.SpentEpsilon(r.WorstSpent, delta); err != nil {
		return Report{}, fmt.Errorf("plan: %w", err)
	}
	if r.ExpectedEpsilon, err = privacy.SpentEpsilon(r.ExpectedSpent, delta); err != nil {
		return Report{}, fmt.Errorf("plan: %w", err)
	}
	return r, nil
}

// freshNoise returns the zCDP cost of a device's n-th release for an
// algorithm that draws fresh device noise per release, and fills r's
// noise, worst-case participations and (with a local dataset to sample
// from) amplified epsilon.
func freshNoise(p optim.Params, delta float64, r *Report) (cost func(n int) (float64, error), err error) {
	s, err := algo.NoiseScale(p, 1)
	if err != nil {
		return nil, err
	}
	sens := algo.Sensitivity(p)
	// A round of "local" costs LocalCharge noise vectors of sensitivity
	// LocalReleaseSensitivity (its E passes reuse the round's samples):
	// one on the last iterate under output perturbation, else one per
	// hidden step; every other release one.
	factor := 1.0
	when := "each release"
	if p.Algorithm == "local" {
		sens, factor = algo.LocalReleaseSensitivity(p), algo.LocalCharge(p)
		when = fmt.Sprintf("each of the %d hidden steps of a release", p.HiddenSteps())
		if algo.LocalOutputPerturbation(p) {
			when = fmt.Sprintf("once a release, on the last iterate of %d noiseless hidden steps (output perturbation)", p.HiddenSteps())
		}
	}
	cost = func(n int) (float64, error) {
		if n > 1 && p.ParallelComposition() {
			return 0, nil // disjoint single-pass releases: see optim.Params.ParallelComposition
		}
		c, err := privacy.GaussianZCDP(sens, s)
		return factor * c, err
	}
	r.Noise = []Noise{{"device", when, s}}
	// The device refuses releases beyond its budget: at most
	// PlannedReleases (each costs budget/PlannedReleases), and
	// beyond ReleaseCap.
	r.WorstParticipations = min(p.ReleaseCap(), p.PlannedReleases())
	if p.LocalSize >= p.Batch && p.LocalSize > 0 && !p.ParallelComposition() {
		q := float64(p.Batch) / float64(p.LocalSize)
		e, err := privacy.SubsampledGaussianEpsilon(q, s/sens, r.WorstParticipations, delta)
		if err != nil {
			return nil, fmt.Errorf("plan: amplified epsilon: %w", err)
		}
		r.AmplifiedEpsilon = e
	}
	return cost, nil
}
