package session

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Params are the public parameters of a training session: the coordinator
// broadcasts them (in a Welcome or a Start), every device checks them and
// derives its own noise from them (DESIGN principle 2), and the
// algorithms, the simulator and the planner read them. Zero values mean
// "not set"; shared/optim/algo.Validate says which fields an algorithm
// needs, and wire.ValidateSession which values no session can have.
// Defaults are written beside each field. The JSON names are the
// protocol's.
type Params struct {
	// Name is the session's display name.
	Name string `json:"name"`
	// Dim is the model dimension d: every vector on the wire has it
	// (derived from Model, Features and Classes by model.New).
	Dim int `json:"dim"`
	// DeadlineMillis is the round deadline.
	DeadlineMillis int `json:"deadline_ms"`
	// Trusted is true when the coordinator adds the noise (trusted-server
	// mode); informational: devices derive it from Algorithm
	// (algo.Trusted).
	Trusted bool `json:"trusted"`
	// DemoShards is true when the coordinator serves demo data shards at
	// /shard (demo only: real devices hold their own data).
	DemoShards bool `json:"demo_shards,omitempty"`

	Algorithm string `json:"algorithm"` // registry name, see algo.Names(); required
	Model     string `json:"model"`     // model name for model.New ("logreg", "mlp", ...)
	Features  int    `json:"features"`  // input features of the model
	Classes   int    `json:"classes"`   // classes of the model

	M      int `json:"M"`      // devices in the session (>= 1); required
	Cohort int `json:"cohort"` // m, devices per round, 1 <= m <= M; the server divides by m
	Rounds int `json:"rounds"` // T, rounds (>= 1)
	Batch  int `json:"batch"`  // b, samples per device per round (>= 1)

	// MaxReleases is the most releases (messages) one device makes in
	// the session, re-asked rounds included; 0 means T. The session's
	// owner fixes it from what the devices can actually use (single pass:
	// the number of minibatches of b the largest device's data holds),
	// the noise is calibrated to it (ReleaseCap) and every device refuses
	// the release after it, so it is a public parameter like T: no noise
	// depends on what a device actually holds. 0 <= MaxReleases <= T.
	MaxReleases int `json:"max_releases,omitempty"`

	// Clip is the per-sample L2 clipping bound S (for the mu^2 algorithms,
	// of each per-sample correction s; for the SGD family, of each
	// per-sample gradient: SoteriaFL's G). If 0, S = G + 2 L D from the
	// three fields below (noise-cancellation paper, Lemma 4.2). Required
	// (directly or through G, L, D) by every private algorithm; for "mu2"
	// and "sgd", 0 with G = L = 0 means no clipping.
	Clip float64 `json:"clip"`
	G    float64 `json:"G,omitempty"` // Lipschitz constant (used only to derive Clip)
	L    float64 `json:"L,omitempty"` // smoothness constant (used only to derive Clip)

	Eta      float64 `json:"eta"`                // step size eta (> 0); required
	Diameter float64 `json:"diameter,omitempty"` // D: feasible set is the ball of radius D/2 centred at 0; 0 = unconstrained

	// Privacy target: either Rho, the papers' rho_p (each device is
	// rho_p^2/2-zCDP in standard Bun–Steinke zCDP), or Epsilon and Delta
	// ((epsilon, delta)-DP per device, turned into the largest zCDP rho
	// whose conversion meets it, privacy.LedgerRho). Exactly one of
	// the two for private algorithms; neither for "mu2" and "sgd".
	Rho     float64 `json:"rho_p,omitempty"`
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`

	Compressor string `json:"compressor,omitempty"` // mechanism.ParseSpec spec; "" = dense float32

	// LocalSize is the number of samples each device holds (the SoteriaFL
	// local dataset size; SVRG/SAGA full gradients run over it). Required
	// by "soteria-svrg" and "soteria-saga".
	LocalSize int `json:"local_size,omitempty"`
	// SnapshotProb is SVRG's snapshot probability p; 0 = b / LocalSize
	// (SoteriaFL, Corollary 2).
	SnapshotProb float64 `json:"snapshot_prob,omitempty"`
	// ShiftStep is SoteriaFL's shift step gamma; 0 = the paper's
	// sqrt((1+2 omega) / (2 (1+omega)^3)) (Theorem 3).
	ShiftStep float64 `json:"shift_step,omitempty"`
	// LocalSteps is K, the local noisy SGD steps of "local" per round: the
	// round's Batch samples are split, in order, into K step batches of
	// Batch/K (K must divide Batch); 0 = Batch (one sample per step). Only
	// "local" uses it (shared/optim's local.go).
	LocalSteps int `json:"local_steps,omitempty"`
	// LocalEpochs is E, the passes of "local" over the round's K step
	// batches (E K hidden steps, cyclic); 0 = 1, at most MaxLocalEpochs.
	// Each pass reuses the round's samples, so E > 1 costs more: E noisy
	// steps by composition, or, when the model certifies it, one noise
	// vector on the last iterate calibrated to E times a step's
	// sensitivity (output perturbation, algo.LocalOutputPerturbation).
	LocalEpochs int `json:"local_epochs,omitempty"`

	// SignalBound is an assumed signal bound D (0: none): for every
	// honest device, any n of its estimates (clipped, before rounding and
	// noise) that the server sums in one history have a sum of norm at
	// most E + (n - 1) D, E the clipping bound. It is an assumption about
	// the devices' data that no device enforces and no test can check; a
	// session's owner states it only when every device trains on an iid
	// shard of one dataset (the coordinator's demo shards dealt nearly
	// iid), where the minibatch noise that makes single estimates long
	// cancels over rounds. plausible.Checker's running-sum and persistence
	// tests then use it in place of n E, so a device that pushes one way
	// round after round is held to about D a round (plus what its noise
	// hides); an honest device whose sums grow faster may be refused like
	// a hostile one (docs/security.md, "An assumed signal bound"). It
	// takes no part in the noise or the privacy accounting.
	SignalBound float64 `json:"signal_bound,omitempty"`

	// Threshold is t for "shared": the fewest updates a round's sum may
	// hold (secure aggregation unmasks no smaller sum, and a round with
	// fewer survivors is discarded); 0 = ceil(0.7 m). Colluders is c: the
	// most cohort members assumed to give their secrets to the
	// coordinator. The noise each device draws is a share sized for the
	// h = t - c honest survivors (algo.ShareScale). Both are 0 for every
	// other algorithm.
	Threshold int `json:"threshold,omitempty"`
	Colluders int `json:"colluders,omitempty"`

	// Labels names the classes for display, comma-separated in class
	// order ("" = show class numbers). It takes no part in training.
	Labels string `json:"labels,omitempty"`
	// Task is the session's task definition, the text of a
	// browserfl.task/v1 JSON document (see shared/task), when the data are
	// rows a person types or picks rather than the built-in pictures;
	// empty for picture sessions. It is a string, not raw JSON, so that
	// Params stays comparable (devices detect a changed session with ==).
	// wire only bounds its length: plan.SessionTask parses it and checks
	// it matches Features, Classes, Model and Labels.
	Task string `json:"task,omitempty"`
	// Transform names the features the model reads, computed by each
	// device from each of its own pictures before training and before
	// answering a drawing ("" = the raw inputs; "scatter" = the
	// scattering transform, docs/features.md). Features is then the
	// transform's output dimension, not the pictures'. wire only bounds
	// its length: plan.SessionFeatures knows the kinds, and a device
	// refuses a session whose kind it does not know.
	Transform string `json:"transform,omitempty"`
}

// MaxLocalEpochs bounds Params.LocalEpochs (each epoch is a pass of
// hidden local steps on a device): the protocol and the algorithms both
// refuse more.
const MaxLocalEpochs = 1000

// MaxRounds bounds Params.Rounds: a million rounds, 5,000 times the
// one-lesson preset and 800 times the papers' longest run. Every part
// that plans a session keeps a table with one entry per release (the
// ledger's worst-case schedule, the server's tests' noise per release
// count), about 40 MB at this bound; the protocol and the algorithms
// both refuse more.
const MaxRounds = 1_000_000

// DefaultThresholdShare is the default threshold of "shared" as a share
// of the cohort: a round's sum must hold at least ceil(0.7 m) updates.
const DefaultThresholdShare = 0.7

// LabelNames returns the class names of Labels, or nil when there are none.
func (p Params) LabelNames() []string {
	if p.Labels == "" {
		return nil
	}
	return strings.Split(p.Labels, ",")
}

// S returns the clipping bound in force: Clip, or G + 2 L D when Clip is 0.
func (p Params) S() float64 {
	if p.Clip > 0 {
		return p.Clip
	}
	return p.G + 2*p.L*p.Diameter
}

// ReleaseCap is the most releases one device makes in the session:
// MaxReleases, or T when it is 0 (a device cannot answer more rounds than
// there are, and a re-asked round is a new release that counts). Every
// device refuses its (ReleaseCap+1)-th release whatever its ledger says,
// and every calibration and worst case (plan.Compute) counts at most this
// many releases.
func (p Params) ReleaseCap() int {
	if p.MaxReleases > 0 && p.MaxReleases < p.Rounds {
		return p.MaxReleases
	}
	return p.Rounds
}

// SinglePassReleases is the most releases a device holding n samples can
// make in a single-pass session with minibatches of b: floor(n / b),
// capped at T. It is what an owner who knows the devices' data sizes (the
// simulator, the planner, the coordinator's demo shards) sets
// MaxReleases to, using the largest device's n.
func (p Params) SinglePassReleases(n int) int {
	if p.Batch <= 0 || n <= 0 {
		return 0
	}
	return min(p.Rounds, n/p.Batch)
}

// PlannedReleases is the number of releases a device's per-release noise
// is calibrated for in the fresh-noise algorithms ("noisysgd", "cdpsgd",
// "soteria-*"): ceil(T m / M), the expected participations under uniform
// cohorts, and never more than ReleaseCap. A device refuses to release
// beyond its budget, so a device sampled more often than planned stops
// participating instead of over-spending.
func (p Params) PlannedReleases() int {
	if p.M <= 0 {
		return 0
	}
	return min(p.ReleaseCap(), (p.Rounds*p.Cohort+p.M-1)/p.M)
}

// SinglePass reports whether the algorithm's privacy analysis needs each
// sample used at most once, so that whatever feeds the device must hand it
// fresh samples and stop when they run out: true for the mu^2 family (the
// noise-cancellation analysis bounds partial sums of corrections, and a
// reused sample would enter several of them), for noisy SGD (see
// ParallelComposition) and for the non-private references (the papers'
// single-pass experiments). The SoteriaFL family and CDP-SGD draw
// minibatches from the whole local set every round; their accounting
// (algo.FreshSigma) pays for reuse.
func (p Params) SinglePass() bool {
	switch p.Algorithm {
	case "cdpsgd", "soteria-sgd", "soteria-svrg", "soteria-saga":
		return false
	}
	return true
}

// ParallelComposition reports whether a device's releases compose in
// parallel rather than additively: true for "noisysgd", whose releases are
// each a clipped minibatch gradient of fresh samples plus fresh noise, and
// whose samples are used once (single pass, enforced by the runtime that
// feeds the device, as for "nc"). Under the replace-one relation a changed
// sample enters exactly one release, and given the earlier outputs every
// other release has the same distribution on both datasets, so the
// device's whole transcript costs the zCDP of one release (parallel
// composition; McSherry 2009, which carries over to zCDP because the
// privacy-loss variable of the untouched releases is 0). The SoteriaFL
// family and CDP-SGD draw minibatches from the whole local set every round,
// so their releases compose additively.
//
// "local" is parallel for the same reason: each of its hidden local steps
// is a noisy-SGD release of a fresh step batch (shared/optim's local.go).
func (p Params) ParallelComposition() bool {
	return p.Algorithm == "noisysgd" || p.Algorithm == "local"
}

// ComposedReleases is the number of releases whose costs add up in a
// device's ledger: 1 under ParallelComposition, PlannedReleases (at most
// ReleaseCap) otherwise.
func (p Params) ComposedReleases() int {
	if p.ParallelComposition() {
		return 1
	}
	return p.PlannedReleases()
}

// SharedThreshold is t, the fewest updates a "shared" round's sum may
// hold: Threshold, or ceil(DefaultThresholdShare m) when it is 0. It is 0
// for every other algorithm.
func (p Params) SharedThreshold() int {
	if p.Algorithm != "shared" {
		return 0
	}
	if p.Threshold > 0 {
		return p.Threshold
	}
	return max(1, int(math.Ceil(DefaultThresholdShare*float64(p.Cohort)-1e-9)))
}

// SharedHonest is h = t - c, the fewest honest devices whose fresh shares
// enter a "shared" round's sum (0 for every other algorithm).
func (p Params) SharedHonest() int {
	if p.Algorithm != "shared" {
		return 0
	}
	return p.SharedThreshold() - p.Colluders
}

// LocalK is K for "local": LocalSteps, or Batch when 0.
func (p Params) LocalK() int {
	if p.LocalSteps > 0 {
		return p.LocalSteps
	}
	return p.Batch
}

// LocalE is E for "local": LocalEpochs, or 1 when 0.
func (p Params) LocalE() int { return max(1, p.LocalEpochs) }

// StepBatch is the number of samples in each hidden local step of
// "local" (Batch / K); Batch for every other algorithm.
func (p Params) StepBatch() int {
	if p.Algorithm != "local" {
		return p.Batch
	}
	k := p.LocalK()
	if k < 1 {
		return p.Batch
	}
	return p.Batch / k
}

// HiddenSteps is the number of hidden steps behind one release of
// "local" (K E: E passes over K step batches); 1 for every other
// algorithm.
func (p Params) HiddenSteps() int {
	if p.Algorithm != "local" {
		return 1
	}
	return p.LocalK() * p.LocalE()
}

// Differences lists the fields in which now differs from was, by their
// JSON names, each with both values ("rounds 300, now 100"; a long value
// is cut, a task is only said to differ): what an operator must be told
// when a stored session and the settings it is restarted with disagree.
func Differences(was, now Params) []string {
	var out []string
	a, b := reflect.ValueOf(was), reflect.ValueOf(now)
	t := a.Type()
	for i := range t.NumField() {
		x, y := a.Field(i).Interface(), b.Field(i).Interface()
		if x == y {
			continue
		}
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" {
			name = t.Field(i).Name
		}
		if name == "task" {
			out = append(out, "task (another definition)")
			continue
		}
		out = append(out, fmt.Sprintf("%s %s, now %s", name, shortValue(x), shortValue(y)))
	}
	return out
}

// shortValue formats v for Differences: at most 40 characters.
func shortValue(v any) string {
	s := fmt.Sprintf("%v", v)
	if str, ok := v.(string); ok {
		s = strconv.Quote(str)
	}
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}
