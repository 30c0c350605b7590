// Package optim holds every training algorithm of the product as a server
// half and a device half: plain Go with no I/O, deterministic given their
// entropy sources. The simulator, the coordinator, the native headless
// device and the WebAssembly page all run these same halves; only the
// transport between them differs.
//
// A round t goes:
//
//	server.Next()                      -> Round{T, X, XPrev}   (broadcast to the cohort)
//	device.Prepare(round, batch)       -> Update               (ledger charged, N_i advanced)
//	server.Apply(t, includedUpdates)                            (aggregate, step; caller persists)
//	device.Commit(t) or device.Abort(t)                         (Y_i / residual advanced on inclusion only)
//
// This is DESIGN principle 3 (exactly-once noise state): a device charges its
// privacy ledger when it sends, and commits its noise state only when the
// server confirms the update was included.
//
// # Algorithms
//
// Build the halves with NewServer(p, x0, entropy) and NewDevice(p, model,
// entropy) from a Params that algo.Validate accepts. The registry, the
// parameters' validity and every privacy calibration the halves use (the
// sensitivities and noise scales, and the analysis behind them) are in
// shared/optim/algo, a function of the public parameters alone;
// algo.Names lists the registry: "nc"
// (noise-cancellation paper, Algorithm 1: untrusted server, partial
// participation), "trusted" (full-participation paper, Algorithm 2),
// "noisysgd", "cdpsgd" (SoteriaFL Algorithm 1), "soteria-sgd",
// "soteria-svrg", "soteria-saga" (SoteriaFL Algorithms 2-3), "local"
// (private local training: K hidden noisy SGD steps per round, only the
// last iterate's difference released; local.go), and the non-private
// references "mu2" and "sgd". The mu^2 family uses alpha_t = t
// and the feasible set K = ball of radius D/2 centred at 0 (Params.Diameter;
// 0 = unconstrained); the initial point is projected onto K.
//
// # Floating point
//
// A private device never adds floating-point noise to its estimate: the
// bits of value + ziggurat draw can reveal the value (Mironov 2012). It rounds its estimate v onto the grid step * Z, step =
// mechanism.GridStep(Delta, d), a power of two fixed by the public
// parameters (Delta is the release sensitivity, algo.Sensitivity), adds an exact
// discrete Gaussian in grid units, and sends step times the integer
// vector. Rounding moves each coordinate by at most 1/2, so the integer
// estimate's sensitivity is Delta/step + sqrt(d) (mechanism.GridSensitivity);
// the discrete sigma is that times sigma/Delta, rounded up
// (mechanism.DiscreteSigma), so each release costs at most the
// Delta^2/(2 sigma^2) the ledger charges (Canonne, Kamath and Steinke
// 2020, Theorem 14), by construction. In "nc" the message is
// step * (V_N + Y_N - Y_{N-1}) with V_N the rounded correction and Y the
// discrete noises, so the analysis above holds with integer partial sums.
// Everything after that (compression, error feedback, SoteriaFL shifts)
// is a function of the released integers and of the independent
// compressor stream: post-processing. A device refuses (algo.ErrUnsafe) a
// compressor not known to be post-processing, a grid outside the exact
// float64 range, and a noise scale beyond the exact sampler's. The
// trusted server draws its noise the same way: it releases
// step (round(q_t / step) + Z_t) with Z_t of DiscreteSigma(algo.TrustedSigma,
// algo.TrustedSensitivity) grid units. The other algorithms' scales are
// algo.NCSigma and algo.FreshSigma; algo.Sensitivity lists the per-release
// bounds.
//
// # Exactly-once state and the noise-cancellation identity
//
// Prepare advances N_i and charges the ledger; Y_i, the error-feedback
// residual e_i, the SoteriaFL shift h_i and the SVRG/SAGA memories change
// only in Commit; Abort leaves them (the charge stays: a message that was
// sent was released). The server divides by the cohort size m even when
// fewer updates arrive (missing devices count as zero messages). Hence,
// after any sequence of rounds with any subset of each cohort included,
//
//	qtilde = q + (1/m) sum_i (Y_i - e_i)
//
// where q is the sum over rounds of (1/m) times the sum of the included
// devices' un-noised estimates (e_i = 0 without error feedback; with
// unbiased compression and no error feedback the identity does not hold
// and the compression errors accumulate in qtilde).
//
// Aborted messages stay private: the transcript a server sees (included
// and aborted messages alike) is a post-processing of the releases
// P_k = (sum of the device's included s before k) + s_k + y_k, each with
// fresh noise y_k of the scale of the k-th participation and sensitivity
// 2S/b, so the harmonic-sum bound above covers every message sent.
//
// A runtime must persist the device state (MarshalBinary) after Prepare and
// before the update leaves: a device restored from an older state could
// otherwise answer the same round twice with fresh noise while charging
// once. The pending round is part of the state, so after a restart the
// runtime asks the coordinator whether round PendingRound() was included and
// calls Commit or Abort.
//
// # Randomness
//
// Each Prepare reads one 32-byte seed from the device's entropy source
// (crypto/rand.Reader in the product; a deterministic mechanism.Stream in
// the simulator) and derives independent ChaCha20 streams from it for the
// noise, the compressor and the algorithm's coins. A device stores Y_i as
// its seed and integer sigma, not as a vector; the discrete sampler is a
// deterministic function of the stream, so Y_i regenerates bit for bit on
// every platform (native and WebAssembly).
//
// A Device or Server is not safe for concurrent use. Memory per device is
// a few d-vectors (plus n x d for "soteria-saga").
package optim

import (
	"io"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
	"browserfl/shared/session"
)

// Params are a session's public parameters (shared/session.Params, the
// type the protocol carries too): the coordinator broadcasts them, every
// device checks them (algo.Validate) and derives its own noise from them
// (DESIGN principle 2). Zero values mean "not set"; algo.Validate says which
// fields an algorithm needs.
type Params = session.Params

// Round is what the server sends to each device chosen at round T.
type Round struct {
	T     int       // round index, 1-based
	X     []float64 // query point x_t (the current iterate for SGD-style algorithms)
	XPrev []float64 // x_{t-1} for mu^2-SGD corrections; nil when the algorithm does not use it
}

// Update is a device's reply to a Round.
type Update struct {
	T       int
	Payload []byte // encoded vector (see shared/mechanism codecs): dense float32 or compressed
}

// Server is the server half of an algorithm.
type Server interface {
	// Next returns the broadcast of the next round.
	Next() Round
	// Apply aggregates the included updates of round t and takes the step.
	// It rejects malformed payloads, wrong rounds and NaN/Inf with an error
	// and leaves the state untouched in that case.
	Apply(t int, updates []Update) error
	// Model returns the parameters to evaluate (do not modify): x_t, the
	// output of the mu^2 algorithms and the iterate of the SGD family.
	Model() []float64
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

// SumApplier is implemented by server halves that can take a round's
// updates already decoded and summed, for callers (the coordinator) that
// decode and validate each payload once as it arrives. ApplySum(t, sum, n)
// takes the same step as Apply(t, updates) with n updates whose decoded
// vectors, added in the order Apply would add them, give sum: the result
// is bit for bit the same. It rejects a wrong round, n above the cohort, a
// sum of the wrong length or not finite, and leaves the state untouched
// in that case. sum is not retained.
type SumApplier interface {
	ApplySum(t int, sum []float64, n int) error
}

// Device is the device half of an algorithm.
type Device interface {
	// Prepare computes the reply to r from a minibatch of the device's
	// own samples, charges the ledger and holds the new noise state as
	// pending for round r.T. The batch must hold exactly Params.Batch
	// samples (the sensitivity assumes it), except for "soteria-svrg" and
	// "soteria-saga", which sample their own minibatch from the data given
	// to SetLocalData and ignore batch. It refuses (with an error, nothing
	// charged) a round not after the last prepared one, a round beyond T,
	// a round while another is pending (ErrPending), malformed or
	// non-finite query points, non-finite gradients, and a release that
	// would exceed the session budget (ErrBudget).
	Prepare(r Round, batch []dataset.Sample) (Update, error)
	// Commit makes the pending state of round t permanent (the server
	// confirmed inclusion).
	Commit(t int) error
	// Abort discards the pending state of round t (the update was not
	// included); the privacy already charged stays charged.
	Abort(t int) error
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

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
	if err := algo.Validate(p); err != nil {
		return nil, err
	}
	a, _ := algo.Lookup(p.Algorithm)
	return newServer(p, a, x0, entropy)
}

// NewDevice returns the device half for p computing gradients with m (the
// device keeps m; give each device its own model.Clone). entropy supplies
// a fresh 32-byte seed per release (crypto/rand.Reader in the product, a
// deterministic mechanism.Stream in the simulator).
func NewDevice(p Params, m model.Model, entropy io.Reader) (Device, error) {
	if err := algo.Validate(p); err != nil {
		return nil, err
	}
	a, _ := algo.Lookup(p.Algorithm)
	if a.Kind.Est == algo.EstLocal {
		return newLocalDevice(p, a, m, entropy)
	}
	return newDevice(p, a, m, entropy)
}
