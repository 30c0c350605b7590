package algo

import (
	"fmt"
	"sort"

	"browserfl/shared/session"
)

// Noise says who adds an algorithm's noise.
type Noise uint8

const (
	NoiseNone   Noise = iota // non-private reference
	NoiseNC                  // device noise with noise cancellation
	NoiseServer              // trusted server adds the noise
	NoiseDevice              // fresh device noise per release
)

// Est is a device's estimator.
type Est uint8

const (
	EstSGD   Est = iota // mean of b clipped gradients at x_t
	EstMu2              // mean of b clipped mu^2 corrections
	EstSVRG             // SoteriaFL SVRG estimator
	EstSAGA             // SoteriaFL SAGA estimator
	EstLocal            // K hidden local noisy SGD steps, last iterate released (shared/optim's local.go)
)

// Kind is what an algorithm is made of: the server's step, who adds the
// noise, the device's estimator and its compression. The server and
// device halves (shared/optim) and the calibration here branch on it.
type Kind struct {
	Mu2     bool // server takes the mu^2-SGD step (else projected SGD); rounds carry x_{t-1}
	Noise   Noise
	Est     Est
	Shifted bool // SoteriaFL shifted compression
}

// Algorithm is one registered algorithm: its name, a one-line summary and
// its Kind (shared/optim builds its server and device halves).
type Algorithm struct {
	Name    string
	Summary string
	Kind    Kind
}

var registry = map[string]Algorithm{
	"nc":           {"nc", "DP-mu^2-FL with partial participation and noise cancellation (untrusted server)", Kind{Mu2: true, Noise: NoiseNC, Est: EstMu2}},
	"shared":       {"shared", "nc with shared noise: each device draws a share sized for a coordinator that sees only sums of at least t updates (secure aggregation)", Kind{Mu2: true, Noise: NoiseNC, Est: EstMu2}},
	"trusted":      {"trusted", "DP-mu^2-FL with a trusted server that adds the noise", Kind{Mu2: true, Noise: NoiseServer, Est: EstMu2}},
	"mu2":          {"mu2", "non-private mu^2-SGD (reference)", Kind{Mu2: true, Noise: NoiseNone, Est: EstMu2}},
	"sgd":          {"sgd", "non-private minibatch SGD (reference)", Kind{Noise: NoiseNone, Est: EstSGD}},
	"noisysgd":     {"noisysgd", "noisy SGD: clipped gradient + fresh Gaussian per release, projected step", Kind{Noise: NoiseDevice, Est: EstSGD}},
	"cdpsgd":       {"cdpsgd", "SoteriaFL Algorithm 1 (CDP-SGD): perturb then compress directly", Kind{Noise: NoiseDevice, Est: EstSGD}},
	"soteria-sgd":  {"soteria-sgd", "SoteriaFL-SGD (Algorithm 3, option I) with shifted compression", Kind{Noise: NoiseDevice, Est: EstSGD, Shifted: true}},
	"soteria-svrg": {"soteria-svrg", "SoteriaFL-SVRG (Algorithm 3, option II) with shifted compression", Kind{Noise: NoiseDevice, Est: EstSVRG, Shifted: true}},
	"soteria-saga": {"soteria-saga", "SoteriaFL-SAGA (Algorithm 3, option III) with shifted compression", Kind{Noise: NoiseDevice, Est: EstSAGA, Shifted: true}},
	"local":        {"local", "private local training: K local noisy SGD steps from x_t on fresh samples, only the last iterate's difference released", Kind{Noise: NoiseDevice, Est: EstLocal}},
}

// Names lists the registered algorithm names, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the algorithm called name.
func Lookup(name string) (Algorithm, error) {
	a, ok := registry[name]
	if !ok {
		return Algorithm{}, fmt.Errorf("optim: unknown algorithm %q (valid: %v)", name, Names())
	}
	return a, nil
}

// UsesXPrev reports whether the algorithm's rounds carry x_{t-1}.
func (a Algorithm) UsesXPrev() bool { return a.Kind.Mu2 }

// NeedsLocalData reports whether the device half needs its whole local
// dataset through shared/optim's LocalDataSetter (SVRG and SAGA full-gradient terms).
func (a Algorithm) NeedsLocalData() bool { return a.Kind.Est == EstSVRG || a.Kind.Est == EstSAGA }

// CancelsNoise reports whether devices add noise that cancels over their
// releases ("nc", "shared": the message carries y_n - Y).
func (a Algorithm) CancelsNoise() bool { return a.Kind.Noise == NoiseNC }

// FreshNoise reports whether each device release carries fresh noise of
// its own (the fresh-noise algorithms, "local" included).
func (a Algorithm) FreshNoise() bool { return a.Kind.Noise == NoiseDevice }

// HiddenSteps reports whether a release is the last iterate of local
// steps the server does not see ("local").
func (a Algorithm) HiddenSteps() bool { return a.Kind.Est == EstLocal }

// Shifted reports whether releases use SoteriaFL's shifted compression.
func (a Algorithm) Shifted() bool { return a.Kind.Shifted }

// Trusted reports whether p's algorithm trusts the server with un-noised
// updates ("trusted", and the non-private references "mu2" and "sgd").
// In every other algorithm no un-noised update leaves a device.
func Trusted(p session.Params) bool {
	a, err := Lookup(p.Algorithm)
	return err == nil && a.Kind.Noise != NoiseDevice && a.Kind.Noise != NoiseNC
}

// Private reports whether p's algorithm gives a privacy guarantee.
func Private(p session.Params) bool {
	a, err := Lookup(p.Algorithm)
	return err == nil && a.Kind.Noise != NoiseNone
}
