package sim

import (
	"fmt"
	"math"
	"slices"

	"browserfl/engine/check"
	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/optim/plausible"
)

// Attack kinds: what a hostile device sends in place of its update
// (docs/security.md, "The attack table"). Every hostile device is
// adaptive: it knows the session's public parameters and therefore the
// server's tests (plausible.Checker, or only the norm bound with NoChecks),
// and scales its message to the largest multiple of its chosen direction
// that passes them, given its own history. It adds no noise (noise would
// only use up room under the tests). The omniscient kinds (alie, ipm)
// also see the honest messages of the round.
const (
	AttackSpike    = "spike"    // one coordinate: the bias of class 0 of logistic regression
	AttackBlock    = "block"    // a shift spread evenly over class 0's block of weights
	AttackSignFlip = "signflip" // minus the device's own honest estimate
	AttackALIE     = "alie"     // "a little is enough" (Baruch et al. 2019): mean - z std of the honest messages
	AttackIPM      = "ipm"      // inner-product manipulation (Xie et al. 2020): minus the honest mean
	AttackDrift    = "drift"    // a fixed random dense direction, the same every round (time-coupled)
	// AttackWrap is a spoiler: one coordinate (the bias of the class of
	// the device's index) at the largest value of secure aggregation's
	// ring (2^(k-1) - 1 grid units, beyond the range an honest client
	// masks), so that the round's sum wraps; in the other modes a message
	// of that size. It is not scaled to pass.
	AttackWrap = "wrap"
)

// AttackKinds lists the kinds in the order of the attack table.
var AttackKinds = []string{AttackSpike, AttackBlock, AttackSignFlip, AttackALIE, AttackIPM, AttackDrift, AttackWrap}

// attacker is the hostile part of a simulated device.
type attacker struct {
	kind  string
	dir   []float64 // fixed direction (spike, block, drift); scratch otherwise
	msg   []float64
	clean []float64
	dec   []float64
	buf   []byte
	spec  mechanism.Spec
	cap   float64 // largest norm per message (Config.AttackCap); 0: none
	// sum, in a shared-noise session, is the round's test of the sum
	// (the only one the server has): the attacker scales its message so
	// that the honest messages' sum plus the hostile devices' (each
	// assumed to send its own) passes it.
	sum *sumAttack
}

// sumAttack is what a hostile device of a shared-noise session knows of
// the server's test: the sum checker, the grid step and the ring.
type sumAttack struct {
	chk  *plausible.SumChecker
	step float64
	bits int
	hsum []float64 // scratch: the honest messages' sum
	try  []float64 // scratch: the sum with the candidate
}

// checkAttack validates cfg's attack settings.
func checkAttack(cfg Config, p optim.Params) error {
	if cfg.Attackers == 0 && cfg.Attack == "" {
		return nil
	}
	if !slices.Contains(AttackKinds, cfg.Attack) {
		return fmt.Errorf("sim: attack %q: want one of %v", cfg.Attack, AttackKinds)
	}
	if cfg.Attackers < 0 || cfg.Attackers > p.M {
		return fmt.Errorf("sim: %d attackers of %d devices", cfg.Attackers, p.M)
	}
	spec, err := mechanism.ParseSpec(p.Compressor)
	if err != nil {
		return err
	}
	switch spec.C.(type) {
	case mechanism.Dense32, mechanism.Dense64:
	default:
		return fmt.Errorf("sim: attacks are simulated with the dense compressors only, not %q", p.Compressor)
	}
	if spec.EF {
		return fmt.Errorf("sim: attacks are simulated with the dense compressors only, not %q", p.Compressor)
	}
	return nil
}

// newAttacker returns the hostile part of device i for kind in
// dimension d with classes classes.
func newAttacker(kind string, spec mechanism.Spec, d, classes int, seed uint64, i int) *attacker {
	a := &attacker{kind: kind, spec: spec, dir: make([]float64, d), msg: make([]float64, d), clean: make([]float64, d), dec: make([]float64, d)}
	block := d / max(classes, 1) // logistic regression: W_0 then b_0, then class 1...
	switch kind {
	case AttackSpike:
		a.dir[block-1] = -1 // the step moves against the sum: b_0 rises
	case AttackBlock:
		for j := range block {
			a.dir[j] = -1
		}
	case AttackWrap:
		// Each device its own class's bias: two wrapping devices on one
		// coordinate would cancel in the ring (2 (2^(k-1) - 1) = -2
		// modulo 2^k).
		a.dir[(i%max(classes, 1)+1)*block-1] = -1
	case AttackDrift:
		rng := mechanism.NewStream(seedFor(seed, "attack-drift", i), 0)
		for j := range a.dir {
			a.dir[j] = rng.NormFloat64()
		}
	}
	return a
}

// message writes the hostile message of round t into a.msg (a.buf its
// encoding, a.dec as decoded): the kind's direction scaled to the largest
// multiple the server's tests accept. honest holds the decoded honest
// messages of the round; a.clean is the device's own un-noised estimate.
func (a *attacker) message(chk check.Gate, hist *check.History, honest [][]float64, cohort, attackers int) []float64 {
	d := len(a.msg)
	dir := a.dir
	switch a.kind {
	case AttackSignFlip:
		dir = scratch(a, func(j int) float64 { return -a.clean[j] })
	case AttackIPM:
		dir = scratch(a, func(j int) float64 { return -mean(honest, j) })
	case AttackALIE:
		z := alieZ(cohort, attackers)
		dir = scratch(a, func(j int) float64 {
			mu := mean(honest, j)
			var v float64
			for _, h := range honest {
				v += (h[j] - mu) * (h[j] - mu)
			}
			if len(honest) > 1 {
				v /= float64(len(honest) - 1)
			}
			return mu - z*math.Sqrt(v)
		})
	}
	n := mechanism.Norm(dir)
	if !(n > 0) {
		dir, n = a.msg, 1 // nothing to push: send zeros
		clear(dir)
	}
	if a.kind == AttackWrap {
		return a.wrap(chk, dir)
	}
	// The largest scale that passes, by bisection on [0, hi] with hi at
	// the norm bound (or a large multiple when there is none).
	hi := chk.NormBound() / n
	if math.IsInf(hi, 0) {
		hi = 1e6 / n
	}
	if a.kind == AttackALIE {
		hi = 1 // ALIE's message is the point itself; only ever scaled down
	}
	// A candidate is tested as the server sees it: encoded, decoded (in
	// a shared-noise session, in the round's sum).
	if a.sum != nil {
		if a.kind != AttackALIE {
			hi = a.sum.chk.BlockLimit(d, len(honest)+attackers) / n
		}
		a.sum.honestSum(honest)
	}
	passes := func(s float64) bool {
		for j := range d {
			a.msg[j] = s * dir[j]
		}
		var err error
		if a.buf, err = a.spec.C.Compress(a.buf, a.dec, a.msg, nil); err != nil {
			return false
		}
		if a.sum != nil {
			return a.sum.passes(a.dec, len(honest), attackers)
		}
		return check.Message(chk, a.dec, mechanism.Norm(a.dec), hist) == nil
	}
	lo := 0.0
	if passes(hi) {
		lo = hi
	} else {
		for range 50 {
			mid := (lo + hi) / 2
			if passes(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
	}
	if a.cap > 0 {
		lo = min(lo, a.cap/n)
	}
	passes(lo)
	return a.msg
}

// wrap writes the wrapping message: dir's coordinate at the ring's
// largest value in a shared-noise session, else a thousand times the norm
// bound (or 1e30 without one).
func (a *attacker) wrap(chk check.Gate, dir []float64) []float64 {
	v := 1e30
	if b := chk.NormBound(); !math.IsInf(b, 0) {
		v = 1e3 * b
	}
	if a.sum != nil {
		v = float64(int64(1)<<(a.sum.bits-1)-1) * a.sum.step
	}
	for j := range a.msg {
		a.msg[j] = math.Abs(dir[j]) * v
	}
	var err error
	if a.buf, err = a.spec.C.Compress(a.buf, a.dec, a.msg, nil); err != nil {
		panic(fmt.Sprintf("sim: wrap message not encodable: %v", err))
	}
	return a.msg
}

// honestSum adds up the round's honest messages (grid multiples: exact).
func (s *sumAttack) honestSum(honest [][]float64) {
	clear(s.hsum)
	for _, h := range honest {
		for j, v := range h {
			s.hsum[j] += v
		}
	}
}

// passes reports whether the round's sum, the honest messages' plus k
// hostile messages dec (each rounded onto the grid, as a device's client
// masks it), passes the sum test.
func (s *sumAttack) passes(dec []float64, honest, k int) bool {
	for j, v := range dec {
		s.try[j] = s.hsum[j] + float64(k)*math.Round(v/s.step)*s.step
	}
	return s.chk.Check(s.try, honest+k) == nil
}

// scratch fills a.dir's spare use: the kinds whose direction changes
// every round write it into a buffer of their own.
func scratch(a *attacker, f func(int) float64) []float64 {
	for j := range a.dir {
		a.dir[j] = f(j)
	}
	return a.dir
}

func mean(vs [][]float64, j int) float64 {
	if len(vs) == 0 {
		return 0
	}
	var s float64
	for _, v := range vs {
		s += v[j]
	}
	return s / float64(len(vs))
}

// alieZ is z_max of Baruch et al. (2019): with n devices and k hostile,
// s = floor(n/2 + 1) - k honest devices must be won over, and z is the
// standard normal quantile of (n - s) / n.
func alieZ(n, k int) float64 {
	s := n/2 + 1 - k
	q := float64(n-s) / float64(n)
	if q <= 0 || q >= 1 {
		return 0
	}
	return math.Sqrt2 * math.Erfinv(2*q-1)
}

// Hostile is the device half of a hostile device: it runs the honest
// device half (so it spends budget and moves its state as an honest device
// would, and knows its own un-noised estimate), then sends its attack in
// place of the update. It keeps its own view of the server's history of it
// (the rounds it was asked, its included messages), as a live device can,
// so the same Hostile runs in the simulator and behind a native device
// runtime against the coordinator (sim's TestHostileIsTheProduct).
type Hostile struct {
	optim.Device // the honest half
	a            *attacker
	g            check.Gate
	hist         check.History
	last         []float64
	// Honest, when set before Prepare, holds the round's honest messages
	// (the simulator's omniscient attacker); live it is nil and the alie
	// and ipm kinds use the device's own estimate in their place.
	Honest            [][]float64
	cohort, attackers int
}

// NewHostile wraps the honest device half inner of device i of a session
// with parameters p (model dimension d) in an attacker of kind. With
// normOnly it assumes the server applies only the norm bound. cohort and
// attackers are for the alie kind's z (Baruch et al.).
func NewHostile(kind string, p optim.Params, d int, inner optim.Device, seed uint64, i int, normOnly bool, cohort, attackers int) (*Hostile, error) {
	if !slices.Contains(AttackKinds, kind) {
		return nil, fmt.Errorf("sim: attack %q: want one of %v", kind, AttackKinds)
	}
	spec, err := mechanism.ParseSpec(p.Compressor)
	if err != nil {
		return nil, err
	}
	if _, ok := inner.(optim.Introspector); !ok {
		return nil, fmt.Errorf("sim: the device half of %s does not expose its estimate", p.Algorithm)
	}
	chk, err := plausible.NewChecker(p, d)
	if err != nil {
		return nil, err
	}
	var g check.Gate = chk
	if normOnly {
		g = check.NormOnly(chk.NormBound())
	}
	return &Hostile{Device: inner, a: newAttacker(kind, spec, d, p.Classes, seed, i), g: g,
		hist: check.NewHistory(true), last: make([]float64, d), cohort: cohort, attackers: attackers}, nil
}

// Prepare runs the honest half, then returns the attack as the update.
func (h *Hostile) Prepare(r optim.Round, batch []dataset.Sample) (optim.Update, error) {
	up, err := h.Device.Prepare(r, batch)
	if err != nil {
		return up, err
	}
	h.hist.Ask()
	if err := h.Device.(optim.Introspector).Clean(h.a.clean); err != nil {
		return optim.Update{}, fmt.Errorf("sim: hostile device: %w", err)
	}
	honest := h.Honest
	if honest == nil && (h.a.kind == AttackIPM || h.a.kind == AttackALIE) {
		honest = [][]float64{h.a.clean}
	}
	h.a.message(h.g, &h.hist, honest, h.cohort, h.attackers)
	copy(h.last, h.a.dec)
	return optim.Update{T: up.T, Payload: slices.Clone(h.a.buf)}, nil
}

// Commit commits the honest half and adds the message to the history.
func (h *Hostile) Commit(t int) error {
	if err := h.Device.Commit(t); err != nil {
		return err
	}
	h.hist.Include(h.last)
	return nil
}
