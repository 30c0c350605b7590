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

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
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
	// NormOnly applies only the L2 norm bound to each message (the
	// server before optim.Checker), to measure what the other tests buy.
	// By default every message goes through optim.Checker, as in the
	// coordinator.
	NormOnly bool
}

// Result is the outcome of a run.
type Result struct {
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
}

// gate is the server's test of one message: optim.Checker, or the norm
// bound alone (Config.NormOnly).
type gate interface {
	Check(x []float64, norm float64, h *optim.History) error
	NormBound() float64
}

// normGate is the norm bound alone.
type normGate float64

func (g normGate) Check(x []float64, norm float64, _ *optim.History) error {
	if !(norm <= float64(g)) {
		return fmt.Errorf("%w: norm %.4g above %.4g", optim.ErrImplausible, norm, float64(g))
	}
	return nil
}

func (g normGate) NormBound() float64 { return float64(g) }

type simDevice struct {
	id      int
	dev     optim.Device
	shard   []dataset.Sample
	cursor  int
	batch   []dataset.Sample
	retired bool
	hist    optim.History // the server's history of the device
	hostile *Hostile      // nil for an honest device
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

// Run executes the simulation until T rounds are done, every device has
// retired, or ctx is cancelled (then it returns what it has and ctx.Err()).
func Run(ctx context.Context, cfg Config) (Result, error) {
	start := time.Now()
	p := cfg.Params
	if len(cfg.Train.Samples) == 0 || len(cfg.Test.Samples) == 0 {
		return Result{}, errors.New("sim: empty train or test set")
	}
	p.Features, p.Classes = cfg.Train.Features, cfg.Train.Classes
	if cfg.EvalEvery <= 0 {
		cfg.EvalEvery = 10
	}
	if cfg.Delta == 0 {
		cfg.Delta = plan.DefaultDelta
	}
	if !(cfg.Delta > 0 && cfg.Delta < 1) {
		return Result{}, fmt.Errorf("sim: reporting delta = %v, want 0 < delta < 1", cfg.Delta)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if p.M > len(cfg.Train.Samples) {
		return Result{}, fmt.Errorf("sim: M = %d devices but only %d training samples", p.M, len(cfg.Train.Samples))
	}
	alg, err := optim.Lookup(p.Algorithm)
	if err != nil {
		return Result{}, err
	}
	parts, err := cfg.Partition.Partition(cfg.Train.Labels(), p.M, cfg.Seed)
	if err != nil {
		return Result{}, fmt.Errorf("sim: partition: %w", err)
	}
	single := p.SinglePass()
	if alg.NeedsLocalData() && p.LocalSize == 0 {
		p.LocalSize = len(cfg.Train.Samples) / p.M
	}
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	if err := checkAttack(cfg, p); err != nil {
		return Result{}, err
	}
	proto, err := model.New(p.Model, p.Features, p.Classes)
	if err != nil {
		return Result{}, fmt.Errorf("sim: %w", err)
	}
	chk, err := optim.NewChecker(p, proto.Dim())
	if err != nil {
		return Result{}, fmt.Errorf("sim: %w", err)
	}
	var srvGate gate = chk
	if cfg.NormOnly {
		srvGate = normGate(chk.NormBound())
	}

	x0 := make([]float64, proto.Dim())
	model.Init(proto, x0, cfg.Seed)
	srv, err := optim.NewServer(p, x0, mechanism.NewStream(seedFor(cfg.Seed, "server", 0), 0))
	if err != nil {
		return Result{}, err
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
			return Result{}, fmt.Errorf("sim: device %d: %w", i, err)
		}
		if alg.NeedsLocalData() {
			ls, ok := d.(optim.LocalDataSetter)
			if !ok {
				return Result{}, fmt.Errorf("sim: device half of %s cannot take local data", p.Algorithm)
			}
			local := shard
			if len(local) > p.LocalSize {
				local = local[:p.LocalSize]
			}
			if err := ls.SetLocalData(local); err != nil {
				return Result{}, fmt.Errorf("sim: device %d: %w", i, err)
			}
		}
		// Every history starts at the device's first release.
		devs[i] = &simDevice{id: i, dev: d, shard: shard, batch: make([]dataset.Sample, p.Batch), hist: optim.History{FromStart: true}}
		if i < cfg.Attackers {
			h, err := NewHostile(cfg.Attack, p, proto.Dim(), d, cfg.Seed, i, cfg.NormOnly || cfg.NaiveAttack, p.Cohort, cfg.Attackers)
			if err != nil {
				return Result{}, err
			}
			h.a.cap = cfg.AttackCap
			devs[i].dev, devs[i].hostile = h, h
		}
	}
	test := cfg.Test.Samples
	if cfg.EvalSamples > 0 && cfg.EvalSamples < len(test) {
		test = test[:cfg.EvalSamples]
	}
	bar := (*Progress)(nil)
	if cfg.Progress != nil {
		bar = NewProgress(cfg.Progress, p.Algorithm, p.Rounds)
	}
	d := proto.Dim()
	downPer := int64(4 * d) // x_t as float32
	if alg.UsesXPrev() {
		downPer *= 2
	}
	workers := pool{n: cfg.Workers}
	eval := newEvaluator(workers, proto, test)
	res := Result{FinalAccuracy: math.NaN(), FinalLoss: math.NaN()}
	var cumUp, cumDown int64
	eligible := make([]int, 0, p.M)
	updates := make([]optim.Update, p.Cohort)
	errs := make([]error, p.Cohort)
	included := make([]optim.Update, 0, p.Cohort)
	// Each update is decoded by the worker that prepared it (the server's
	// tests read it); with a server half that takes decoded sums (the
	// coordinator's path), only the sum, in cohort order, is left to the
	// round's serial part.
	summer, sums := srv.(optim.SumApplier)
	vecs := make([][]float64, p.Cohort)
	norms := make([]float64, p.Cohort)
	for k := range vecs {
		vecs[k] = make([]float64, d)
	}
	sum := make([]float64, d)
	var honest [][]float64
	incl := make([]*simDevice, 0, p.Cohort)
	note := ""
	for t := 1; t <= p.Rounds; t++ {
		if err := ctx.Err(); err != nil {
			bar.Done()
			res.Elapsed = time.Since(start)
			return res, err
		}
		eligible = eligible[:0]
		for _, dv := range devs {
			if !dv.retired && (!single || len(dv.shard)-dv.cursor >= p.Batch) {
				eligible = append(eligible, dv.id)
			}
		}
		if len(eligible) == 0 {
			break
		}
		m := min(p.Cohort, len(eligible))
		cohort := optim.SampleCohort(eligible, m, cfg.Seed, t) // the coordinator's rule
		slices.Sort(cohort)                                    // and its order: updates reach the server sorted by device
		for _, id := range cohort {
			devs[id].hist.Ask() // the server's record of the rounds it asked
		}
		r, err := downlink(srv.Next())
		if err != nil {
			return res, fmt.Errorf("sim: round %d: %w", t, err)
		}
		if r.T != t {
			return res, fmt.Errorf("sim: server is at round %d, expected %d", r.T, t)
		}
		// Device steps in parallel; each touches only its own state. The
		// hostile devices answer after the honest ones, whose messages
		// they see (an omniscient attacker).
		stepAt := func(k int) {
			updates[k], errs[k] = step(devs[cohort[k]], r, single)
			if errs[k] == nil {
				if norms[k], errs[k] = mechanism.DecodeNorm(vecs[k], updates[k].Payload); errs[k] != nil {
					errs[k] = fmt.Errorf("decode: %w", errs[k])
				}
			}
		}
		workers.each(m, func(_, k int) {
			if devs[cohort[k]].hostile == nil {
				stepAt(k)
			}
		})
		if cfg.Attackers > 0 {
			honest = honest[:0]
			for k, id := range cohort {
				if devs[id].hostile == nil && errs[k] == nil {
					honest = append(honest, vecs[k])
				}
			}
			for k, id := range cohort {
				if h := devs[id].hostile; h != nil {
					h.Honest = honest
					stepAt(k)
				}
			}
		}
		included, incl = included[:0], incl[:0]
		var up int64
		for k, id := range cohort {
			dv := devs[id]
			if errs[k] == nil {
				if err := srvGate.Check(vecs[k], norms[k], &dv.hist); err != nil {
					// Refused: excluded like a late update; the device
					// aborts, so its noise state stays consistent.
					errs[k] = err
					if dv.hostile != nil {
						res.RejectedHostile++
					} else {
						res.RejectedHonest++
					}
					if err := dv.dev.Abort(t); err != nil {
						return res, fmt.Errorf("sim: round %d device %d abort: %w", t, id, err)
					}
					up += int64(len(updates[k].Payload))
					continue
				}
			}
			switch {
			case errs[k] == nil:
				included = append(included, updates[k])
				incl = append(incl, dv)
				dv.hist.Add(vecs[k])
				up += int64(len(updates[k].Payload))
			case errors.Is(errs[k], optim.ErrBudget):
				dv.retired = true // the device declines every later round
				res.Declined++
			default:
				return res, fmt.Errorf("sim: round %d device %d: %w", t, id, errs[k])
			}
		}
		if sums {
			vs := make([][]float64, 0, len(included))
			for k := range cohort {
				if errs[k] == nil {
					vs = append(vs, vecs[k])
				}
			}
			optim.SumVectors(sum, vs)
			err = summer.ApplySum(t, sum, len(included))
		} else {
			err = srv.Apply(t, included)
		}
		if err != nil {
			return res, fmt.Errorf("sim: round %d: %w", t, err)
		}
		for _, dv := range incl {
			if err := dv.dev.Commit(t); err != nil {
				return res, fmt.Errorf("sim: round %d device %d commit: %w", t, dv.id, err)
			}
		}
		down := downPer * int64(m)
		cumUp += up
		cumDown += down
		rec := Record{Round: t, Accuracy: math.NaN(), Loss: math.NaN(), UplinkBytes: up, DownlinkBytes: down,
			CumUplinkBytes: cumUp, CumDownlinkBytes: cumDown, Participants: len(included)}
		rec.MaxRho, rec.MaxEpsilon = maxSpent(devs, cfg.Delta)
		res.Rounds = t
		if t%cfg.EvalEvery == 0 || t == p.Rounds {
			rec.Accuracy, rec.Loss = eval.evaluate(srv.Model())
			res.FinalAccuracy, res.FinalLoss = rec.Accuracy, rec.Loss
			note = fmt.Sprintf("acc %.4f", rec.Accuracy)
		}
		res.Records = append(res.Records, rec)
		bar.Update(t, note)
	}
	if n := len(res.Records); n > 0 && math.IsNaN(res.Records[n-1].Accuracy) {
		last := &res.Records[n-1]
		last.Accuracy, last.Loss = eval.evaluate(srv.Model())
		res.FinalAccuracy, res.FinalLoss = last.Accuracy, last.Loss
	}
	bar.Update(p.Rounds, note)
	bar.Done()
	res.Model = append([]float64(nil), srv.Model()...)
	res.Elapsed = time.Since(start)
	return res, nil
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
	u, err := dv.dev.Prepare(r, dv.batch)
	if err == nil {
		dv.cursor = optim.NextCursor(dv.cursor, len(dv.batch), len(dv.shard), single)
	}
	return u, err
}

// maxSpent returns the largest zCDP rho any device has spent and its
// epsilon at delta (0, 0 for non-private algorithms).
func maxSpent(devs []*simDevice, delta float64) (rho, eps float64) {
	for _, dv := range devs {
		if a, ok := dv.dev.(optim.Accountant); ok {
			l := a.Ledger()
			if r := l.Rho(); r > rho {
				rho = r
			}
		}
	}
	if rho == 0 {
		return 0, 0
	}
	e, err := privacy.LedgerEpsilon(rho, delta)
	if err != nil {
		return rho, math.NaN()
	}
	return rho, e
}
