package sim

import (
	"fmt"

	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
)

// SinglePassCap returns the release cap an owner who knows cfg's
// partition sets for a single-pass algorithm: the most minibatches of b
// the largest device's shard holds, at most T
// (optim.Params.SinglePassReleases). It returns 0 (no cap: T) for the
// algorithms that reuse samples. The partition is the one Run makes
// (same scheme, same seed).
func SinglePassCap(cfg Config) (int, error) {
	p := cfg.Params
	if !p.SinglePass() {
		return 0, nil
	}
	parts, err := cfg.Partition.Partition(cfg.Train.Labels(), p.M, cfg.Seed)
	if err != nil {
		return 0, fmt.Errorf("sim: partition: %w", err)
	}
	largest := 0
	for _, part := range parts {
		largest = max(largest, len(part))
	}
	return p.SinglePassReleases(largest), nil
}

// StepSizes are step sizes chosen on the validation split
// (dataset.ValidationSplit) at the reference setting (ReferenceParams),
// by `go run ./cmd/flresults -tune` (docs/results-notes.md records the
// sweep). Mu2 is for the mu^2 family ("nc", "trusted", "mu2"): 0 means
// Theorem 5.2's step size (algo.NCTheoremEta); otherwise it is scaled to
// other settings as Theorem 5.2's step size scales (Eta). SGD is for
// "noisysgd" and "sgd", used as is. Other is for the remaining algorithms
// (SoteriaFL, CDP-SGD), which were not tuned here.
type StepSizes struct {
	Mu2, SGD, Other float64
}

// Tuned are the step sizes for per-sample clipping at S = 1 without
// projection (D = 0), the defaults of cmd/flsim and the "clip1" runs of
// cmd/flresults.
var Tuned = StepSizes{Mu2: 1e-3, SGD: 0.3, Other: 0.6}

// TunedPaper are the step sizes for the papers' constants (G, L, D of the
// noise-cancellation paper): Theorem 5.2's for the mu^2 family.
var TunedPaper = StepSizes{Mu2: 0, SGD: 1e-4, Other: 0.6}

// ReferenceRounds is T at the reference setting: one pass over the
// Fashion-MNIST training images left after the validation split (50,000)
// with m = 50 and b = 1.
const ReferenceRounds = 1000

// ReferenceParams is the setting step sizes are tuned at (Table 1's
// middle row of the noise-cancellation paper, on the validation split):
// logistic regression, M = 100, m = 50, b = 1, one pass, rho_p = 8, with
// the constants of c (Clip, G, L, Diameter copied from c).
func ReferenceParams(alg string, c optim.Params) optim.Params {
	return optim.Params{Algorithm: alg, Model: "logreg", M: 100, Cohort: 50, Rounds: ReferenceRounds, Batch: 1, Rho: 8,
		Clip: c.Clip, G: c.G, L: c.L, Diameter: c.Diameter}
}

// Eta returns the step size for p (model dimension d): s.SGD for noisy
// SGD and SGD; for the mu^2 family Theorem 5.2's step size when s.Mu2 is
// 0, else s.Mu2 times the ratio of Theorem 5.2's step size at p to the
// one at the reference setting (so a run with another T, m, M, rho_p or S
// is not handicapped by a step size tuned for the reference; D cancels in
// the ratio, and a nominal D = 1 keeps it defined without projection);
// s.Other otherwise.
func (s StepSizes) Eta(p optim.Params, d int) float64 {
	switch {
	case p.Algorithm == "noisysgd" || p.Algorithm == "sgd":
		return s.SGD
	case MuSquared(p.Algorithm):
		if s.Mu2 == 0 {
			return algo.NCTheoremEta(p, d)
		}
		q, ref := p, ReferenceParams("nc", p)
		q.Diameter, ref.Diameter = 1, 1
		if !algo.Private(p) {
			q.Rho = ref.Rho // the non-private references take the private runs' step size
			q.Epsilon, q.Delta = 0, 0
		}
		return s.Mu2 * algo.NCTheoremEta(q, d) / algo.NCTheoremEta(ref, d)
	}
	return s.Other
}

// MuSquared reports whether alg is of the mu^2 family ("nc", "shared",
// "trusted", "mu2"), whose step sizes are tuned together (StepSizes.Mu2).
func MuSquared(alg string) bool {
	switch alg {
	case "nc", "shared", "trusted", "mu2":
		return true
	}
	return false
}

// DeviceSeed is the seed of device i's entropy stream in a run with seed
// run (Run gives device i mechanism.NewStream(DeviceSeed(run, i), 0)), so
// that a live session can give its devices the same noise.
func DeviceSeed(run uint64, i int) mechanism.Seed { return seedFor(run, "device", i) }

// ServerSeed is the seed of the server half's stream in a run with seed
// run.
func ServerSeed(run uint64) mechanism.Seed { return seedFor(run, "server", 0) }
