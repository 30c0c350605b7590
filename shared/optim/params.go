package optim

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"browserfl/shared/mechanism"
	"browserfl/shared/privacy"
	"browserfl/shared/session"
)

// Params are a session's public parameters (shared/session.Params, the
// type the protocol carries too): the coordinator broadcasts them, every
// device checks them (Validate) and derives its own noise from them
// (DESIGN principle 2). Zero values mean "not set"; Validate says which
// fields an algorithm needs.
type Params = session.Params

// MaxLocalEpochs bounds Params.LocalEpochs (each epoch is a pass of
// hidden local steps on a device); the protocol's bound is the same
// constant.
const MaxLocalEpochs = session.MaxLocalEpochs

// Trusted reports whether p's algorithm trusts the server with un-noised
// updates ("trusted", and the non-private references "mu2" and "sgd").
// In every other algorithm no un-noised update leaves a device.
func Trusted(p Params) bool {
	a, err := Lookup(p.Algorithm)
	return err == nil && a.kind.noise != noiseDevice && a.kind.noise != noiseNC
}

// Private reports whether p's algorithm gives a privacy guarantee.
func Private(p Params) bool {
	a, err := Lookup(p.Algorithm)
	return err == nil && a.kind.noise != noiseNone
}

// ZCDPBudget is each device's total privacy budget in standard zCDP rho
// (rho_p^2/2 from p.Rho, or from (p.Epsilon, p.Delta)).
func ZCDPBudget(p Params) (float64, error) {
	if p.Rho > 0 {
		return privacy.ZCDPFromPaperRho(p.Rho), nil
	}
	r, err := privacy.LedgerRho(p.Epsilon, p.Delta)
	if err != nil {
		return 0, fmt.Errorf("optim: privacy budget: %w", err)
	}
	return r, nil
}

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

// Validate checks p for its algorithm and returns every problem found
// (wire.ValidateSession checks the protocol's bounds).
func Validate(p Params) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	a, err := Lookup(p.Algorithm)
	if err != nil {
		return err
	}
	k := a.kind
	if p.M < 1 {
		add("M = %d devices, want >= 1", p.M)
	}
	if p.Cohort < 1 || p.Cohort > p.M {
		add("cohort m = %d, want 1 <= m <= M = %d", p.Cohort, p.M)
	}
	if p.Rounds < 1 {
		add("rounds T = %d, want >= 1", p.Rounds)
	}
	if p.Batch < 1 {
		add("batch b = %d, want >= 1", p.Batch)
	}
	if p.MaxReleases < 0 || p.MaxReleases > p.Rounds {
		add("max releases = %d, want 0 (= T) or 1 <= max releases <= T = %d", p.MaxReleases, p.Rounds)
	}
	if !positive(p.Eta) {
		add("eta = %v, want a finite value > 0", p.Eta)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"clip S", p.Clip}, {"G", p.G}, {"L", p.L}, {"diameter D", p.Diameter}, {"rho", p.Rho}, {"epsilon", p.Epsilon}, {"delta", p.Delta}, {"shift step", p.ShiftStep}, {"snapshot probability", p.SnapshotProb}, {"signal bound", p.SignalBound}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			add("%s = %v, want a finite value >= 0", f.name, f.v)
		}
	}
	if k.noise != noiseNone {
		if !positive(p.S()) {
			add("clipping bound S is 0: set Clip, or G, L and D (S = G + 2LD)")
		}
		switch {
		case p.Rho > 0 && (p.Epsilon > 0 || p.Delta > 0):
			add("set either rho (paper's rho_p) or epsilon and delta, not both")
		case p.Rho == 0 && p.Epsilon == 0:
			add("private algorithm %q needs a privacy target: rho, or epsilon and delta", p.Algorithm)
		case p.Rho == 0 && !(p.Delta > 0 && p.Delta < 1):
			add("delta = %v, want 0 < delta < 1", p.Delta)
		}
	} else if p.Rho > 0 || p.Epsilon > 0 {
		add("algorithm %q is not private; remove the privacy target", p.Algorithm)
	}
	spec, err := mechanism.ParseSpec(p.Compressor)
	if err != nil {
		add("%v", err)
	} else if k.shifted && spec.EF {
		add("compressor %q: error feedback is not combined with SoteriaFL shifted compression", p.Compressor)
	} else if k.noise == noiseServer && !denseSpec(spec) {
		// A trusted session's devices send clean updates: a sparsifying
		// or scaling compressor (or error feedback) is applied before any
		// noise, so one sample could move the message far more than
		// 2S/b (top-k is discontinuous, rand-k scales by d/k, error
		// feedback carries it into later rounds), beyond what
		// TrustedSensitivity charges.
		add("compressor %q: a trusted session sends clean updates, so only dense f32 or f64 is allowed (the server's noise is calibrated to the clipped update's sensitivity)", p.Compressor)
	}
	if k.est == estSVRG || k.est == estSAGA {
		if p.LocalSize < p.Batch || p.LocalSize < 1 {
			add("local size = %d, want >= batch b = %d for %s", p.LocalSize, p.Batch, p.Algorithm)
		}
	}
	if p.SnapshotProb > 1 {
		add("snapshot probability = %v, want <= 1", p.SnapshotProb)
	}
	errs = append(errs, validateLocal(p, k, spec)...)
	errs = append(errs, validateShared(p)...)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New("optim: invalid parameters: " + strings.Join(msgs, "; "))
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
func NCSigma(p Params, n int) float64 { return drawSigma(p, paperRho(p), n) }

// drawSigma is the sigma a device of "nc" or "shared" draws at its n-th
// participation for the paper's rho rp: nc's calibration times
// ShareScale (1 for "nc"). Callers that need many participations compute
// rp once (paperRho solves the budget's inverse).
func drawSigma(p Params, rp float64, n int) float64 { return ncSigma(p, rp, n) * ShareScale(p) }

// NCChargeSigma is the sigma whose cost, (2S/b)^2 / (2 sigma^2), a
// device's ledger charges at its n-th participation in "nc" and "shared":
// nc's NCSigma. In "shared" it is the promise's cost of the release
// (docs/privacy.md, "Shared noise"), ShareScale^2 times the floor's.
func NCChargeSigma(p Params, n int) float64 { return ncSigma(p, paperRho(p), n) }

func ncSigma(p Params, rp float64, n int) float64 {
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
func TrustedSensitivity(p Params) float64 {
	return (2*p.S()/float64(p.Batch) + 0x1p-23*p.S()) / float64(p.Cohort)
}

// denseSpec reports whether spec sends the whole vector as it is
// (float32 or float64, no error feedback).
func denseSpec(spec mechanism.Spec) bool {
	if spec.EF {
		return false
	}
	switch spec.C.(type) {
	case nil, mechanism.Dense32, mechanism.Dense64:
		return true
	}
	return false
}

// TrustedSigma is the per-coordinate standard deviation of the noise the
// trusted server adds to q_t each round (full-participation paper,
// Algorithm 2; noise-cancellation paper, Appendix F, with minibatch
// sensitivity): sigma_t^2 = Delta^2 T / rho_p^2 with Delta =
// TrustedSensitivity, about 2S/(b m). The server draws
// it as an exact discrete Gaussian on a grid (mechanism.DiscreteSigma of
// this sigma for TrustedSensitivity), like a device's release.
func TrustedSigma(p Params) float64 {
	return TrustedSensitivity(p) * math.Sqrt(float64(p.Rounds)) / paperRho(p)
}

// paperRho is rho_p from Rho, or sqrt(2 rho) for the zCDP rho of
// (Epsilon, Delta).
func paperRho(p Params) float64 {
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
func Sensitivity(p Params) float64 {
	a, err := Lookup(p.Algorithm)
	if err != nil {
		return math.NaN()
	}
	S, b := p.S(), float64(p.Batch)
	switch a.kind.est {
	case estSVRG, estSAGA:
		return 4*S/b + 2*S/float64(p.LocalSize)
	case estMu2:
		return 2 * S / b
	case estLocal:
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
func FreshSigma(p Params) (float64, error) {
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
func NoiseScale(p Params, participation int) (float64, error) {
	if err := Validate(p); err != nil {
		return 0, err
	}
	a, _ := Lookup(p.Algorithm)
	switch a.kind.noise {
	case noiseNC:
		if participation < 1 {
			return 0, fmt.Errorf("optim: participation %d, want >= 1", participation)
		}
		return NCSigma(p, participation), nil
	case noiseServer:
		return TrustedSigma(p), nil
	case noiseDevice:
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
func NCTheoremEta(p Params, d int) float64 {
	T := float64(p.Rounds)
	eta := paperRho(p) * p.Diameter * float64(p.Cohort) /
		(2 * p.S() * T * math.Sqrt(2*float64(p.M)*float64(d)*(1+math.Log(T))))
	if p.L > 0 {
		eta = math.Min(eta, 1/(8*p.L*T))
	}
	return eta
}
