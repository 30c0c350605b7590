package algo

import (
	"fmt"

	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/session"
)

// MaxLocalHiddenSteps bounds K E, the hidden steps of one round of
// "local".
const MaxLocalHiddenSteps = 1 << 16

// localOPSlack bounds, relative to E Delta, what floating point may add
// to the last iterate's sensitivity under output perturbation
// (LocalFloatSlack must stay within it: docs/privacy.md 4b).
const localOPSlack = 1e-4

// LocalOutputPerturbation reports whether "local" under p releases by
// output perturbation (noiseless hidden steps, one noise vector on the
// last iterate): exactly when the session is certified (certifiedLocal).
// The device, the calibration (FreshSigma, LocalReleaseSensitivity), the
// planner and the update bound all ask it.
func LocalOutputPerturbation(p session.Params) bool {
	return p.Algorithm == "local" && certifiedLocal(p)
}

// LocalReleaseSensitivity is the replace-one L2 sensitivity each noise
// vector of "local" is calibrated to: under output perturbation the last
// iterate's, E Delta (1 + localOPSlack) (a record enters E steps, each
// moving the message by at most Delta, the other steps are nonexpansive,
// and floating point adds at most the slack, LocalFloatSlack); otherwise
// one hidden step's, Delta = Sensitivity(p).
func LocalReleaseSensitivity(p session.Params) float64 {
	if LocalOutputPerturbation(p) {
		return float64(p.LocalE()) * Sensitivity(p) * (1 + localOPSlack)
	}
	return Sensitivity(p)
}

// LocalCharge is the zCDP one round of "local" costs, in units of one
// noise vector's LocalReleaseSensitivity^2/(2 sigma^2): 1 under output
// perturbation (one vector, calibrated to the whole round's sensitivity)
// and with one pass (every sample enters one step); E otherwise (every
// sample enters E noisy steps: composition). Rounds use disjoint samples,
// so a device's whole session costs one round's charge.
func LocalCharge(p session.Params) float64 {
	if LocalOutputPerturbation(p) {
		return 1
	}
	return float64(p.LocalE())
}

// certifiedLocal reports whether every hidden step of "local" under p is
// a nonexpansive map of the iterate plus the record's bounded change: a
// certified model, no clipping, eta <= 2/beta, no projection.
func certifiedLocal(p session.Params) bool {
	G, beta, ok := model.Convexity(p.Model)
	return ok && p.S() >= G && p.Eta > 0 && p.Eta*beta <= 2 && p.Diameter == 0
}

// LocalFloatSlack bounds what floating point can add, in L2 and in the
// message's units, to the distance between the messages of two runs of
// output perturbation under p from a query point x_t of norm x0norm in
// dimension d that differ in one sample, and returns it with its
// allowance, localOPSlack E Delta (what LocalReleaseSensitivity pays
// for): a device refuses the query point, before any step, when the slack
// is over the allowance. Each of the K E steps of each run computes
// fl(x - eta gbar(x)) within e = 2^-48 (d + b/K + 8) (eta (G + Y) + Y) of
// the exact x - eta gbar(x), Y = |x_t| + 2 eta K E G bounding the
// iterate's norm (every step moves it by eta times a mean gradient of norm
// below G, with room for the rounding), and the message (x_t - x)/eta has
// two roundings of relative 2^-53 on a vector of norm below 2 K E G: in
// all 2 K E e / eta + 2^-49 K E G. The constant is a standard forward
// error analysis (docs/privacy.md 4b, step 2) with a factor 16 to spare.
func LocalFloatSlack(p session.Params, d int, x0norm float64) (slack, allowance float64) {
	G, _, _ := model.Convexity(p.Model)
	eta, E := p.Eta, p.LocalE()
	n := float64(p.LocalK() * E)
	y := x0norm + 2*eta*n*G
	e := 0x1p-48 * float64(d+p.StepBatch()+8) * (eta*(G+y) + y)
	return 2*n*e/eta + 0x1p-49*n*G, localOPSlack * float64(E) * Sensitivity(p)
}

// validateLocal checks the fields only "local" uses.
func validateLocal(p session.Params, k Kind, spec mechanism.Spec) []error {
	var errs []error
	if k.Est != EstLocal {
		if p.LocalSteps != 0 {
			errs = append(errs, fmt.Errorf("local steps = %d: only \"local\" runs local steps", p.LocalSteps))
		}
		if p.LocalEpochs != 0 {
			errs = append(errs, fmt.Errorf("local epochs = %d: only \"local\" runs local passes", p.LocalEpochs))
		}
		return errs
	}
	K := p.LocalK()
	switch {
	case p.LocalSteps < 0:
		errs = append(errs, fmt.Errorf("local steps = %d, want >= 0 (0 = b)", p.LocalSteps))
	case p.Batch >= 1 && (K > p.Batch || p.Batch%K != 0):
		errs = append(errs, fmt.Errorf("local steps K = %d must divide the batch b = %d (b/K samples per step)", K, p.Batch))
	}
	switch E := p.LocalE(); {
	case p.LocalEpochs < 0 || p.LocalEpochs > session.MaxLocalEpochs:
		errs = append(errs, fmt.Errorf("local epochs = %d, want 0 to %d (0 = 1)", p.LocalEpochs, session.MaxLocalEpochs))
	case K >= 1 && K > MaxLocalHiddenSteps/E:
		errs = append(errs, fmt.Errorf("local steps K = %d and epochs E = %d: %d hidden steps a round, at most %d", K, E, K*E, MaxLocalHiddenSteps))
	}
	if spec.EF {
		errs = append(errs, fmt.Errorf("compressor %q: error feedback is not implemented for \"local\"", p.Compressor))
	}
	return errs
}
