package algo

import (
	"errors"
	"fmt"
	"math"

	"browserfl/shared/privacy"
	"browserfl/shared/session"
)

// ErrUnsafe is wrapped when a private session's release could not be made
// safely: by shared/optim's NewDevice and Prepare (a compressor not known
// to be a post-processing of the released vector, a grid step outside the
// exact float64 range, a discrete noise scale beyond the exact sampler's
// range, or an estimate too large for the grid: nothing is drawn or
// charged), and by SharedPromiseTV.
var ErrUnsafe = errors.New("optim: unsafe release refused")

// ZCDPBudget is each device's total privacy budget in standard zCDP rho
// (rho_p^2/2 from p.Rho, or from (p.Epsilon, p.Delta)).
func ZCDPBudget(p session.Params) (float64, error) {
	if p.Rho > 0 {
		return privacy.ZCDPFromPaperRho(p.Rho), nil
	}
	r, err := privacy.LedgerRho(p.Epsilon, p.Delta)
	if err != nil {
		return 0, fmt.Errorf("optim: privacy budget: %w", err)
	}
	return r, nil
}

// NCSigma is the per-coordinate noise standard deviation of a device's
// n-th participation (n >= 1) in "nc" (noise-cancellation paper, Theorem
// 5.2, with the minibatch sensitivity 2S/b and the paper's 1 + ln T
// replaced by the harmonic number of the release cap K = ReleaseCap()):
//
//	sigma^2 = (2S/b)^2 H_K n / rho_p^2,   H_K = 1 + 1/2 + ... + 1/K.
//
// The release at participation n (the device's partial sum of corrections
// plus y) has replace-one sensitivity 2S/b, so it costs
// rho_p^2 / (2 H_K n) zCDP, and the K releases a device may make cost
// rho_p^2/2 exactly: the whole budget and no more. (The paper's 1 + ln T
// is an upper bound of H_T; with it a device asked T times spends
// H_T / (1 + ln T) of its budget, 86% at T = 1,200, and less when it can
// make fewer than T releases.)
//
// For "shared" it is the share a device draws: nc's sigma times
// ShareScale (shared.go). NCChargeSigma is nc's sigma, whose cost the
// ledger charges in both.
func NCSigma(p session.Params, n int) float64 { return NewNC(p).Sigma(n) }

// NCChargeSigma is the sigma whose cost, (2S/b)^2 / (2 sigma^2), a
// device's ledger charges at its n-th participation in "nc" and "shared":
// nc's NCSigma. In "shared" it is the promise's cost of the release
// (docs/privacy.md, "Shared noise"), ShareScale^2 times the floor's.
func NCChargeSigma(p session.Params, n int) float64 { return NewNC(p).ChargeSigma(n) }

// NC is the calibration of "nc" and "shared" for one session, with the
// paper's rho_p solved from the budget once: a device asks it at every
// release.
type NC struct {
	p  session.Params
	rp float64 // rho_p (paperRho)
}

// NewNC returns the calibration of "nc" and "shared" under p.
func NewNC(p session.Params) NC { return NC{p: p, rp: paperRho(p)} }

// Sigma is NCSigma(p, n): the sigma a device draws at its n-th
// participation, nc's calibration times ShareScale (1 for "nc").
func (c NC) Sigma(n int) float64 { return ncSigma(c.p, c.rp, n) * ShareScale(c.p) }

// ChargeSigma is NCChargeSigma(p, n): the sigma whose cost the ledger
// charges at the n-th participation.
func (c NC) ChargeSigma(n int) float64 { return ncSigma(c.p, c.rp, n) }

func ncSigma(p session.Params, rp float64, n int) float64 {
	sens := 2 * p.S() / float64(p.Batch)
	return sens * math.Sqrt(Harmonic(p.ReleaseCap())*float64(n)) / rp
}

// harmonicExact is the largest K whose harmonic number is summed term by
// term; beyond it Harmonic uses an upper bound.
const harmonicExact = 1024

// Harmonic returns H_K = 1 + 1/2 + ... + 1/K (0 for K < 1). Up to 1,024
// terms it is the sum itself, smallest terms first (relative rounding
// error below 1e-13, which the ledger's comparison slack of 1e-9 absorbs);
// beyond that it is ln K + gamma + 1/(2K), an upper bound of H_K (the
// classical 1/(2(K+1)) < H_K - ln K - gamma < 1/(2K)) that exceeds it by
// less than 1/(12 K^2), 1.1e-8 relative, so the noise calibrated with it
// is never smaller than the exact one. Devices call it at every
// release, so it costs at most 1,024 additions.
func Harmonic(K int) float64 {
	if K < 1 {
		return 0
	}
	if K > harmonicExact {
		k := float64(K)
		return math.Log(k) + 0.57721566490153286 + 1/(2*k)
	}
	h := 0.0
	for n := K; n >= 1; n-- {
		h += 1 / float64(n)
	}
	return h
}

// TrustedSensitivity is the replace-one L2 sensitivity of the trusted
// server's q_t: one sample changes one device's clipped minibatch mean by
// at most 2S/b; the device sends it as float32 (the default dense
// compressor), whose rounding moves each message by at most 2^-24 S (the
// mean has norm at most S), so two neighbouring messages differ by at
// most 2S/b + 2^-23 S; q_t holds the mean over the m devices.
func TrustedSensitivity(p session.Params) float64 {
	return (2*p.S()/float64(p.Batch) + 0x1p-23*p.S()) / float64(p.Cohort)
}

// TrustedSigma is the per-coordinate standard deviation of the noise the
// trusted server adds to q_t each round (full-participation paper,
// Algorithm 2; noise-cancellation paper, Appendix F, with minibatch
// sensitivity): sigma_t^2 = Delta^2 T / rho_p^2 with Delta =
// TrustedSensitivity, about 2S/(b m). The server draws
// it as an exact discrete Gaussian on a grid (mechanism.DiscreteSigma of
// this sigma for TrustedSensitivity), like a device's release.
func TrustedSigma(p session.Params) float64 {
	return TrustedSensitivity(p) * math.Sqrt(float64(p.Rounds)) / paperRho(p)
}

// paperRho is rho_p from Rho, or sqrt(2 rho) for the zCDP rho of
// (Epsilon, Delta).
func paperRho(p session.Params) float64 {
	if p.Rho > 0 {
		return p.Rho
	}
	r, err := ZCDPBudget(p)
	if err != nil {
		return math.NaN()
	}
	return privacy.PaperRhoFromZCDP(r)
}

// Sensitivity is the replace-one L2 sensitivity of one device release of
// the fresh-noise algorithms (see the package doc):
//
//	noisysgd, cdpsgd, soteria-sgd: 2S/b       (b clipped gradients averaged)
//	local:                         2S/(b/K)    (per hidden local step)
//	soteria-svrg, soteria-saga:    4S/b + 2S/n (minibatch term phi in 2S-ball,
//	                                            full term psi in S-ball; SoteriaFL
//	                                            Lemma 1's G_A = 2G, G_B = G)
func Sensitivity(p session.Params) float64 {
	a, err := Lookup(p.Algorithm)
	if err != nil {
		return math.NaN()
	}
	S, b := p.S(), float64(p.Batch)
	switch a.Kind.Est {
	case EstSVRG, EstSAGA:
		return 4*S/b + 2*S/float64(p.LocalSize)
	case EstMu2:
		return 2 * S / b
	case EstLocal:
		// Per hidden local step: b/K clipped gradients averaged.
		return 2 * S / float64(p.StepBatch())
	}
	return 2 * S / b
}

// FreshSigma is the per-release noise standard deviation of the fresh-noise
// algorithms: each of K = ComposedReleases() releases costs an equal share
// of the zCDP budget, Delta^2/(2 sigma^2) = budget/K (Bun–Steinke 2016,
// Prop. 1.6 and Lemma 2.3), so sigma = Delta sqrt(K / (2 budget)). For
// single-pass noisy SGD K = 1 (see ParallelComposition).
//
// For SoteriaFL this replaces the unspecified constant c of Theorem 2
// (sigma_p^2 = c (G_A^2/4 + G_B^2) T log(1/delta) / (m^2 eps^2)) by an
// explicit, conservative calibration without subsampling amplification:
// the per-release sensitivity is the worst case whether or not the
// replaced sample is in the minibatch.
func FreshSigma(p session.Params) (float64, error) {
	budget, err := ZCDPBudget(p)
	if err != nil {
		return 0, err
	}
	if p.Algorithm == "local" {
		// One round of "local" costs LocalCharge noise vectors, each of
		// sensitivity LocalReleaseSensitivity: the one vector of output
		// perturbation, or the per-step vectors of E passes.
		return LocalReleaseSensitivity(p) * math.Sqrt(LocalCharge(p)/(2*budget)), nil
	}
	K := float64(p.ComposedReleases())
	return Sensitivity(p) * math.Sqrt(K/(2*budget)), nil
}

// NoiseScale returns the noise standard deviation a device (or, for
// "trusted", the server) uses at a device's participation-th release, and
// 0 for the non-private algorithms. The planning command calls it.
func NoiseScale(p session.Params, participation int) (float64, error) {
	if err := Validate(p); err != nil {
		return 0, err
	}
	a, _ := Lookup(p.Algorithm)
	switch a.Kind.Noise {
	case NoiseNC:
		if participation < 1 {
			return 0, fmt.Errorf("optim: participation %d, want >= 1", participation)
		}
		return NCSigma(p, participation), nil
	case NoiseServer:
		return TrustedSigma(p), nil
	case NoiseDevice:
		return FreshSigma(p)
	}
	return 0, nil
}

// NCTheoremEta is the step size of the noise-cancellation paper's Theorem
// 5.2 for dimension d:
//
//	eta = min{ rho_p D m / (2 S T sqrt(2 M d (1 + ln T))), 1 / (8 L T) },
//
// with the second term dropped when L = 0 (unknown smoothness). It uses
// S = p.S() (the paper has b = 1; for b > 1 the noise scale carries 2S/b and
// this remains the paper's choice, not a re-derived one).
func NCTheoremEta(p session.Params, d int) float64 {
	T := float64(p.Rounds)
	eta := paperRho(p) * p.Diameter * float64(p.Cohort) /
		(2 * p.S() * T * math.Sqrt(2*float64(p.M)*float64(d)*(1+math.Log(T))))
	if p.L > 0 {
		eta = math.Min(eta, 1/(8*p.L*T))
	}
	return eta
}
