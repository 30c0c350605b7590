package coordinator

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"browserfl/coordinator/gate"
	"browserfl/coordinator/lifecycle"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/roster"
	"browserfl/coordinator/secround"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/engine"
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
	// may be probed; roster.Probes).
	Seed uint64
	// TrustNewDevices makes a device sure (a member the round counts on,
	// roster.Sure) from its first hello instead of from its first included
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
	// mu guards the session's state: every part below but the round
	// loop's own fields (roundLoop) is read and written under it.
	mu sync.Mutex
	// sess is the session's definition: the template while in the lobby,
	// the final parameters from Start on. It is written only by Start
	// (under mu, before the round loop leaves the lobby); the round loop
	// reads it without the lock after that, everyone else under mu.
	sess       wire.SessionParams
	minDevices int // rounds need this many eligible devices (Config.MinDevices or its default)
	started    time.Time

	// The parts of the session core, each with the state it owns:
	life   *lifecycle.Phase // the session's phase and its record (coordinator/lifecycle)
	roster *roster.Roster   // the device records (coordinator/roster)
	adm    admission        // hellos and rosters: who is bound to which link (admit.go)
	in     intake           // updates, edge aggregates and their checks (intake.go)
	loop   roundLoop        // the rounds: the open round, the commits (rounds.go)
	// sa is the secure aggregation of a shared-noise session (secagg.go,
	// coordinator/secround); nil for the other algorithms.
	sa *secround.Session
	// node is set when edge processes hold devices for this session
	// (cluster.go, coordinator/sessionnode); nil in the one-process shape.
	node Relay
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
		store:   cfg.Store,
		started: time.Now(),
		sess:    cfg.Session,
	}
	c.front.H = sessionHandler{c}
	c.roster = roster.New(c.front.Lim.MaxMisses, cfg.TrustNewDevices)
	c.life = lifecycle.New(cfg.Store, c.roster, cfg.Logger)
	c.adm = admission{c: c}
	c.in = intake{c: c, vecs: wsconn.NewVecList(cfg.Session.Dim)}
	c.loop = roundLoop{c: c, changed: make(chan struct{}, 1)}
	var err error
	if c.adm.removed, err = c.store.Removed(); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	life, err := lifecycle.Read(c.store)
	if err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	switch {
	case life.State == "" && cfg.Lobby:
		c.life.Set(StateLobby)
	case life.State == StateLobby:
		c.life.Set(StateLobby)
	case life.State != "":
		// Started (or ended) before this process: the final parameters
		// are the stored ones.
		if life.Session.Dim != cfg.Session.Dim || life.Session.Algorithm != cfg.Session.Algorithm {
			return nil, errors.New("coordinator: the store holds a session with another model or algorithm")
		}
		c.sess = life.Session
		c.life.Set(life.State)
		if life.State == StateEnded {
			c.life.End()
		}
	}
	c.minDevices = minDevicesFor(c.cfg, c.sess)
	if c.life.State() == StateLobby {
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

// minDevicesFor returns the eligible devices a round of s needs under cfg.
func minDevicesFor(cfg Config, s wire.SessionParams) int {
	if cfg.MinDevices <= 0 {
		return min(2, s.Cohort)
	}
	return cfg.MinDevices
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
	c.in.chk, c.in.bound = chk, chk.NormBound()
	bound := c.in.bound
	_, sums := c.server.(optim.SumApplier)
	c.in.keepPayloads = !sums
	committed, state, err := c.store.State()
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	started, err := c.store.RoundsStarted()
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	included, err := c.store.IncludedCounts()
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	c.roster.SetIncluded(included)
	// committed > 0 without the marker: a store from before it.
	c.loop.seenAll, c.loop.roundsMarked = !started && committed == 0, started
	if state != nil {
		if err := c.server.UnmarshalBinary(state); err != nil {
			return unservable(c.store, committed, fmt.Errorf("restore server state of round %d: %w", committed, err))
		}
	}
	if committed < cfg.Session.Rounds && !c.life.Ended() {
		if err := engine.Servable(c.server, cfg.Session.DeadlineMillis); err != nil {
			return unservable(c.store, committed, err)
		}
	}
	if c.sa, err = newSecAgg(c.sess, c.front.Log); err != nil {
		return err
	}
	if c.sa != nil {
		// No round starts that could not reach the threshold.
		c.minDevices = max(c.minDevices, c.sa.Threshold())
		// A device's shares for the others grow with the cohort: every
		// connection reads frames that large, those of the lobby too.
		c.front.SetSecAggMax(wire.SecAggFrameMax(c.sess.Cohort))
		for _, d := range c.roster.Devices() {
			if cn, ok := d.Conn.(*wsconn.Conn); ok {
				cn.RaiseReadLimit(c.front.FrameMax())
			}
		}
	}
	c.loop.eng = engine.New[string](c.server, cfg.Session.Cohort, cfg.Session.Rounds, cfg.Seed, cfg.Session.DeadlineMillis)
	if c.node == nil {
		// A round in which nobody is sure asks everyone eligible (idle
		// ids present at Start cannot hold it); not in the cluster shape
		// (AttachNode).
		c.loop.eng.SetAskAll(engine.AskAllCap(cfg.Session.Cohort))
	}
	c.loop.committed = committed
	c.loop.finished = committed >= cfg.Session.Rounds || c.life.Ended()
	if committed > 0 {
		c.loop.modelFrame, _ = wire.EncodeRound(wire.RoundFrame{T: committed, X: c.server.Model()})
	}
	if recs, err := c.store.Rounds(max(0, committed-cfg.EvalEvery-1), cfg.EvalEvery+2); err == nil {
		for _, r := range recs {
			if r.Evaluated {
				c.loop.lastEval = evalPoint{T: r.T, Accuracy: r.Accuracy, Loss: r.Loss, Samples: r.EvalSamples, Valid: true}
			}
		}
	}
	c.front.Log.Info("update validation", "max_norm", bound, "tests", chk.Describe())
	c.front.Log.Info("session ready", "session", cfg.Session.Name, "algorithm", cfg.Session.Algorithm,
		"dim", cfg.Session.Dim, "cohort", cfg.Session.Cohort, "rounds", cfg.Session.Rounds,
		"committed", committed, "cohort_seed", cfg.Seed, "min_devices", c.minDevices, "state", c.life.State())
	return nil
}

// ErrUnservable is wrapped by New when the store holds a state the
// coordinator cannot serve (for example a model that is not finite, or
// not representable in the float32 round frame). The error text says
// which rounds Store.RollBack can return to.
var ErrUnservable = errors.New("coordinator: the stored state cannot be served")

// unservable is the ErrUnservable for a state after round committed in
// st that cannot be served for cause.
func unservable(st *store.Store, committed int, cause error) error {
	oldest, _, err := st.RollBackRange()
	if err != nil {
		return fmt.Errorf("%w: %v (and the store's history could not be read: %v)", ErrUnservable, cause, err)
	}
	return fmt.Errorf("%w: after round %d: %v; roll back to an earlier round (the store keeps rounds %d to %d; "+
		"cmd/coordinator: -rollback-to N) or start over with -reset", ErrUnservable, committed, cause, oldest, committed)
}

// Committed returns the last committed round.
func (c *Coordinator) Committed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loop.committed
}

// Shutdown closes every device connection with CodeShutdown. Committed
// state is already durable; an open round is abandoned (its devices learn
// "excluded" on resume).
func (c *Coordinator) Shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adm.closing = true
	for _, d := range c.roster.Devices() {
		if d.Conn != nil {
			d.Conn.CloseWith(wire.CodeShutdown, "coordinator is shutting down")
		}
	}
}
