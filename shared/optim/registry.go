package optim

import (
	"fmt"
	"io"
	"sort"

	"browserfl/shared/model"
)

type noiseKind uint8

const (
	noiseNone   noiseKind = iota // non-private reference
	noiseNC                      // device noise with noise cancellation
	noiseServer                  // trusted server adds the noise
	noiseDevice                  // fresh device noise per release
)

type estKind uint8

const (
	estSGD   estKind = iota // mean of b clipped gradients at x_t
	estMu2                  // mean of b clipped mu^2 corrections
	estSVRG                 // SoteriaFL SVRG estimator
	estSAGA                 // SoteriaFL SAGA estimator
	estLocal                // K hidden local noisy SGD steps, last iterate released (local.go)
)

type kind struct {
	mu2     bool // server takes the mu^2-SGD step (else projected SGD)
	noise   noiseKind
	est     estKind
	shifted bool // SoteriaFL shifted compression
}

// Algorithm is one registered algorithm: a constructor pair for its server
// and device halves.
type Algorithm struct {
	Name    string
	Summary string
	kind    kind
}

var registry = map[string]Algorithm{
	"nc":           {"nc", "DP-mu^2-FL with partial participation and noise cancellation (untrusted server)", kind{mu2: true, noise: noiseNC, est: estMu2}},
	"shared":       {"shared", "nc with shared noise: each device draws a share sized for a coordinator that sees only sums of at least t updates (secure aggregation)", kind{mu2: true, noise: noiseNC, est: estMu2}},
	"trusted":      {"trusted", "DP-mu^2-FL with a trusted server that adds the noise", kind{mu2: true, noise: noiseServer, est: estMu2}},
	"mu2":          {"mu2", "non-private mu^2-SGD (reference)", kind{mu2: true, noise: noiseNone, est: estMu2}},
	"sgd":          {"sgd", "non-private minibatch SGD (reference)", kind{noise: noiseNone, est: estSGD}},
	"noisysgd":     {"noisysgd", "noisy SGD: clipped gradient + fresh Gaussian per release, projected step", kind{noise: noiseDevice, est: estSGD}},
	"cdpsgd":       {"cdpsgd", "SoteriaFL Algorithm 1 (CDP-SGD): perturb then compress directly", kind{noise: noiseDevice, est: estSGD}},
	"soteria-sgd":  {"soteria-sgd", "SoteriaFL-SGD (Algorithm 3, option I) with shifted compression", kind{noise: noiseDevice, est: estSGD, shifted: true}},
	"soteria-svrg": {"soteria-svrg", "SoteriaFL-SVRG (Algorithm 3, option II) with shifted compression", kind{noise: noiseDevice, est: estSVRG, shifted: true}},
	"soteria-saga": {"soteria-saga", "SoteriaFL-SAGA (Algorithm 3, option III) with shifted compression", kind{noise: noiseDevice, est: estSAGA, shifted: true}},
	"local":        {"local", "private local training: K local noisy SGD steps from x_t on fresh samples, only the last iterate's difference released", kind{noise: noiseDevice, est: estLocal}},
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
func (a Algorithm) UsesXPrev() bool { return a.kind.mu2 }

// NeedsLocalData reports whether the device half needs its whole local
// dataset through LocalDataSetter (SVRG and SAGA full-gradient terms).
func (a Algorithm) NeedsLocalData() bool { return a.kind.est == estSVRG || a.kind.est == estSAGA }

// CancelsNoise reports whether devices add noise that cancels over their
// releases ("nc", "shared": the message carries y_n - Y).
func (a Algorithm) CancelsNoise() bool { return a.kind.noise == noiseNC }

// FreshNoise reports whether each device release carries fresh noise of
// its own (the fresh-noise algorithms, "local" included).
func (a Algorithm) FreshNoise() bool { return a.kind.noise == noiseDevice }

// HiddenSteps reports whether a release is the last iterate of local
// steps the server does not see ("local").
func (a Algorithm) HiddenSteps() bool { return a.kind.est == estLocal }

// Shifted reports whether releases use SoteriaFL's shifted compression.
func (a Algorithm) Shifted() bool { return a.kind.shifted }

// Estimator is implemented by every server: a copy of its gradient
// estimate (qtilde for the mu^2 family, where "trusted" gives the exact q
// before the round's noise; the server shift h for SoteriaFL; nil for the
// others). The coordinator's invariant checks and the simulator use it.
type Estimator interface {
	Estimate() []float64
}

// NewServer returns the server half for p starting from x0 (copied; its
// length is the model dimension). entropy is the server's randomness
// (crypto/rand.Reader in the product; used only by "trusted" for its
// noise).
func NewServer(p Params, x0 []float64, entropy io.Reader) (Server, error) {
	if err := Validate(p); err != nil {
		return nil, err
	}
	a, _ := Lookup(p.Algorithm)
	return newServer(p, a, x0, entropy)
}

// NewDevice returns the device half for p computing gradients with m (the
// device keeps m; give each device its own model.Clone). entropy supplies
// a fresh 32-byte seed per release (crypto/rand.Reader in the product, a
// deterministic mechanism.Stream in the simulator).
func NewDevice(p Params, m model.Model, entropy io.Reader) (Device, error) {
	if err := Validate(p); err != nil {
		return nil, err
	}
	a, _ := Lookup(p.Algorithm)
	if a.kind.est == estLocal {
		return newLocalDevice(p, a, m, entropy)
	}
	return newDevice(p, a, m, entropy)
}
