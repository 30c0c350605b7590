package algo

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"browserfl/shared/mechanism"
	"browserfl/shared/session"
)

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

// Validate checks p for its algorithm and returns every problem found
// (wire.ValidateSession checks the protocol's bounds).
func Validate(p session.Params) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	a, err := Lookup(p.Algorithm)
	if err != nil {
		return err
	}
	k := a.Kind
	if p.M < 1 {
		add("M = %d devices, want >= 1", p.M)
	}
	if p.Cohort < 1 || p.Cohort > p.M {
		add("cohort m = %d, want 1 <= m <= M = %d", p.Cohort, p.M)
	}
	if p.Rounds < 1 || p.Rounds > session.MaxRounds {
		add("rounds T = %d, want 1 <= T <= %d", p.Rounds, session.MaxRounds)
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
	if k.Noise != NoiseNone {
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
	} else if k.Shifted && spec.EF {
		add("compressor %q: error feedback is not combined with SoteriaFL shifted compression", p.Compressor)
	} else if k.Noise == NoiseServer && !denseSpec(spec) {
		// A trusted session's devices send clean updates: a sparsifying
		// or scaling compressor (or error feedback) is applied before any
		// noise, so one sample could move the message far more than
		// 2S/b (top-k is discontinuous, rand-k scales by d/k, error
		// feedback carries it into later rounds), beyond what
		// TrustedSensitivity charges.
		add("compressor %q: a trusted session sends clean updates, so only dense f32 or f64 is allowed (the server's noise is calibrated to the clipped update's sensitivity)", p.Compressor)
	}
	if k.Est == EstSVRG || k.Est == EstSAGA {
		if p.LocalSize < p.Batch || p.LocalSize < 1 {
			add("local size (-local-size, each device's number of samples) = %d, want >= batch b = %d for %s", p.LocalSize, p.Batch, p.Algorithm)
		}
	} else if p.LocalSize < 0 {
		add("local size (-local-size) = %d, want >= 0 (only %s use it)", p.LocalSize, "soteria-svrg and soteria-saga")
	}
	if p.SnapshotProb > 1 {
		add("snapshot probability = %v, want <= 1", p.SnapshotProb)
	}
	errs = append(errs, validateLocal(p, k, spec)...)
	errs = append(errs, validateShared(p)...)
	if len(errs) == 0 && k.Noise != NoiseNone {
		// A target so small that its noise is beyond the exact sampler
		// on the release grid: the noise in grid units is z times the
		// sensitivity in grid units, which mechanism.GridStep makes at
		// least GridFactor sqrt(d) + sqrt(d) (d = 1 when the dimension
		// is not set). No release could be drawn, and no update bound
		// holds.
		d := float64(max(p.Dim, 1))
		switch z := noiseMultiplier(p, k); {
		case math.IsNaN(z) || math.IsInf(z, 0):
			add("the privacy target is too small: no finite noise meets it")
		case z*(mechanism.GridFactor+1)*math.Sqrt(d) > mechanism.MaxDiscreteSigma:
			add("the privacy target is too small: its noise would be %.3g times the sensitivity of a release, past the exact sampler's range (%d grid units) on a grid for dimension %g", z, mechanism.MaxDiscreteSigma, d)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New("optim: invalid parameters: " + strings.Join(msgs, "; "))
}

// noiseMultiplier is the largest ratio, over a device's releases (or the
// trusted server's rounds), of the noise's standard deviation to the
// release's sensitivity: nc's (and shared's charged) noise at the release
// cap, the trusted server's, or a fresh-noise release's. +Inf or NaN when
// the target's budget rounds to 0.
func noiseMultiplier(p session.Params, k Kind) float64 {
	switch k.Noise {
	case NoiseNC:
		return NCChargeSigma(p, p.ReleaseCap()) / (2 * p.S() / float64(p.Batch))
	case NoiseServer:
		return TrustedSigma(p) / TrustedSensitivity(p)
	case NoiseDevice:
		sigma, err := FreshSigma(p)
		if err != nil {
			return math.NaN()
		}
		if p.Algorithm == "local" {
			return sigma / LocalReleaseSensitivity(p)
		}
		return sigma / Sensitivity(p)
	}
	return 0
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
