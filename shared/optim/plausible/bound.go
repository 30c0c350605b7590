package plausible

import (
	"fmt"
	"math"

	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
)

// UpdateRejectProb is the largest probability with which any message of
// an honest device is rejected over the whole session, by UpdateBound and
// the Checker's tests together (each of its rejectShare tests takes an
// equal share), for every algorithm whose bound is finite.
const UpdateRejectProb = 1e-9

// UpdateBound returns B, the largest L2 norm the coordinator accepts for
// one decoded device message of a session with parameters p and model
// dimension d, and a one-line derivation for logs and docs. B is a
// function of the public parameters only, so it is the same on every
// coordinator, and an honest device's message exceeds it with probability
// at most UpdateRejectProb. It returns +Inf (finiteness is then all a
// coordinator can check) where no useful bound holds: unclipped
// non-private sessions and SoteriaFL's shifted compression, whose shift
// has no deterministic bound.
//
// Derivation. A message is a compressed x = v + noise, where v, the
// device's estimate, has ||v|| <= E by clipping (E = S for the mean of b
// clipped per-sample quantities; 3S for the SVRG and SAGA estimators:
// two minibatch terms and one full term, each a mean of vectors in the
// S-ball), and the noise is Gaussian per coordinate with standard deviation
// at most sigma: in "nc" the difference y_n - y_(n-1) of two independent
// draws, sigma^2 = algo.NCSigma(T)^2 + algo.NCSigma(T-1)^2 (a device releases at most
// T times); in the fresh-noise algorithms algo.FreshSigma; none in "trusted",
// "mu2" and "sgd". ||noise||^2/sigma^2 is at most chi-square with d degrees
// of freedom, and P(chi2_d >= d + 2 sqrt(d u) + 2u) <= exp(-u) (Laurent and
// Massart 2000, Lemma 1). With u = ln(T / UpdateRejectProb) the bound
// X = E + sigma sqrt(d + 2 sqrt(d u) + 2u) holds for all T releases of a
// device at once, except with probability UpdateRejectProb, which also
// covers error feedback's dependence on earlier messages. Compression
// multiplies by mechanism.Spec.NormFactor(d, T). A final factor 1.02
// covers the noise's discretisation onto a grid and floating-point
// rounding of the sums.
func UpdateBound(p optim.Params, d int) (float64, string, error) {
	if err := algo.Validate(p); err != nil {
		return 0, "", err
	}
	if d < 1 {
		return 0, "", fmt.Errorf("optim: update bound for dimension %d", d)
	}
	a, _ := algo.Lookup(p.Algorithm)
	spec, _ := mechanism.ParseSpec(p.Compressor)
	S := p.S()
	if !(S > 0) {
		return math.Inf(1), "no clipping bound: finiteness only", nil
	}
	if a.Shifted() {
		return math.Inf(1), "shifted compression: finiteness only", nil
	}
	E := signalBound(p)
	var sigma float64
	switch {
	case a.CancelsNoise():
		nc := algo.NewNC(p)
		hi := nc.Sigma(p.Rounds)
		lo := 0.0
		if p.Rounds > 1 {
			lo = nc.Sigma(p.Rounds - 1)
		}
		sigma = math.Sqrt(hi*hi + lo*lo)
	case a.FreshNoise():
		f, err := algo.FreshSigma(p)
		if err != nil {
			return 0, "", err
		}
		sigma = f
	}
	if math.IsInf(sigma, 0) || math.IsNaN(sigma) {
		// algo.Validate refuses such a target; a bound is never left to
		// "finiteness only" by a noise scale that overflowed.
		return 0, "", fmt.Errorf("optim: update bound: noise sigma %v", sigma)
	}
	// "local" sends (x_t - x_K)/eta, K E hidden steps (E passes) each
	// moving the iterate by eta times one release of the form above
	// (projection onto K only shortens the move, x_t being in K): at most
	// K E times the bound of one release, with u counting the K E T draws.
	// Under output perturbation the K E steps are noiseless and the
	// message carries one noise vector: K E estimates plus one draw.
	steps := 1.0
	if a.HiddenSteps() {
		steps = float64(p.HiddenSteps())
	}
	draws := steps
	if algo.LocalOutputPerturbation(p) {
		draws = 1
	}
	fd := float64(d)
	u := math.Log(draws * float64(p.Rounds) * rejectShare / UpdateRejectProb)
	chi := math.Sqrt(fd + 2*math.Sqrt(fd*u) + 2*u)
	X := steps*E + draws*sigma*chi
	F := spec.NormFactor(d, p.Rounds)
	B := 1.02 * F * X
	why := fmt.Sprintf("1.02 x compressor %.4g x (estimate %.4g + noise sigma %.4g x %.4g)", F, E, sigma, chi)
	if math.IsInf(B, 0) || math.IsNaN(B) {
		return math.Inf(1), "compressor without a norm bound: finiteness only", nil
	}
	return B, why, nil
}
