package coordinator

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"browserfl/coordinator/bus"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/roster"
	"browserfl/coordinator/secround"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/engine"
	"browserfl/engine/check"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/optim/plausible"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// NewSessionRequest is what a teacher asks of a new session (POST
// /api/teacher/new): the zero request is the template's own session.
type NewSessionRequest struct {
	// Task, if set, makes it a session of this task (plan.WithTask).
	Task *task.Definition
	// Algorithm, if set, is its way of learning (plan.WithAlgorithm:
	// one of plan.TeacherAlgorithms).
	Algorithm string
}

// Config configures a Coordinator running one session. Zero values get
// the defaults written beside each field.
type Config struct {
	// Session is the session's public definition (required, validated).
	// With Lobby it is the template the final parameters are sized from
	// at Start (Size).
	Session wire.SessionParams
	// Lobby starts the session in its lobby: devices connect and are
	// listed, but no round runs until Start, which sizes the final
	// parameters from the devices present (Size) and builds the server
	// half with NewServer. Without Lobby the session runs at once.
	Lobby bool
	// NewServer builds the server half for the final parameters
	// (required with Lobby; without Lobby it is used when Server is nil).
	NewServer func(wire.SessionParams) (optim.Server, error)
	// Size returns the final parameters for a lobby of n devices
	// (default lesson.OneLesson, the "one lesson" preset).
	Size func(template wire.SessionParams, n int) (wire.SessionParams, error)
	// JoinCode is required in every hello (required, non-empty).
	JoinCode string
	// Server is the session's server half (required without Lobby unless
	// NewServer is set). If the store holds a committed state, it is
	// restored into it.
	Server optim.Server
	// Store is the durable state (required).
	Store *store.Store
	// MinDevices is the number of eligible devices a round needs. A round
	// starts as soon as a whole cohort (Session.Cohort) is eligible, or,
	// with fewer, once at least MinDevices have been eligible for
	// FillWait, or (after the first round) at once when every live
	// device is eligible (default: min(2, Session.Cohort)). The server still
	// divides by the cohort size m: missing members count as zero.
	MinDevices int
	// FillWait is how long a round waits for a whole cohort before it
	// starts with MinDevices or more (default 5s; negative: no wait).
	FillWait time.Duration
	// Seed seeds cohort sampling (default 0: drawn from crypto/rand and
	// logged). The cohort of round t is a function of (Seed, t, the
	// sorted eligible ids, which of them are sure, and the devices that
	// may be probed; cohort.go).
	Seed uint64
	// TrustNewDevices makes a device sure (a member the round counts on,
	// cohort.go) from its first hello instead of from its first included
	// update. Only for a closed set of devices that all answer, such as
	// the test that compares the product with the simulator: with it, a
	// new id that never answers holds each round it is asked in until
	// the deadline, until it has missed Limits.MaxMisses of them.
	TrustNewDevices bool
	// RoundGap is a pause between rounds (default 0).
	RoundGap time.Duration
	// EvalEvery evaluates the global model every EvalEvery rounds with
	// Evaluate (default 0: never).
	EvalEvery int
	Evaluate  func(w []float64) (accuracy, loss float64, err error)
	// EvalSamples is the number of test samples Evaluate uses; it is
	// stored and published beside every accuracy.
	EvalSamples int
	// EvalNote says in words why the session shows no accuracy (for
	// example NoTestRows); empty when it evaluates. The status JSON
	// carries it (view.Status.AccuracyNote) and the dashboard shows it.
	EvalNote string
	// TeacherSecret unlocks the teacher's endpoints (/api/teacher/...,
	// teacher.go) and the dashboard's controls; empty: no request is a
	// teacher's.
	TeacherSecret string
	// NewSession, if set, is what POST /api/teacher/new calls (the Host
	// sets it): end this session and start a fresh one, as req asks.
	// Its result is the endpoint's JSON answer.
	NewSession func(ctx context.Context, req NewSessionRequest) (any, error)
	// TeacherAlgorithms are the ways of learning a teacher may switch
	// the next session between (NewSessionRequest.Algorithm; the Host
	// sets them: sessions.Host.Choices); empty: no choice. The teacher's
	// status carries them (view.Status.TeacherChoice).
	TeacherAlgorithms []string
	// Limits bound what a connection may do (defaults in Limits).
	Limits wsconn.Limits
	// Gate throttles join codes and registrations, caps inactive devices
	// and checks liveness (defaults in Gate, gate.go).
	Gate gate.Config
	// AllowedOrigins are the websocket Origin host patterns accepted
	// besides the request's own host (default none).
	AllowedOrigins []string
	// Logger receives structured logs (default slog.Default()). Logs
	// never contain a device secret or a vector.
	Logger *slog.Logger
	// OnCommit, if set, is called after round t is durably committed and
	// before any decision of round t is sent (tests use it to crash the
	// coordinator at the worst moment).
	OnCommit func(t int)
	// BeforeAdmit, if set, is called for every authenticated hello just
	// before the admission takes the coordinator's lock (tests use it to
	// delay admission until the device's pending round has committed).
	BeforeAdmit func(id string, pending int)
}

// NoTestRows is Config.EvalNote for a row task without test rows (a
// teacher's task, unless its test rows were given): nothing to measure
// the class model on.
const NoTestRows = "this task has no test rows, so no accuracy is shown"

// Coordinator runs one session: it admits devices over websockets,
// samples a cohort each round, collects updates until the deadline, calls
// the server half and commits each round before acknowledging inclusion.
// It is safe for concurrent use.
type Coordinator struct {
	front  *wsconn.Front
	cfg    Config
	server optim.Server
	store  *store.Store

	startMu sync.Mutex // serializes Start
	mu      sync.Mutex
	// sess is the session's definition: the template while in the lobby,
	// the final parameters from Start on. It is written only by Start
	// (under mu, before the round loop leaves the lobby); the round loop
	// reads it without the lock after that, everyone else under mu.
	sess       wire.SessionParams
	minDevices int    // rounds need this many eligible devices (Config.MinDevices or its default)
	state      string // StateLobby, StateRunning, StatePaused or StateEnded
	// wake is signalled on Start, Resume and End (the round loop waits
	// on it in the lobby and while paused); endCh is closed by End and
	// cuts the open round short.
	wake  chan struct{}
	endCh chan struct{}
	ended bool // End was called (endCh closed)
	// roster holds the device records (coordinator/roster).
	roster    *roster.Roster
	round     *openRound // the round being collected or committed; nil between rounds
	committed int
	finished  bool
	closing   bool
	started   time.Time
	lastEval  evalPoint
	// modelFrame is the global model after the last committed round as a
	// wire round frame (X = model, T = committed), for /api/model.
	modelFrame []byte
	changed    chan struct{} // signalled when eligibility may have changed
	// bound is the largest L2 norm of an accepted update
	// (plausible.UpdateBound; +Inf: finiteness only).
	bound float64
	// chk tests each direct update (plausible.Checker; its NormBound is bound).
	chk *plausible.Checker
	// seenAll is set when no round of the session was sent before this
	// process (the store's RoundsStarted): every ask and inclusion of
	// every device is then seen here, and each device's history is from
	// its start. roundsMarked: this process has recorded that rounds
	// started.
	seenAll, roundsMarked bool
	// recoveryPause is the pause after a recovery round nobody answered
	// (roster.NextRecoveryPause), recoveryAfter the time before which no
	// recovery round starts.
	recoveryPause time.Duration
	recoveryAfter time.Time
	// keepPayloads: the server half is not an optim.SumApplier, so the
	// round is applied from the payloads (decoded a second time by
	// Apply) and each accepted update keeps its payload too.
	keepPayloads bool
	// vecs recycles the decoded update vectors between rounds.
	vecs *wsconn.FreeList[*[]float64]
	// eng is the round engine (package engine) the round loop drives
	// through a roundShell; used by the round loop only.
	eng *engine.Engine[string]
	// removed holds the ids the teacher removed (Remove): their hellos
	// are refused for the rest of the session. Loaded from the store by
	// New, written there before it changes here.
	removed map[string]bool
	// sa is the secure aggregation of a shared-noise session (secagg.go);
	// nil for the other algorithms.
	sa *secround.Session
	// node is set when edge processes hold devices for this session
	// (cluster.go, coordinator/sessionnode); nil in the one-process shape.
	node Relay
}

type evalPoint struct {
	T                   int
	Accuracy, Loss      float64
	Samples             int
	HaveAccuracy, Valid bool
}

// update is an accepted update: its vector, decoded and validated once
// as it arrived, and (only when the server half has no ApplySum) its
// payload. The members of an edge's aggregate share one vector, the sum,
// carried by the first; the others have none.
type update struct {
	vec     *[]float64
	payload []byte
	hist    *check.History // the sender's history, to add vec to on inclusion (direct updates)
	// agg: the update came in an edge's aggregate (its vector is the
	// edge's sum, shared with the other members): it cannot be taken out
	// of the round on its own.
	agg bool
}

type openRound struct {
	t        int
	cohort   map[string]bool    // sampled devices still counted in the round
	updates  map[string]*update // received valid updates
	dropped  map[string]bool    // cohort members that reconnected without their update: excluded
	closed   bool               // no more updates accepted (deadline passed, target reached or all in)
	included []string           // frozen at close
	// target is the number of updates that closes the round (the
	// session's cohort m, or fewer eligible devices); members asked
	// beyond it are over-selected (cohort.go).
	target int
	// unsure are the members that were not sure when asked: their
	// silence counts as a miss however the round closed.
	unsure map[string]bool
	// atTarget: the round closed because its target was reached while
	// members were still out.
	atTarget bool
	// recovery: nobody was eligible; every member is a probe
	// (engine.PlanRecovery).
	recovery bool
	// deadlineHit: the round closed because its deadline passed (some
	// cohort member neither answered nor was dropped as gone).
	deadlineHit bool
	allIn       chan struct{}
	// sa is the round's secure aggregation (shared-noise sessions;
	// secagg.go), nil in the other sessions.
	sa       *secround.Round
	started  time.Time
	deadline time.Time
	bytesIn  int64
	bytesOut int64
}

// New checks cfg, restores the committed state from the store and returns
// a coordinator ready to Run and to serve HTTP.
func New(cfg Config) (*Coordinator, error) {
	if err := wire.ValidateSession(cfg.Session); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	if wire.NormalizeJoinCode(cfg.JoinCode) == "" { // " " or "-" would admit any code
		return nil, errors.New("coordinator: empty join code")
	}
	if cfg.Store == nil || (cfg.Server == nil && cfg.NewServer == nil) || (cfg.Lobby && cfg.NewServer == nil) {
		return nil, errors.New("coordinator: Store and Server (or NewServer; NewServer with Lobby) are required")
	}
	if cfg.Size == nil {
		cfg.Size = oneLesson
	}
	if cfg.FillWait == 0 {
		cfg.FillWait = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Seed == 0 {
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("coordinator: seed: %w", err)
		}
		cfg.Seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	c := &Coordinator{
		front: &wsconn.Front{
			Lim:     cfg.Limits.WithDefaults(cfg.Session.Dim),
			Log:     cfg.Logger,
			Met:     metrics.New(),
			Gate:    gate.New(cfg.Gate, time.Duration(cfg.Session.DeadlineMillis)*time.Millisecond, cfg.Logger),
			Origins: cfg.AllowedOrigins,
			Bufs:    wsconn.NewReadBuffers(),
		},
		cfg:     cfg,
		server:  cfg.Server,
		vecs:    wsconn.NewVecList(cfg.Session.Dim),
		store:   cfg.Store,
		changed: make(chan struct{}, 1),
		wake:    make(chan struct{}, 1),
		endCh:   make(chan struct{}),
		started: time.Now(),
		sess:    cfg.Session,
		state:   StateRunning,
	}
	c.front.H = sessionHandler{c}
	c.roster = roster.New(c.front.Lim.MaxMisses, cfg.TrustNewDevices)
	var err error
	if c.removed, err = c.store.Removed(); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	life, err := readLifecycle(c.store)
	if err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	switch {
	case life.State == "" && cfg.Lobby:
		c.state = StateLobby
	case life.State == StateLobby:
		c.state = StateLobby
	case life.State != "":
		// Started (or ended) before this process: the final parameters
		// are the stored ones.
		if life.Session.Dim != cfg.Session.Dim || life.Session.Algorithm != cfg.Session.Algorithm {
			return nil, errors.New("coordinator: the store holds a session with another model or algorithm")
		}
		c.sess, c.state = life.Session, life.State
		if c.state == StateEnded {
			c.ended = true
			close(c.endCh)
		}
	}
	c.minDevices = c.minDevicesFor(c.sess)
	if c.state == StateLobby {
		c.front.Log.Info("session in its lobby: waiting for the teacher's Start", "session", cfg.Session.Name)
		return c, nil
	}
	if c.server == nil {
		if c.server, err = cfg.NewServer(c.sess); err != nil {
			return nil, fmt.Errorf("coordinator: server half: %w", err)
		}
	}
	if err := c.prepare(); err != nil {
		return nil, err
	}
	return c, nil
}

// minDevicesFor returns the eligible devices a round of s needs.
func (c *Coordinator) minDevicesFor(s wire.SessionParams) int {
	if c.cfg.MinDevices <= 0 {
		return min(2, s.Cohort)
	}
	return c.cfg.MinDevices
}

// prepare derives the update bound from c.sess and restores the committed
// state from the store into c.server.
func (c *Coordinator) prepare() error {
	cfg := c.cfg
	cfg.Session = c.sess
	chk, err := plausible.NewChecker(cfg.Session, cfg.Session.Dim)
	if err != nil {
		return fmt.Errorf("coordinator: update checks: %w", err)
	}
	c.chk, c.bound = chk, chk.NormBound()
	bound := c.bound
	_, sums := c.server.(optim.SumApplier)
	c.keepPayloads = !sums
	committed, state, err := c.store.State()
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	started, err := c.store.RoundsStarted()
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	// committed > 0 without the marker: a store from before it.
	c.seenAll, c.roundsMarked = !started && committed == 0, started
	if state != nil {
		if err := c.server.UnmarshalBinary(state); err != nil {
			return c.unservable(committed, fmt.Errorf("restore server state of round %d: %w", committed, err))
		}
	}
	if committed < cfg.Session.Rounds && !c.ended {
		if err := engine.Servable(c.server, cfg.Session.DeadlineMillis); err != nil {
			return c.unservable(committed, err)
		}
	}
	if c.sa, err = newSecAgg(c.sess, c.node, c.front.Log); err != nil {
		return err
	}
	if c.sa != nil {
		// No round starts that could not reach the threshold.
		c.minDevices = max(c.minDevices, c.sa.Threshold())
	}
	c.eng = engine.New[string](c.server, cfg.Session.Cohort, cfg.Session.Rounds, cfg.Seed, cfg.Session.DeadlineMillis)
	if c.node == nil {
		// A round in which nobody is sure asks everyone eligible (idle
		// ids present at Start cannot hold it); not in the cluster shape
		// (AttachNode).
		c.eng.SetAskAll(engine.AskAllCap(cfg.Session.Cohort))
	}
	c.committed = committed
	c.finished = committed >= cfg.Session.Rounds || c.ended
	if committed > 0 {
		c.modelFrame, _ = wire.EncodeRound(wire.RoundFrame{T: committed, X: c.server.Model()})
	}
	if recs, err := c.store.Rounds(max(0, committed-cfg.EvalEvery-1), cfg.EvalEvery+2); err == nil {
		for _, r := range recs {
			if r.Evaluated {
				c.lastEval = evalPoint{T: r.T, Accuracy: r.Accuracy, Loss: r.Loss, Samples: r.EvalSamples, Valid: true}
			}
		}
	}
	c.front.Log.Info("update validation", "max_norm", bound, "tests", chk.Describe())
	c.front.Log.Info("session ready", "session", cfg.Session.Name, "algorithm", cfg.Session.Algorithm,
		"dim", cfg.Session.Dim, "cohort", cfg.Session.Cohort, "rounds", cfg.Session.Rounds,
		"committed", committed, "cohort_seed", cfg.Seed, "min_devices", c.minDevices, "state", c.state)
	return nil
}

// ErrUnservable is wrapped by New when the store holds a state the
// coordinator cannot serve (for example a model that is not finite, or
// not representable in the float32 round frame). The error text says
// which rounds Store.RollBack can return to.
var ErrUnservable = errors.New("coordinator: the stored state cannot be served")

func (c *Coordinator) unservable(committed int, cause error) error {
	oldest, _, err := c.store.RollBackRange()
	if err != nil {
		return fmt.Errorf("%w: %v (and the store's history could not be read: %v)", ErrUnservable, cause, err)
	}
	return fmt.Errorf("%w: after round %d: %v; roll back to an earlier round (the store keeps rounds %d to %d; "+
		"cmd/coordinator: -rollback-to N) or start over with -reset", ErrUnservable, committed, cause, oldest, committed)
}

func (c *Coordinator) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Run drives rounds until the session has run all its rounds or ctx is
// done. Dropouts never stall it: a round closes at its deadline with the
// updates that arrived.
func (c *Coordinator) Run(ctx context.Context) error {
	if err := c.waitStarted(ctx); err != nil {
		return err
	}
	for {
		c.mu.Lock()
		t := c.committed + 1
		done := c.finished
		c.mu.Unlock()
		if done {
			c.endSession()
			return nil
		}
		if err := c.waitResumed(ctx); err != nil {
			return err
		}
		c.mu.Lock()
		done = c.finished
		c.mu.Unlock()
		if done {
			continue
		}
		if err := c.waitEligible(ctx); err != nil {
			return err
		}
		if err := c.runRound(ctx, t); err != nil {
			return err
		}
		if c.cfg.RoundGap > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(c.cfg.RoundGap):
			}
		}
	}
}

func (c *Coordinator) waitEligible(ctx context.Context) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var since time.Time // when MinDevices or more first became eligible
	for {
		c.mu.Lock()
		e := c.roster.CountEligible()
		// Devices out of sampling for their misses count as the probes
		// a round would ask (engine.Askable, probesLocked).
		n := engine.Askable(e, len(c.roster.Probes(e, time.Now(), c.recoveryAfter)), c.sess.Cohort)
		stop := c.ended || c.state == StatePaused
		// When every device that could take part is eligible, a round
		// does not wait for the ones that are not there: a session
		// started from a lobby had its class present at Start, and
		// after the first round (which waited FillWait for a whole
		// cohort) waiting longer only helps if someone new joins.
		present := n >= c.minDevices && e == c.roster.Present() && (c.cfg.Lobby || c.committed > 0)
		c.mu.Unlock()
		start, fill := roundReady(e, n, c.minDevices, c.sess.Cohort, present)
		switch {
		case stop:
			return nil // the round loop looks at the state again
		case start:
			return nil
		case fill:
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) >= c.cfg.FillWait {
				return nil
			}
		default:
			since = time.Time{}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.changed:
		case <-c.wake:
		case <-tick.C:
		}
	}
}

// roundReady says whether a round starts now (start) or after the fill
// wait (fill), with e devices eligible, n askable (engine.Askable),
// minDevices needed, cohort m and present (every live device eligible).
// No round starts with fewer than minDevices askable, even with a whole
// cohort eligible: Ask refuses it, and the round loop, told "start", then
// spun until more devices came (min-devices above m).
func roundReady(e, n, minDevices, m int, present bool) (start, fill bool) {
	switch {
	case n < minDevices:
		return false, false
	case e >= m || present:
		return true, false
	default:
		return false, true
	}
}

// roundShell is the coordinator's side of one round (engine.Shell): it
// asks over websockets and edges, collects on the connections, commits to
// the store and tells the members. The engine owns the round's rules.
type roundShell struct {
	c         *Coordinator
	ctx       context.Context
	or        *openRound        // the round asked (nil until Ask starts one)
	included  []*update         // frozen at close; their vectors are recycled after the round
	rec       store.RoundRecord // written by Commit, read by Tell
	decisions map[string][]byte // the two decision frames, encoded before the commit
}

var _ engine.Shell[string] = (*roundShell)(nil)

// runRound runs round t through the engine.
func (c *Coordinator) runRound(ctx context.Context, t int) error {
	sh := &roundShell{c: c, ctx: ctx}
	defer sh.recycle()
	_, err := c.eng.Round(ctx, t, sh)
	return err
}

// beginRound samples round t's cohort and sends it the round (the engine's
// Begin); it returns nil (and no error) when too few devices are eligible
// any more.
func (c *Coordinator) beginRound(ctx context.Context, t int) (*openRound, error) {
	sh := &roundShell{c: c, ctx: ctx}
	_, err := c.eng.Begin(t, sh)
	return sh.or, err
}

// finishRound closes round or and has the engine decide it (apply,
// commit, tell, or discard).
func (c *Coordinator) finishRound(ctx context.Context, or *openRound) error {
	sh := &roundShell{c: c, ctx: ctx, or: or}
	defer sh.recycle()
	col, err := sh.closed()
	if err != nil {
		return err
	}
	_, err = c.eng.Finish(or.t, col, sh)
	return err
}

// Collect waits for the round to close: every member in (or its target
// reached), its deadline, the session's end, or ctx.
func (sh *roundShell) Collect(ctx context.Context, t int) (engine.Collected[string], error) {
	c, or := sh.c, sh.or
	if or.sa != nil {
		return sh.collectSecAgg(ctx)
	}
	timer := time.NewTimer(time.Duration(c.sess.DeadlineMillis) * time.Millisecond)
	select {
	case <-or.allIn:
	case <-timer.C:
		or.deadlineHit = true // read by Commit on this goroutine
	case <-c.endCh: // ended early: the round closes with what arrived
	case <-ctx.Done():
	}
	timer.Stop()
	return sh.closed()
}

// closed closes the round and returns it as the engine reads it; when
// ctx has ended (shutting down) the round is not decided: its devices
// learn "excluded" on resume.
func (sh *roundShell) closed() (engine.Collected[string], error) {
	c, or := sh.c, sh.or
	c.mu.Lock()
	or.close()
	// The included updates no longer change once the round is closed.
	col := engine.Collected[string]{Cohort: or.cohort, Unsure: or.unsure, AtTarget: or.atTarget,
		Delivered: make(map[string]engine.Contribution, len(or.updates))}
	for id, u := range or.updates {
		var v []float64
		if u.vec != nil {
			v = *u.vec
		}
		col.Delivered[id] = engine.Contribution{Vec: v, Payload: u.payload}
	}
	sh.included = make([]*update, 0, len(or.included))
	for _, id := range or.included {
		sh.included = append(sh.included, or.updates[id])
	}
	c.mu.Unlock()
	if err := sh.ctx.Err(); err != nil {
		return col, err
	}
	return col, nil
}

// recycle returns the vectors of the round's included updates for reuse.
func (sh *roundShell) recycle() { sh.c.recycle(sh.included) }

// Ask starts round t if enough devices are eligible and the session runs:
// it plans the cohort (engine.PlanCohort through start: reproducible from
// the logged seed, the eligible set and which devices are sure) and sends
// every member the round frame.
func (sh *roundShell) Ask(t int, start func(eligible []string, sure func(string) bool, probeable []string) (engine.Plan[string], optim.Round, error)) (bool, error) {
	c := sh.c
	if !c.roundsMarked {
		// Before any device is asked: a later process must know that
		// devices may have released (their histories are then not from
		// the start).
		if err := c.store.MarkRoundsStarted(); err != nil {
			return false, fmt.Errorf("coordinator: %w", err)
		}
		c.roundsMarked = true
	}
	deadline := time.Duration(c.sess.DeadlineMillis) * time.Millisecond
	c.mu.Lock()
	eligible := c.roster.EligibleIDs()
	probeable := c.roster.Probes(len(eligible), time.Now(), c.recoveryAfter)
	if engine.Askable(len(eligible), len(probeable), c.sess.Cohort) < c.minDevices || c.ended || c.state == StatePaused {
		c.mu.Unlock()
		return false, nil // someone left meanwhile; wait again
	}
	// The server half is used only by this goroutine; Next is called once
	// per round that actually starts.
	plan, r, err := start(eligible, func(id string) bool { return c.roster.Sure(c.roster.Get(id)) }, probeable)
	if err != nil {
		c.mu.Unlock()
		return false, fmt.Errorf("coordinator: %w", err)
	}
	frame, err := wire.EncodeRound(wire.RoundFrame{T: t, DeadlineMillis: c.sess.DeadlineMillis, X: r.X, XPrev: r.XPrev})
	if err != nil {
		c.mu.Unlock()
		// Validation and the check after every round make this
		// unreachable; if it happens anyway, the process stays up
		// (dashboard, status answers) and says what to do.
		c.front.Log.Error("the next round cannot be served; the session is stopped", "round", t,
			"err", c.unservable(t-1, err))
		<-sh.ctx.Done()
		return false, sh.ctx.Err()
	}
	cohort := plan.Members
	k := len(cohort)
	now := time.Now()
	or := &openRound{t: t, cohort: make(map[string]bool, k), updates: make(map[string]*update, k),
		dropped: make(map[string]bool), allIn: make(chan struct{}), started: now, deadline: now.Add(deadline),
		target: plan.Target, unsure: plan.Unsure, recovery: plan.Recovery}
	c.front.Met.OverSelected.Add(int64(plan.Extra))
	// Devices that were sent round t-1's frame on the same connection
	// already hold x_{t-1}: they get the frame without it.
	short := wire.ShortRound(frame)
	for _, id := range cohort {
		d := c.roster.Get(id)
		or.cohort[id] = true
		d.Round = t
		d.Hist.Ask()
		mark := bus.Mark{Gen: d.Gen, Incl: d.Participations, Asks: d.Hist.Asks()}
		or.bytesOut += int64(d.Conn.SendRound(wsconn.OutFrame{Binary: true, Data: frame, Short: short, Round: t, Mark: mark}))
	}
	if c.node != nil {
		// Edge-held members get the round in one message per edge.
		c.node.SendRounds(t, c.sess, c.bound)
	}
	if c.sa != nil {
		or.sa = c.sa.Start(t, cohort, func(id string) ([32]byte, bool) {
			d := c.roster.Get(id)
			return d.SignKey, d != nil && d.HasKey
		}, or.sendTo(c.roster))
	}
	c.round = or
	sh.or = or
	c.mu.Unlock()
	c.front.Met.BytesOut.Add(or.bytesOut)
	c.front.Log.Info("round started", "round", t, "eligible", len(eligible), "cohort", k, "target", plan.Target,
		"unsure", len(plan.Unsure)-plan.Probes, "probes", plan.Probes, "recovery", plan.Recovery, "cohort_seed", c.cfg.Seed)
	return true, nil
}

// evalDue reports whether round t is evaluated when the schedule is
// every rounds (0: never): after rounds 1, 2, 3 and 5, so a class sees an
// accuracy from the first round on, then every rounds, and at the last
// round (or the round the session ended at).
func evalDue(t, every, rounds int, ended bool) bool {
	if every <= 0 {
		return false
	}
	return t <= 3 || t == 5 || t%every == 0 || t == rounds || ended
}

// Discard abandons the round (discardRound).
func (sh *roundShell) Discard(_ int, cause error) { sh.c.discardRound(sh.or, cause) }

// Commit writes round t's record and the server state to the store, with
// the evaluation when one is due; the decision frames are encoded first,
// so nothing can fail after the commit.
func (sh *roundShell) Commit(t int, o engine.Outcome[string]) error {
	c, or := sh.c, sh.or
	cohortIDs := make([]string, 0, len(or.cohort)+len(or.dropped))
	for id := range or.cohort {
		cohortIDs = append(cohortIDs, id)
	}
	for id := range or.dropped {
		cohortIDs = append(cohortIDs, id)
	}
	slices.Sort(cohortIDs)
	rec := store.RoundRecord{T: t, Cohort: cohortIDs, Included: o.Included, Started: or.started, DeadlineHit: or.deadlineHit,
		Committed: time.Now(), BytesIn: or.bytesIn, BytesOut: or.bytesOut}
	if c.cfg.Evaluate != nil && evalDue(t, c.cfg.EvalEvery, c.sess.Rounds, c.ended) {
		acc, loss, err := c.cfg.Evaluate(c.server.Model())
		if err == nil && (math.IsNaN(acc) || math.IsInf(acc, 0) || math.IsNaN(loss) || math.IsInf(loss, 0)) {
			// An empty test set, or a model gone astray: not a figure to
			// store or publish (JSON has no NaN).
			err = fmt.Errorf("accuracy %v, loss %v: not finite", acc, loss)
		}
		if err != nil {
			c.front.Log.Warn("evaluation failed", "round", t, "err", err)
		} else {
			rec.Evaluated, rec.Accuracy, rec.Loss, rec.EvalSamples = true, acc, loss, c.cfg.EvalSamples
		}
	}
	// Every cohort member's decision is one of two frames: each is
	// encoded once (before the commit, so nothing can fail after it) and
	// the bytes are shared (writers only read them).
	sh.decisions = map[string][]byte{}
	for _, st := range []string{wire.Included, wire.Excluded} {
		b, err := wire.EncodeControl(wire.Decision{T: t, State: st})
		if err != nil {
			return fmt.Errorf("coordinator: round %d: encode the decision: %w", t, err)
		}
		sh.decisions[st] = b
	}
	state := o.State
	if err := c.store.CommitRound(rec, state); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	if c.cfg.OnCommit != nil {
		c.cfg.OnCommit(t)
	}
	c.front.Met.RoundCommitted(rec.Committed.Sub(rec.Started), len(or.included), len(cohortIDs))
	if or.atTarget {
		c.front.Met.ClosedAtTarget.Add(1)
	}
	sh.rec = rec
	return nil
}

// Tell publishes the committed round (model frame, status, histories)
// and sends each member still in it its decision; members that missed it
// (o.Missed) count a miss.
func (sh *roundShell) Tell(t int, o engine.Outcome[string]) {
	c, or, rec := sh.c, sh.or, sh.rec
	mf, mfErr := wire.EncodeRound(wire.RoundFrame{T: t, X: c.server.Model()})
	c.mu.Lock()
	if mfErr == nil {
		c.modelFrame = mf
	}
	c.committed = t
	c.finished = t >= c.sess.Rounds || c.ended
	if rec.Evaluated {
		c.lastEval = evalPoint{T: t, Accuracy: rec.Accuracy, Loss: rec.Loss, Samples: rec.EvalSamples, Valid: true}
	}
	inc := make(map[string]bool, len(o.Included))
	for _, id := range o.Included {
		inc[id] = true
	}
	// Every included direct update joins its sender's history (whatever
	// became of its connection): the history must hold every inclusion
	// for its noise to telescope.
	c.addHistoriesLocked(or)
	for id := range or.cohort {
		d := c.roster.Get(id)
		if d == nil || d.Round != t {
			continue
		}
		d.Round = 0
		state := wire.Excluded
		if inc[id] {
			state = wire.Included
			d.Participations++
		}
		if o.Missed[id] {
			if n := d.Standing.Missed(); n == c.front.Lim.MaxMisses {
				c.front.Log.Info("device no longer sampled: it did not answer its last rounds", "device", wsconn.ShortID(id), "misses", n)
			}
		}
		if d.Conn != nil {
			d.Conn.Send(wsconn.OutFrame{Data: sh.decisions[state]})
			if d.Removed {
				// Removed while the round held its update: now that
				// the device knows the decision, it goes.
				d.Conn.CloseWith(wire.CodeRemoved, reasonRemoved)
			}
		}
	}
	c.recoveryPause = roster.NextRecoveryPause(or.recovery, len(o.Included) > 0, c.recoveryPause)
	c.recoveryAfter = time.Now().Add(c.recoveryPause)
	if c.finished {
		c.markEndedLocked()
	}
	c.round = nil
	c.mu.Unlock()
	c.signal()
	c.front.Log.Info("round committed", "round", t, "included", len(o.Included), "cohort", len(rec.Cohort),
		"latency_ms", rec.Committed.Sub(rec.Started).Milliseconds(), "bytes_in", or.bytesIn, "bytes_out", or.bytesOut)
	if rec.Evaluated {
		c.front.Log.Info("evaluated", "round", t, "accuracy", rec.Accuracy, "loss", rec.Loss, "test_samples", rec.EvalSamples)
	}
}

// addHistoriesLocked adds every included direct update of the closed
// round or to its sender's history (whatever became of its connection:
// the history must hold every inclusion for its noise to telescope). An
// inclusion in an edge's aggregate is not seen one by one: the device's
// history starts again after it, no longer from the start.
func (c *Coordinator) addHistoriesLocked(or *openRound) {
	for _, id := range or.included {
		d, u := c.roster.Get(id), or.updates[id]
		switch {
		case d == nil || u == nil:
		case u.agg:
			d.Hist.Restart()
		case u.hist == &d.Hist && u.vec != nil:
			d.Hist.Include(*u.vec)
		}
	}
}

// vec returns a vector of length dim for decoding an update into.
func (c *Coordinator) vec(dim int) *[]float64 { return wsconn.TakeVec(c.vecs, dim) }

// recycle returns the vectors of a finished round's updates for reuse.
func (c *Coordinator) recycle(us []*update) {
	for _, u := range us {
		if u.vec != nil {
			c.vecs.Put(u.vec)
		}
	}
}

// discardRound abandons round or without committing it: every cohort
// member is told "excluded" (its device aborts, so the noise state stays
// consistent) and the same round number runs again.
func (c *Coordinator) discardRound(or *openRound, cause error) {
	c.front.Met.DiscardedRounds.Add(1)
	c.front.Log.Error("round discarded: the state before it is kept", "round", or.t, "err", cause)
	c.mu.Lock()
	for id := range or.cohort {
		d := c.roster.Get(id)
		if d == nil || d.Round != or.t {
			continue
		}
		d.Round = 0
		roster.Control(d.Conn, wire.Decision{T: or.t, State: wire.Excluded, Reason: "the round was discarded"})
		if d.Removed && d.Conn != nil {
			d.Conn.CloseWith(wire.CodeRemoved, reasonRemoved)
		}
	}
	c.round = nil
	c.mu.Unlock()
	c.signal()
}

// close freezes the included set of or (sorted ids); the caller holds the
// coordinator's lock.
func (or *openRound) close() {
	if or.closed {
		return
	}
	or.closed = true
	or.included = engine.Included(or.updates, or.cohort)
}

// acceptUpdate handles an update frame from device d on connection cn.
// It returns a protocol error for an update the device had no business
// sending; late updates are dropped without error.
//
// The payload is decoded (finite, right dimension) once, outside the
// coordinator's lock, between two looks at the round under it: the first
// refuses an update that was not asked for before any decoding, the
// second tests it (plausible.Checker, which reads the device's history and
// asks, so under the lock: about five passes over d) and decides, so each
// update is counted at most once whatever happened meanwhile.
func (c *Coordinator) acceptUpdate(cn *wsconn.Conn, u wire.UpdateFrame, frameLen int) error {
	c.mu.Lock()
	dim, drop, err := c.checkUpdateLocked(cn, u.T)
	c.mu.Unlock()
	if drop || err != nil {
		return err
	}
	// Validate the payload with the mechanism's decoder before it can
	// reach the server half: a bad payload never touches the model.
	vec := c.vec(dim)
	norm, err := mechanism.DecodeNorm(*vec, u.Payload)
	if err != nil {
		c.vecs.Put(vec)
		return fmt.Errorf("%w: update payload: %v", wire.ErrBadFrame, err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if _, drop, err := c.checkUpdateLocked(cn, u.T); drop || err != nil {
		c.vecs.Put(vec)
		return err
	}
	d, or := c.roster.Get(cn.ID), c.round
	// The tests of the session's public parameters (plausible.Checker: the
	// norm bound, coordinates and blocks, and the device's running sum):
	// an honest device fails them with probability at most
	// plausible.UpdateRejectProb over the whole session. A rejected update is
	// excluded (the device aborts it, so its noise state stays
	// consistent) and never reaches the aggregate.
	// The history gives the rounds asked (limits by the noise of the
	// device's releases so far) and, when the checker tracks sums, the
	// running sum.
	hist := &d.Hist
	if err := check.Message(c.chk, *vec, norm, hist); err != nil {
		c.vecs.Put(vec)
		c.rejectUpdateLocked(d, or, u.T, plausible.TeacherWords(err, norm, c.bound))
		cn.SendControl(wire.Decision{T: u.T, State: wire.Excluded, Reason: err.Error()})
		return nil
	}
	up := &update{vec: vec}
	if c.chk.Tracks() {
		up.hist = hist
	}
	if c.keepPayloads {
		up.payload = slices.Clone(u.Payload)
	}
	or.updates[cn.ID] = up
	d.Standing.Accepted()
	or.bytesIn += int64(frameLen)
	c.front.Met.Updates.Add(1)
	or.checkAllIn()
	return nil
}

// rejectUpdateLocked excludes device d's update for the open round or
// (round t) because validation rejected it, and records why: every reason
// an update is rejected for (the norm bound, at an edge or here, and any
// later plausibility test) goes through here, so the teacher's view of the
// dashboard shows each device's count and last reason. why is in plain
// words (no jargon: the teacher reads it on the projector). The caller
// tells the device (a Decision "excluded": the device aborts the update,
// so its noise state stays consistent); the update never reaches the
// aggregate.
func (c *Coordinator) rejectUpdateLocked(d *roster.Device, or *openRound, t int, why string) {
	c.front.Met.RejectedUpdates.Add(1)
	d.Standing.Refused()
	d.RejectWhy = why
	c.front.Log.Warn("update rejected", "device", wsconn.ShortID(d.ID), "round", t, "why", why)
	delete(or.cohort, d.ID)
	or.dropped[d.ID] = true
	d.Round = 0
	or.checkAllIn()
	c.signal()
}

// checkUpdateLocked looks at an update for round t from cn: drop is set
// for one to ignore (a superseded connection, a late update), err for
// one the device had no business sending; otherwise it returns the
// session's dimension.
func (c *Coordinator) checkUpdateLocked(cn Link, t int) (dim int, drop bool, err error) {
	id := cn.DeviceID()
	d := c.roster.Get(id)
	if d == nil || d.Conn != cn {
		return 0, true, nil // superseded connection
	}
	or := c.round
	switch {
	case c.sa != nil:
		// A shared-noise device sends only masked inputs: an update of
		// its own would show its release with a share of the noise.
		return 0, false, fmt.Errorf("%w: an update frame in a shared-noise session, whose devices send only masked inputs", wire.ErrBadFrame)
	case t <= c.committed || (or != nil && or.t == t && or.closed && or.cohort[id]):
		c.front.Met.LateUpdates.Add(1)
		return 0, true, nil
	case or == nil || or.t != t || !or.cohort[id] || d.Round != t:
		return 0, false, fmt.Errorf("update for round %d that was not assigned to this device", t)
	case or.updates[id] != nil:
		return 0, false, fmt.Errorf("duplicate update for round %d", t)
	}
	return c.sess.Dim, false, nil
}

// checkAllIn closes the round and allIn once every device still in the
// cohort has delivered its update, or as soon as the round's target of
// updates has arrived (over-selection: the members still out are
// excluded at the commit, and an update of theirs that comes later is
// late). The caller holds the coordinator's lock.
func (or *openRound) checkAllIn() {
	if or.sa != nil {
		return // the secure aggregation's steps close the round (collectSecAgg)
	}
	if or.closed || (len(or.updates) < len(or.cohort) && len(or.updates) < or.target) {
		return
	}
	or.atTarget = len(or.updates) < len(or.cohort)
	or.close()
	select {
	case <-or.allIn:
	default:
		close(or.allIn)
	}
}

// busCred are a hello's credentials as an edge forwards them (the
// hello itself carries neither the join code nor the secret): the
// SHA-256 of the join code the device gave, and of its secret (of a
// returning device) or of the secret the edge issued it (a new device;
// the edge adds the secret to the welcome itself).
type busCred struct {
	codeHash, secretHash []byte
}

// admitCred authenticates hello and binds the device to cn, resolving
// the device's pending round; it returns the welcome it queued. The
// credentials come as cred (nil: in the hello, from a websocket).
func (c *Coordinator) admitCred(cn Link, h wire.Hello, cred *busCred) (wire.Welcome, error) {
	if h.Version != wire.Version {
		return wire.Welcome{}, &wsconn.CloseError{Code: wire.CodeVersion, Reason: fmt.Sprintf("protocol version %d, want %d", h.Version, wire.Version)}
	}
	codeOK := gate.JoinCodeEqual(h.JoinCode, c.cfg.JoinCode)
	if cred != nil {
		want := sha256.Sum256([]byte(wire.NormalizeJoinCode(c.cfg.JoinCode)))
		codeOK = subtle.ConstantTimeCompare(cred.codeHash, want[:]) == 1
	}
	if !codeOK {
		c.front.Met.AuthFailures.Add(1)
		return wire.Welcome{}, &wsconn.CloseError{Code: wire.CodeJoinCode, Reason: "wrong join code"}
	}
	// The nickname, normalised, must not look like a present one: checked
	// here before the store is touched, and again under the lock that
	// binds it (bindLocked).
	nick, err := gate.NormalizeNickname(h.Nickname)
	if err != nil {
		return wire.Welcome{}, roster.NicknameError(err)
	}
	h.Nickname = nick
	c.mu.Lock()
	err = c.roster.CheckNickname(h.DeviceID, nick)
	c.mu.Unlock()
	if err != nil {
		return wire.Welcome{}, err
	}
	w := wire.Welcome{Version: wire.Version}
	if h.DeviceID == "" {
		id, secret, err := gate.NewCredentials()
		if err != nil {
			return wire.Welcome{}, err
		}
		if cred != nil {
			err, secret = c.store.AddDeviceHash(id, cred.secretHash), ""
		} else {
			err = c.store.AddDevice(id, secret)
		}
		if err != nil {
			return wire.Welcome{}, err
		}
		w.DeviceID, w.Secret = id, secret
		c.front.Met.NewDevices.Add(1)
	} else {
		auth := func() error { return c.store.Authenticate(h.DeviceID, h.Secret) }
		if cred != nil {
			auth = func() error { return c.store.AuthenticateHash(h.DeviceID, cred.secretHash) }
		}
		if err := auth(); err != nil {
			c.front.Met.AuthFailures.Add(1)
			if errors.Is(err, store.ErrUnknownDevice) || errors.Is(err, store.ErrBadSecret) {
				return wire.Welcome{}, &wsconn.CloseError{Code: wire.CodeAuth, Reason: "unknown device id or wrong secret"}
			}
			return wire.Welcome{}, err
		}
		w.DeviceID = h.DeviceID
	}
	cn.SetDeviceID(w.DeviceID)

	if c.cfg.BeforeAdmit != nil {
		c.cfg.BeforeAdmit(w.DeviceID, h.Pending)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.bindLocked(cn, h.Nickname, h.Pending, &w); err != nil {
		return wire.Welcome{}, err
	}
	if d := c.roster.Get(w.DeviceID); d != nil {
		d.SignKey, d.HasKey = h.SignKeyBytes()
	}
	return w, nil
}

// bindLocked binds the authenticated device cn.deviceID() to cn and
// resolves its pending round. With w (a hello) it completes the welcome
// and queues it as cn's first frame; without (an edge's roster after the
// session process restarted: the device is connected already) it sends
// the pending round's decision as a Decision.
func (c *Coordinator) bindLocked(cn Link, nickname string, pending int, w *wire.Welcome) error {
	id := cn.DeviceID()
	if c.closing {
		return &wsconn.CloseError{Code: wire.CodeShutdown, Reason: "coordinator is shutting down"}
	}
	if c.removed[id] {
		return &wsconn.CloseError{Code: wire.CodeRemoved, Reason: reasonRemoved}
	}
	if w != nil { // a hello (a roster's devices are bound already)
		if err := c.roster.CheckNickname(id, nickname); err != nil {
			return err
		}
	}
	d := c.roster.Get(id)
	if d == nil {
		if c.roster.Connected() >= c.front.Lim.MaxDevices {
			return &wsconn.CloseError{Code: wire.CodeFull, Reason: "too many devices"}
		}
		d = &roster.Device{ID: id, Joined: time.Now(), Gen: bus.RandomGen()}
		// Registered just now (a welcome with a new secret), or no round
		// was sent before this process: it has made no release in this
		// session that this process did not see.
		d.Hist = check.NewHistory((w != nil && w.Secret != "") || (c.seenAll && !c.roster.HistLost(id)))
		c.roster.Add(d)
	}

	// The pending round's decision. It is read under the lock: a round
	// commits (store, then c.committed and c.round under the lock), so
	// here either the open round still holds the update, or the round is
	// committed and its record is in the store. Reading the record
	// before taking the lock would let the round commit in between and
	// answer "excluded" for an included update.
	or := c.round
	holding := false // the open round holds this device's update
	var pendingDec *wire.Decision
	if pending > 0 {
		dec := wire.Decision{T: pending, State: wire.Excluded}
		switch {
		case or != nil && or.t == pending && or.cohort[d.ID] && or.updates[d.ID] != nil &&
			(!or.closed || slices.Contains(or.included, d.ID)):
			dec.State = wire.Pending
			holding = true
		case pending <= c.committed:
			rec, ok, err := c.store.Round(pending)
			if err != nil {
				return err
			}
			if ok && rec.Includes(d.ID) {
				dec.State = wire.Included
			}
		}
		pendingDec = &dec
	}
	if old := c.roster.Attach(d, cn); old != nil {
		old.CloseWith(wire.CodeDuplicate, "the device opened another connection")
		c.round.secAggGone(d)
	}
	// misses survive a reconnection and a new hello: only an accepted
	// update shows that the device answers its rounds.
	d.Left, d.LeftWhy = false, ""
	d.SetNickname(nickname)
	if d.Round != 0 && !holding {
		// Assigned but the update never arrived on the old connection:
		// it is excluded now and a late copy will not be accepted.
		// A closed round's maps are read without the lock by
		// finishRound: it is left as it is (the device is not in its
		// included list, and the welcome says "excluded").
		if or != nil && or.t == d.Round {
			d.Standing.Missed() // asked, and came back without its update
			if !or.closed {
				delete(or.cohort, d.ID)
				delete(or.updates, d.ID)
				or.dropped[d.ID] = true
				or.checkAllIn()
			}
		}
		d.Round = 0
	}
	c.front.Met.Connects.Add(1)
	if w != nil {
		w.Session, w.Lobby = c.sess, c.state == StateLobby
		w.Committed = c.committed
		w.Pending = pendingDec
		// Queue the welcome before the lock is released: from now on the
		// device is eligible, and its first frame must be the welcome.
		if !cn.SendControl(*w) {
			return errors.New("could not queue the welcome")
		}
	} else if pendingDec != nil && !holding {
		cn.SendControl(*pendingDec)
	}
	if c.finished {
		cn.SendControl(wire.End{Committed: c.committed})
	}
	c.signal()
	return nil
}

// Decision answers a status query for round t from device id.
func (c *Coordinator) Decision(id string, t int) (wire.Decision, error) {
	// Under the lock for the same reason as in admit: the round must not
	// commit between the store read and the look at the open round.
	c.mu.Lock()
	defer c.mu.Unlock()
	dec := wire.Decision{T: t, State: wire.Excluded}
	if or := c.round; or != nil && or.t == t && or.cohort[id] && or.updates[id] != nil &&
		(!or.closed || slices.Contains(or.included, id)) {
		dec.State = wire.Pending
		return dec, nil
	}
	if t <= c.committed {
		rec, ok, err := c.store.Round(t)
		if err != nil {
			return wire.Decision{}, err
		}
		if ok && rec.Includes(id) {
			dec.State = wire.Included
		}
	}
	return dec, nil
}

// DisconnectedLink unbinds l from its device (a websocket's or an
// edge's link). A cohort member of the open round whose update has not
// arrived is dropped from the round at once: frames are read in order, so
// an update it sent before the connection ended has already been
// accepted, and if it comes back it would be excluded anyway (see
// admitCred). The round therefore never waits for a device that has gone.
func (c *Coordinator) DisconnectedLink(cn Link) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.roster.Get(cn.DeviceID())
	if d == nil || d.Conn != cn {
		return
	}
	c.roster.Detach(d)
	c.round.secAggGone(d)
	if c.dropUnansweredLocked(d, "disconnected") {
		d.Standing.Missed() // asked, and went without its update
	}
}

// dropUnansweredLocked removes d from the open round if it is a cohort
// member whose update has not arrived (it is then excluded), and reports
// whether it did.
func (c *Coordinator) dropUnansweredLocked(d *roster.Device, why string) bool {
	or := c.round
	if or == nil || d.Round != or.t || !or.cohort[d.ID] || or.updates[d.ID] != nil || or.closed {
		return false
	}
	delete(or.cohort, d.ID)
	or.dropped[d.ID] = true
	d.Round = 0
	c.front.Met.GraceDrops.Add(1)
	c.front.Log.Info("cohort member dropped from the round", "device", wsconn.ShortID(d.ID), "round", or.t, "why", why)
	or.checkAllIn()
	return true
}

// LeaveLink handles a Leave message on l (a websocket's or an edge's
// link): the device is not sampled again until its next hello, and
// leaves the open round if it has not answered it.
func (c *Coordinator) LeaveLink(cn Link, l wire.Leave) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.roster.Get(cn.DeviceID())
	if d == nil || d.Conn != cn {
		return
	}
	c.front.Met.Leaves.Add(1)
	if !d.Left {
		c.front.Log.Info("device left", "device", wsconn.ShortID(d.ID), "reason", l.Reason, "detail", l.Detail)
	}
	d.Left = true
	d.LeftWhy = l.Detail
	c.round.secAggGone(d)
	c.dropUnansweredLocked(d, "left: "+l.Reason)
	c.signal()
}

func (c *Coordinator) endSession() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.roster.Devices() {
		if d.Conn != nil {
			d.Conn.SendControl(wire.End{Committed: c.committed})
		}
	}
}

// Committed returns the last committed round.
func (c *Coordinator) Committed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.committed
}

// Shutdown closes every device connection with CodeShutdown. Committed
// state is already durable; an open round is abandoned (its devices learn
// "excluded" on resume).
func (c *Coordinator) Shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	for _, d := range c.roster.Devices() {
		if d.Conn != nil {
			d.Conn.CloseWith(wire.CodeShutdown, "coordinator is shutting down")
		}
	}
}
