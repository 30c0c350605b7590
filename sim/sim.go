// Package sim runs any of the product's algorithms offline, in one
// process, through the same server and device halves (shared/optim) that
// the coordinator and the browser run: a simulator result is a result
// about the product (DESIGN principle 1).
//
// A run is deterministic given Config.Seed: every device draws its noise
// seeds from its own ChaCha20 stream derived from the run seed, the server
// from another; cohorts come from optim.SampleCohort with the run seed and
// minibatches from optim.Minibatch, the same rules the coordinator and the
// device runtime use; each round's query points reach the devices through
// the wire's round frame (float32), as in the product; device steps run
// in parallel but each device only touches its own state, and updates are
// handed to the server sorted by device, as the coordinator does. With
// the same seeds, a simulated session and a live one (coordinator and
// native devices over websockets) end with the same model, bit for bit
// (TestSimulatorIsTheProduct).
package sim

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"time"

	"browserfl/engine"
	"browserfl/engine/check"
	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/optim/plausible"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
	"browserfl/shared/wire"
)

// Config describes one simulated run.
type Config struct {
	Params optim.Params // algorithm and session parameters (Features/Classes filled from Train)

	Train, Test dataset.Set
	Partition   dataset.Scheme // how Train is split over Params.M devices
	Seed        uint64

	// EvalEvery evaluates the model on Test every K rounds (and after the
	// last round); default 10. EvalSamples limits the evaluation to the
	// first n test samples (0 = all).
	EvalEvery   int
	EvalSamples int
	// Delta is the owner's delta, at which each device's epsilon is
	// reported (default plan.DefaultDelta, as on the page; never the
	// delta a session wrote its target at).
	Delta float64
	// Workers runs device steps in parallel (default GOMAXPROCS); results
	// do not depend on it.
	Workers int
	// Progress, if not nil, receives a progress bar.
	Progress io.Writer

	// Attack makes the first Attackers devices hostile: each sends a
	// message of this kind (AttackKinds) instead of its update, scaled to
	// pass the server's tests (attack.go).
	Attack    string
	Attackers int
	// AttackCap, if positive, caps each hostile message's norm (a
	// research knob: it separates the one-time push a hostile device can
	// hide in its first messages from its steady push per round).
	AttackCap float64
	// NaiveAttack makes the hostile devices assume the server applies
	// the norm bound only (they then send up to it, and the server's
	// other tests refuse what they must).
	NaiveAttack bool
	// MeasureSums keeps every honest device's estimates (prefix sums, 8 d
	// bytes a release) to measure Result.HonestSumRate.
	MeasureSums bool
	// NormOnly applies only the L2 norm bound to each message (the
	// server before plausible.Checker), to measure what the other tests buy.
	// By default every message goes through plausible.Checker, as in the
	// coordinator; in a shared-noise session only each round's sum is
	// tested (engine.CheckSum), as there.
	NormOnly bool
	// Dropout, if not nil, says whether device i's message of round t is
	// lost: the device prepares it (its samples and noise are spent, as
	// on a page that goes away after computing) and goes away; the
	// server never sees it and counts the device a miss at once, as the
	// coordinator does for a member whose connection ends; the device
	// half then learns "excluded" and aborts.
	Dropout func(t, i int) bool
	// Withhold, if not nil, says whether device i, a member of round t
	// planned as plan, prepares its message and never sends it while
	// staying there (a page that is open but does not answer): the round
	// closes at its target (or, with fewer updates, at its deadline) and
	// the engine decides whether the device missed it (engine.Missed).
	// The plan is given so that a test can choose whom to withhold. The
	// simulator collects every member's message at once, so a round in
	// which more members answer than its target includes them all, where
	// the coordinator includes the first to arrive: a configuration that
	// needs the product's results withholds enough.
	Withhold func(t, i int, plan engine.Plan[int]) bool
	// MaxMisses is how many asked rounds in a row a device may miss
	// before it is no longer sampled but only probed (default
	// engine.DefaultMaxMisses, the coordinator's).
	MaxMisses int
}

// Result is the outcome of a run.
type Result struct {
	// Params are the parameters as run: Config.Params with what the run
	// fills in (the model's shape, the local size of the algorithms that
	// keep local data), so that figures stated for the run are its own.
	Params  optim.Params
	Records []Record
	// FinalAccuracy and FinalLoss are the last evaluation's figures.
	FinalAccuracy, FinalLoss float64
	// Rounds is the number of rounds run (fewer than T when every device
	// ran out of fresh samples or budget).
	Rounds int
	// Declined counts device refusals (budget or data exhausted).
	Declined int
	Elapsed  time.Duration
	Model    []float64
	// RejectedHonest and RejectedHostile count the messages the server's
	// tests refused, from honest and from hostile devices.
	RejectedHonest, RejectedHostile int
	// RejectedSums counts, in a shared-noise session, the round attempts
	// whose sum failed its tests (engine.CheckSum), each discarded and run
	// again; RejectedSumsHonest those of them with no hostile device in
	// the sum.
	RejectedSums, RejectedSumsHonest int
	// Included lists each round's included devices (sorted), Dropped
	// the messages lost to Config.Dropout, Withheld those withheld by
	// Config.Withhold.
	Included [][]int
	Dropped  int
	Withheld int
	// Ledgers are the devices' privacy ledgers at the end (zero for a
	// device half that keeps none).
	Ledgers []privacy.Ledger
	// HonestSignal is the largest L2 norm of an honest device's
	// un-noised estimate as it enters a release (clipped, rounded onto
	// the grid: optim.Introspector's Clean) over every device and round:
	// the figure an assumed signal bound (optim.Params.SignalBound) must
	// hold (docs/security.md, "An assumed signal bound"). 0 when no
	// honest device half exposes it. HonestDrift is the largest distance
	// of an honest estimate from the mean of its round's honest estimates.
	HonestSignal, HonestDrift float64
	// HonestSumRate (with Config.MeasureSums) is the largest
	// (||W|| - S) / (n - 1) over every honest device and every run W of
	// n >= 2 of its consecutive included estimates (summed): the D that
	// an assumed bound ||W|| <= S + (n - 1) D must exceed.
	HonestSumRate float64
}

type simDevice struct {
	id      int
	dev     optim.Device
	shard   []dataset.Sample
	cursor  int
	batch   []dataset.Sample
	retired bool
	// The server's record of the device: its history (the check stage)
	// and how it answered its rounds (the plan stage). Every simulated
	// device is trusted from its first round, as the coordinator's
	// Config.TrustNewDevices.
	hist     check.History
	standing engine.Standing
	hostile  *Hostile    // nil for an honest device
	clean    []float64   // scratch for the un-noised estimate (honest devices)
	last     float64     // norm of its un-noised estimate at its last Prepare
	signal   float64     // largest such norm so far
	prefix   [][]float64 // Config.MeasureSums: sums of its first k included estimates, k = 0, 1, ...
}

// seedFor derives a 32-byte seed for a named stream of the run.
func seedFor(run uint64, what string, i int) mechanism.Seed {
	var b [8 + 8]byte
	binary.LittleEndian.PutUint64(b[:8], run)
	binary.LittleEndian.PutUint64(b[8:], uint64(i))
	h := sha256.New()
	h.Write([]byte("browserfl/sim/" + what + "/"))
	h.Write(b[:])
	var s mechanism.Seed
	copy(s[:], h.Sum(nil))
	return s
}

// run is one simulation in progress: the server half, the devices and
// the round's buffers, reused from round to round.
type run struct {
	cfg     Config
	p       optim.Params
	single  bool
	d       int
	srv     optim.Server
	gate    check.Gate
	devs    []*simDevice
	workers pool
	eval    *evaluator
	bar     *Progress
	res     Result
	downPer int64 // bytes of one round frame
	cumUp   int64
	cumDown int64
	note    string

	// In a trusted session the devices charge nothing: the figure is
	// what the published models carry (trusted.Published) over the
	// rounds from the first that included an update (firstIncluded).
	trusted *plan.Figures
	// floor, in a shared-noise session, is its figures: each record's
	// floor is read from the worst ledger (plan.Figures.FloorOf).
	floor         *plan.Figures
	firstIncluded int

	eng *engine.Engine[int]
	// shared is the round's sum in a shared-noise session (nil
	// otherwise): the server sees only the sum of the releases, as
	// secure aggregation gives it, and tests only that.
	shared *sharedSum
	// The open round: its cohort (sorted), the query points as the
	// devices got them, the uplink bytes, and why the run must stop
	// (an error from a device, every device retired).
	cohort    []int
	plan      engine.Plan[int]
	delivered map[int]engine.Contribution
	rd        optim.Round
	up        int64
	err       error
	exhausted bool
	retry     bool // the round was discarded by its sum's tests: run it again

	// The round's buffers, indexed by position in the cohort.
	updates []optim.Update
	errs    []error
	vecs    [][]float64
	norms   []float64
	honest  [][]float64
	sum     []float64
}

// Run executes the simulation until T rounds are done, every device has
// retired, or ctx is cancelled (then it returns what it has and ctx.Err()).
// Each round goes through the engine's stages (package engine): the
// cohort plan, the devices' steps (the simulator's "collect"), the
// server's tests, the included set, the apply, and the devices' commits.
func Run(ctx context.Context, cfg Config) (Result, error) {
	start := time.Now()
	r, err := newRun(cfg)
	if err != nil {
		return Result{}, err
	}
	for t := 1; t <= r.p.Rounds; t++ {
		if err := ctx.Err(); err != nil {
			// What ran is kept: the last round's model is evaluated and
			// the ledgers read, as at the end.
			r.finish()
			r.res.Elapsed = time.Since(start)
			return r.res, err
		}
		committed, err := r.eng.Round(ctx, t, r)
		if err != nil {
			return r.res, fmt.Errorf("sim: round %d: %w", t, err)
		}
		if r.err != nil {
			return r.res, fmt.Errorf("sim: round %d: %w", t, r.err)
		}
		if r.exhausted {
			break
		}
		if !committed && r.retry {
			// A shared-noise round whose sum failed its tests runs
			// again under the same number, as on the coordinator
			// (every attempt costs its members a release, so this
			// ends when they have none left).
			r.retry = false
			t--
		}
	}
	r.finish()
	r.res.Elapsed = time.Since(start)
	return r.res, nil
}

// newRun checks cfg and builds the server half, the devices (hostile
// ones first) and the round's buffers.
func newRun(cfg Config) (*run, error) {
	p := cfg.Params
	if len(cfg.Train.Samples) == 0 || len(cfg.Test.Samples) == 0 {
		return nil, errors.New("sim: empty train or test set")
	}
	p.Features, p.Classes = cfg.Train.Features, cfg.Train.Classes
	if cfg.EvalEvery <= 0 {
		cfg.EvalEvery = 10
	}
	if cfg.Delta == 0 {
		cfg.Delta = plan.DefaultDelta
	}
	if !(cfg.Delta > 0 && cfg.Delta < 1) {
		return nil, fmt.Errorf("sim: reporting delta = %v, want 0 < delta < 1", cfg.Delta)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxMisses <= 0 {
		cfg.MaxMisses = engine.DefaultMaxMisses
	}
	if p.M > len(cfg.Train.Samples) {
		return nil, fmt.Errorf("sim: M = %d devices but only %d training samples", p.M, len(cfg.Train.Samples))
	}
	alg, err := algo.Lookup(p.Algorithm)
	if err != nil {
		return nil, err
	}
	if alg.NeedsLocalData() && p.LocalSize == 0 {
		p.LocalSize = len(cfg.Train.Samples) / p.M
	}
	if err := algo.Validate(p); err != nil {
		return nil, err
	}
	if err := checkAttack(cfg, p); err != nil {
		return nil, err
	}
	proto, err := model.New(p.Model, p.Features, p.Classes)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	chk, err := plausible.NewChecker(p, proto.Dim())
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	r := &run{cfg: cfg, p: p, single: p.SinglePass(), d: proto.Dim(), gate: chk, workers: pool{n: cfg.Workers},
		res: Result{Params: p, FinalAccuracy: math.NaN(), FinalLoss: math.NaN()}}
	if cfg.NormOnly {
		r.gate = check.NormOnly(chk.NormBound())
	}
	if p.Algorithm == wire.SharedNoiseAlgorithm {
		if r.shared, err = newSharedSum(p, r.d); err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
	}
	if algo.Private(p) && algo.Trusted(p) {
		f, err := plan.SessionFigures(p, cfg.Delta)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		r.trusted = &f
	}
	if p.Algorithm == wire.SharedNoiseAlgorithm {
		// A session whose figures cannot be stated still runs; its
		// records then give no floor (NaN).
		r.floor = &plan.Figures{}
		if f, err := plan.SessionFigures(p, cfg.Delta); err == nil {
			r.floor = &f
		}
	}
	x0 := make([]float64, r.d)
	model.Init(proto, x0, cfg.Seed)
	if r.srv, err = optim.NewServer(p, x0, mechanism.NewStream(seedFor(cfg.Seed, "server", 0), 0)); err != nil {
		return nil, err
	}
	if r.devs, err = newDevices(cfg, p, alg, proto); err != nil {
		return nil, err
	}
	largest := 0
	for _, dv := range r.devs {
		largest = max(largest, len(dv.shard))
	}
	// A single-pass device refuses a minibatch its shard cannot fill (as
	// the device runtime does); the others wrap around their data.
	if p.SinglePass() && largest < p.Batch {
		return nil, fmt.Errorf("sim: batch b = %d, but the largest device's shard holds %d samples (%d training samples over M = %d devices): no device can take a step",
			p.Batch, largest, len(cfg.Train.Samples), p.M)
	}
	for _, dv := range r.devs {
		if dv.hostile != nil && r.shared != nil {
			dv.hostile.a.sum = r.shared.attack(r.d)
		}
	}
	test := cfg.Test.Samples
	if cfg.EvalSamples > 0 && cfg.EvalSamples < len(test) {
		test = test[:cfg.EvalSamples]
	}
	if cfg.Progress != nil {
		r.bar = NewProgress(cfg.Progress, p.Algorithm, p.Rounds)
	}
	r.downPer = int64(4 * r.d) // x_t as float32
	if alg.UsesXPrev() {
		r.downPer *= 2
	}
	r.eval = newEvaluator(r.workers, proto, test)
	r.updates = make([]optim.Update, p.Cohort)
	r.errs = make([]error, p.Cohort)
	r.vecs = make([][]float64, p.Cohort)
	r.norms = make([]float64, p.Cohort)
	for k := range r.vecs {
		r.vecs[k] = make([]float64, r.d)
	}
	r.sum = make([]float64, r.d)
	r.eng = engine.New[int](r.srv, p.Cohort, p.Rounds, cfg.Seed, 0)
	// As in the one-process coordinator: a round in which no sampled
	// device is sure asks every sampled one (up to engine.AskAllCap).
	r.eng.SetAskAll(engine.AskAllCap(p.Cohort))
	return r, nil
}

// newDevices partitions the training set and builds each device half on
// its shard (the first cfg.Attackers wrapped in a Hostile).
func newDevices(cfg Config, p optim.Params, alg algo.Algorithm, proto model.Model) ([]*simDevice, error) {
	parts, err := cfg.Partition.Partition(cfg.Train.Labels(), p.M, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("sim: partition: %w", err)
	}
	devs := make([]*simDevice, p.M)
	for i := range devs {
		idx := parts[i]
		shard := make([]dataset.Sample, len(idx))
		for j, k := range idx {
			shard[j] = cfg.Train.Samples[k]
		}
		d, err := optim.NewDevice(p, proto.Clone(), mechanism.NewStream(seedFor(cfg.Seed, "device", i), 0))
		if err != nil {
			return nil, fmt.Errorf("sim: device %d: %w", i, err)
		}
		if alg.NeedsLocalData() {
			ls, ok := d.(optim.LocalDataSetter)
			if !ok {
				return nil, fmt.Errorf("sim: device half of %s cannot take local data", p.Algorithm)
			}
			local := shard
			if len(local) > p.LocalSize {
				local = local[:p.LocalSize]
			}
			if err := ls.SetLocalData(local); err != nil {
				return nil, fmt.Errorf("sim: device %d: %w", i, err)
			}
		}
		// Every history starts at the device's first release.
		devs[i] = &simDevice{id: i, dev: d, shard: shard, batch: make([]dataset.Sample, p.Batch), hist: check.NewHistory(true), clean: make([]float64, proto.Dim())}
		if i < cfg.Attackers {
			h, err := NewHostile(cfg.Attack, p, proto.Dim(), d, cfg.Seed, i, cfg.NormOnly || cfg.NaiveAttack, p.Cohort, cfg.Attackers)
			if err != nil {
				return nil, err
			}
			h.a.cap = cfg.AttackCap
			devs[i].dev, devs[i].hostile = h, h
		}
	}
	return devs, nil
}

// The simulator is the engine's shell (engine.Shell) for a run: it asks
// by handing each member the round frame's points, collects by stepping
// the members' device halves and testing their messages, keeps no store,
// and tells by committing the included devices.
var _ engine.Shell[int] = (*run)(nil)

// Ask starts round t unless no device can be asked any more (every one
// retired, out of fresh samples, or no longer sampled with an update
// refused). A device that has not missed a round is sure; one that missed
// Config.MaxMisses in a row is only probed, and when no device is sampled
// the round is a recovery round (engine.PlanRecovery) over those whose
// updates were never refused, as in the coordinator. A simulated device
// misses a round only by Config.Dropout or Config.Withhold: without them
// every device is sure and the cohort is optim.SampleCohort's, sorted.
func (r *run) Ask(t int, start func(eligible []int, sure func(int) bool, probeable []int) (engine.Plan[int], optim.Round, error)) (bool, error) {
	var eligible, probeable []int
	for _, dv := range r.devs {
		switch {
		case dv.retired || (r.single && len(dv.shard)-dv.cursor < r.p.Batch):
		case dv.standing.Sampled(r.cfg.MaxMisses):
			eligible = append(eligible, dv.id)
		default:
			probeable = append(probeable, dv.id)
		}
	}
	if len(eligible) == 0 {
		probeable = slices.DeleteFunc(probeable, func(id int) bool { return !r.devs[id].standing.Recoverable() })
	}
	if len(eligible) == 0 && len(probeable) == 0 {
		r.exhausted = true
		return false, nil
	}
	plan, rd, err := start(eligible, func(id int) bool { return r.devs[id].standing.Sure(true) }, probeable)
	if err != nil {
		return false, err
	}
	r.plan, r.cohort = plan, plan.Members
	r.grow(len(r.cohort))
	for _, id := range r.cohort {
		r.devs[id].hist.Ask() // the server's record of the rounds it asked
	}
	r.rd, err = downlink(rd)
	return err == nil, err
}

// grow makes the round's buffers hold n members (a round may ask more
// than the cohort: over-selection and probes).
func (r *run) grow(n int) {
	for len(r.updates) < n {
		r.updates = append(r.updates, optim.Update{})
		r.errs = append(r.errs, nil)
		r.vecs = append(r.vecs, make([]float64, r.d))
		r.norms = append(r.norms, 0)
	}
}

// Collect steps the cohort's devices and puts each message through the
// server's tests (check). Members whose message was refused or lost are
// no longer counted in the round, as in the coordinator; the round closed
// at its target when that many updates arrived while members were still
// out (withheld), else when every member was in or at its deadline.
func (r *run) Collect(_ context.Context, t int) (engine.Collected[int], error) {
	r.collect(r.cohort, r.rd)
	c := engine.Collected[int]{Cohort: make(map[int]bool, len(r.cohort)), Delivered: map[int]engine.Contribution{},
		Unsure: r.plan.Unsure}
	for _, id := range r.cohort {
		c.Cohort[id] = true
	}
	var err error
	r.up, err = r.check(t, r.cohort, c.Cohort, c.Delivered)
	c.AtTarget = len(c.Delivered) >= r.plan.Target && len(c.Delivered) < len(c.Cohort)
	r.delivered = c.Delivered
	if err == nil && r.shared != nil {
		c.Failed = r.sumRound(c)
	}
	return c, err
}

// Discard abandons round t: the members that delivered abort. A
// shared-noise round whose sum failed its tests runs again, as on the
// coordinator; any other cause stops the run (the round's result could
// not be served: the product would discard the round and run it again; a
// simulation that gets there is broken).
func (r *run) Discard(t int, cause error) {
	for _, id := range r.cohort {
		if _, ok := r.delivered[id]; !ok {
			continue
		}
		if err := r.devs[id].dev.Abort(t); err != nil && r.err == nil {
			r.err = fmt.Errorf("device %d abort: %w", id, err)
		}
	}
	if errors.Is(cause, engine.ErrSumImplausible) {
		r.retry = true
		return
	}
	if r.err == nil {
		r.err = fmt.Errorf("the round's result cannot be served: %w", cause)
	}
}

// Commit has nothing to store: the run's records are written by Tell.
func (r *run) Commit(int, engine.Outcome[int]) error { return nil }

// Tell adds each included message to its sender's history and commits
// the included devices (in sorted order), counts the misses, then writes
// the round's record.
func (r *run) Tell(t int, o engine.Outcome[int]) {
	for id := range o.Missed {
		r.devs[id].standing.Missed()
	}
	for _, id := range o.Included {
		dv := r.devs[id]
		dv.hist.Include(r.vecs[slices.Index(r.cohort, id)])
		if r.cfg.MeasureSums && dv.hostile == nil && dv.last > 0 {
			r.addPrefix(dv)
		}
		if err := dv.dev.Commit(t); err != nil {
			r.err = fmt.Errorf("device %d commit: %w", dv.id, err)
			return
		}
	}
	r.res.Included = append(r.res.Included, o.Included)
	r.record(t, len(r.cohort), len(o.Included), r.up)
}

// collect runs the cohort's device steps in parallel (each touches only
// its own state) and decodes each message on the worker that made it.
// The hostile devices answer after the honest ones, whose messages they
// see (an omniscient attacker).
func (r *run) collect(cohort []int, rd optim.Round) {
	stepAt := func(k int) {
		r.updates[k], r.errs[k] = step(r.devs[cohort[k]], rd, r.single)
		if r.errs[k] == nil {
			if r.norms[k], r.errs[k] = mechanism.DecodeNorm(r.vecs[k], r.updates[k].Payload); r.errs[k] != nil {
				r.errs[k] = fmt.Errorf("decode: %w", r.errs[k])
			}
		}
	}
	r.workers.each(len(cohort), func(_, k int) {
		if r.devs[cohort[k]].hostile == nil {
			stepAt(k)
		}
	})
	if r.cfg.Attackers == 0 {
		return
	}
	r.honest = r.honest[:0]
	for k, id := range cohort {
		if r.devs[id].hostile == nil && r.errs[k] == nil {
			r.honest = append(r.honest, r.vecs[k])
		}
	}
	for k, id := range cohort {
		if h := r.devs[id].hostile; h != nil {
			h.Honest = r.honest
			stepAt(k)
		}
	}
}

// check puts each message of the cohort (in its sorted order) through the
// server's tests, adds the accepted ones to delivered and returns the
// uplink bytes. A refused message is excluded like a late update and its
// device aborts, so its noise state stays consistent; a device out of
// budget retires. A refused or lost message's member leaves inRound.
func (r *run) check(t int, cohort []int, inRound map[int]bool, delivered map[int]engine.Contribution) (int64, error) {
	var up int64
	for k, id := range cohort {
		dv := r.devs[id]
		if r.errs[k] == nil && r.cfg.Dropout != nil && r.cfg.Dropout(t, id) {
			// Lost on the way: the server neither sees nor counts it,
			// and the member that went without it missed the round.
			r.res.Dropped++
			delete(inRound, id)
			dv.standing.Missed()
			if err := dv.dev.Abort(t); err != nil {
				return 0, fmt.Errorf("device %d abort: %w", id, err)
			}
			continue
		}
		if r.errs[k] == nil && r.cfg.Withhold != nil && r.cfg.Withhold(t, id, r.plan) {
			// Never sent: the device learns "excluded" and aborts.
			r.res.Withheld++
			if err := dv.dev.Abort(t); err != nil {
				return 0, fmt.Errorf("device %d abort: %w", id, err)
			}
			continue
		}
		if r.errs[k] == nil && r.shared == nil {
			// (In a shared-noise session the server sees no release:
			// only the round's sum is tested, sumRound.)
			if err := check.Message(r.gate, r.vecs[k], r.norms[k], &dv.hist); err != nil {
				r.errs[k] = err
				delete(inRound, id)
				dv.standing.Refused()
				if dv.hostile != nil {
					r.res.RejectedHostile++
				} else {
					r.res.RejectedHonest++
				}
				if err := dv.dev.Abort(t); err != nil {
					return 0, fmt.Errorf("device %d abort: %w", id, err)
				}
				up += int64(len(r.updates[k].Payload))
				continue
			}
		}
		switch {
		case r.errs[k] == nil:
			dv.standing.Accepted()
			delivered[id] = engine.Contribution{Vec: r.vecs[k], Payload: r.updates[k].Payload}
			up += int64(len(r.updates[k].Payload))
		case errors.Is(r.errs[k], optim.ErrBudget):
			dv.retired = true // the device declines every later round
			r.res.Declined++
		default:
			return 0, fmt.Errorf("device %d: %w", id, r.errs[k])
		}
	}
	return up, nil
}

// record adds round t's record (evaluating the model every EvalEvery
// rounds and at the last) and moves the progress bar.
func (r *run) record(t, asked, included int, up int64) {
	down := r.downPer * int64(asked)
	r.cumUp += up
	r.cumDown += down
	rec := Record{Round: t, Accuracy: math.NaN(), Loss: math.NaN(), UplinkBytes: up, DownlinkBytes: down,
		CumUplinkBytes: r.cumUp, CumDownlinkBytes: r.cumDown, Participants: included}
	most := mostSpent(r.devs)
	rec.MaxRho, rec.MaxEpsilon = spentEpsilon(most, r.cfg.Delta)
	rec.MaxFloorEpsilon = rec.MaxEpsilon
	switch {
	case r.floor != nil && !r.floor.Shared:
		rec.MaxFloorEpsilon = math.NaN()
	case r.floor != nil && most.Rho > 0:
		_, rec.MaxFloorEpsilon = spentEpsilon(r.floor.FloorOf(most), r.cfg.Delta)
	}
	if included > 0 && r.firstIncluded == 0 {
		r.firstIncluded = t
	}
	if r.trusted != nil && r.firstIncluded > 0 {
		rec.MaxRho, rec.MaxEpsilon = publishedSpent(r.trusted, t-r.firstIncluded+1, r.cfg.Delta)
		rec.MaxFloorEpsilon = rec.MaxEpsilon
	}
	rec.HonestSignal, rec.HonestDrift = r.honestSpread()
	r.res.HonestDrift = max(r.res.HonestDrift, rec.HonestDrift)
	r.res.Rounds = t
	if t%r.cfg.EvalEvery == 0 || t == r.p.Rounds {
		rec.Accuracy, rec.Loss = r.eval.evaluate(r.srv.Model())
		r.res.FinalAccuracy, r.res.FinalLoss = rec.Accuracy, rec.Loss
		r.note = fmt.Sprintf("acc %.4f", rec.Accuracy)
	}
	r.res.Records = append(r.res.Records, rec)
	r.bar.Update(t, r.note)
}

// finish evaluates the final model if the last round was not evaluated
// (the run stopped early) and closes the progress bar.
func (r *run) finish() {
	if n := len(r.res.Records); n > 0 && math.IsNaN(r.res.Records[n-1].Accuracy) {
		last := &r.res.Records[n-1]
		last.Accuracy, last.Loss = r.eval.evaluate(r.srv.Model())
		r.res.FinalAccuracy, r.res.FinalLoss = last.Accuracy, last.Loss
		r.note = fmt.Sprintf("acc %.4f", last.Accuracy)
	}
	// The rounds run, not T: a run that stopped early says so.
	r.bar.Update(r.res.Rounds, r.note)
	r.bar.Done()
	r.res.Model = append([]float64(nil), r.srv.Model()...)
	r.res.Ledgers = make([]privacy.Ledger, len(r.devs))
	for i, dv := range r.devs {
		if dv.hostile == nil {
			r.res.HonestSignal = max(r.res.HonestSignal, dv.signal)
		}
		if a, ok := dv.dev.(optim.Accountant); ok {
			r.res.Ledgers[i] = a.Ledger()
		}
	}
}

// downlink returns r as a device receives it: encoded in the
// coordinator's round frame and decoded (the query points travel as
// float32), so that simulated devices compute at the same points as the
// product's.
func downlink(r optim.Round) (optim.Round, error) {
	frame, err := wire.EncodeRound(wire.RoundFrame{T: r.T, X: r.X, XPrev: r.XPrev})
	if err != nil {
		return optim.Round{}, err
	}
	got, err := wire.DecodeRound(frame, wire.Limits{Dim: len(r.X), MaxBytes: len(frame)})
	if err != nil {
		return optim.Round{}, err
	}
	return optim.Round{T: got.T, X: got.X, XPrev: got.XPrev}, nil
}

// step runs one device's reply to r with its next minibatch.
func step(dv *simDevice, r optim.Round, single bool) (optim.Update, error) {
	// The device runtime's rule: in order from the cursor (wrapping for
	// multi-pass algorithms); samples that left in a message are spent.
	optim.Minibatch(dv.batch, dv.shard, dv.cursor)
	dv.last = 0
	u, err := dv.dev.Prepare(r, dv.batch)
	if err == nil {
		dv.cursor = optim.NextCursor(dv.cursor, len(dv.batch), len(dv.shard), single)
		dv.measure()
	}
	return u, err
}

// honestSpread returns the largest norm of the round's honest estimates
// (the cohort members that prepared one) and the largest distance of one
// from their mean.
func (r *run) honestSpread() (signal, drift float64) {
	clear(r.sum)
	n := 0
	for _, id := range r.cohort {
		if dv := r.devs[id]; dv.hostile == nil && dv.last > 0 {
			signal = max(signal, dv.last)
			for j, v := range dv.clean {
				r.sum[j] += v
			}
			n++
		}
	}
	if n == 0 {
		return signal, 0
	}
	for _, id := range r.cohort {
		if dv := r.devs[id]; dv.hostile == nil && dv.last > 0 {
			var ss float64
			for j, v := range dv.clean {
				e := v - r.sum[j]/float64(n)
				ss += e * e
			}
			drift = max(drift, math.Sqrt(ss))
		}
	}
	return signal, drift
}

// addPrefix adds dv's included estimate to its prefix sums and updates
// Result.HonestSumRate with every run of estimates that ends with it.
func (r *run) addPrefix(dv *simDevice) {
	if dv.prefix == nil {
		dv.prefix = [][]float64{make([]float64, r.d)}
	}
	last := dv.prefix[len(dv.prefix)-1]
	next := make([]float64, r.d)
	for j, v := range dv.clean {
		next[j] = last[j] + v
	}
	dv.prefix = append(dv.prefix, next)
	k := len(dv.prefix) - 1
	for a := 0; a <= k-2; a++ {
		var ss float64
		for j, v := range next {
			e := v - dv.prefix[a][j]
			ss += e * e
		}
		r.res.HonestSumRate = max(r.res.HonestSumRate, (math.Sqrt(ss)-r.p.S())/float64(k-a-1))
	}
}

// measure records the norm of an honest device's un-noised estimate of
// its last Prepare (Result.HonestSignal).
func (dv *simDevice) measure() {
	in, ok := dv.dev.(optim.Introspector)
	if dv.hostile != nil || !ok {
		return
	}
	if in.Clean(dv.clean) != nil {
		return
	}
	dv.last = mechanism.Norm(dv.clean)
	dv.signal = max(dv.signal, dv.last)
}

// publishedSpent is a trusted session's figure against everyone but the
// server after n published rounds hold a sample (plan.Figures.Published),
// as rho and epsilon at delta; NaN when it cannot be computed.
func publishedSpent(f *plan.Figures, n int, delta float64) (rho, eps float64) {
	s, err := f.Published(n)
	if err != nil {
		return math.NaN(), math.NaN()
	}
	e, err := privacy.SpentEpsilon(s, delta)
	if err != nil {
		return s.Rho, math.NaN()
	}
	return s.Rho, e
}

// maxSpent returns the largest zCDP rho any device has spent and the
// epsilon at delta of that device's ledger (privacy.SpentEpsilon, which
// reads a last-iterate ledger by Gaussian DP and its TV term); 0, 0 for
// non-private algorithms.
func mostSpent(devs []*simDevice) privacy.Spent {
	var most privacy.Spent
	for _, dv := range devs {
		if a, ok := dv.dev.(optim.Accountant); ok {
			l := a.Ledger()
			if s := l.Spent(); s.Rho > most.Rho {
				most = s
			}
		}
	}
	return most
}

// spentEpsilon reads a ledger's spending as rho and epsilon at delta
// (0 and 0 for nothing spent; epsilon NaN if it has no finite value).
func spentEpsilon(most privacy.Spent, delta float64) (rho, eps float64) {
	if most.Rho == 0 {
		return 0, 0
	}
	e, err := privacy.SpentEpsilon(most, delta)
	if err != nil {
		return most.Rho, math.NaN()
	}
	return most.Rho, e
}
