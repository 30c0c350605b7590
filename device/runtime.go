package device

import (
	"context"
	"crypto/ed25519"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"time"

	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// Config configures a Runtime.
type Config struct {
	// URL is the coordinator's websocket URL, e.g. ws://localhost:8080/ws
	// (required unless Transport is set).
	URL string
	// JoinCode is the session's join code (required).
	JoinCode string
	// Nickname is the optional name shown in the teacher's lobby list
	// (wire.CheckNickname; no personal data).
	Nickname string
	// Storage persists the device state (required).
	Storage Storage
	// Data is the device's local data; batches are taken in order from a
	// persisted cursor (required, non-empty). For single-pass algorithms
	// (optim.Params.SinglePass) the device leaves when the data is used
	// up; for the others the cursor wraps around.
	Data []dataset.Sample
	// Task is the row task Data was encoded for (task.Definition.Set),
	// or nil for pictures. A session must carry the same task
	// (plan.SessionTask; compared field by field), a picture session a
	// nil Task: the device refuses any other, so rows of one task are
	// never trained on in a session of another.
	Task *task.Definition
	// Budget is the owner's privacy budget: epsilon at the owner's delta.
	// The zero value is plan.DefaultBudget() (the page's default, epsilon
	// 8 at delta 1e-5). The device converts it to zCDP rho at the owner's
	// delta, never at the session's; a session whose worst case (plus
	// Spent) exceeds it is refused, and so is any release that would take
	// the ledger past it.
	Budget plan.Budget
	// Spent is what the owner's data has already spent in earlier
	// sessions (the owner's own ledger; zero for data used nowhere else).
	// It is counted against Budget.
	Spent privacy.Spent
	// Unlimited removes the owner's budget: only the session's own
	// per-device budget limits the device. Budget must then be zero.
	Unlimited bool
	// AllowTrusted lets the device send clipped but un-noised updates to
	// a trusted-server session (default false: refused).
	AllowTrusted bool
	// AllowNonPrivate lets the device join a session without a privacy
	// guarantee (default false: refused).
	AllowNonPrivate bool
	// NewDevice builds the algorithm's device half for a session (default
	// DefaultNewDevice, the shared/optim registry).
	NewDevice func(p optim.Params) (optim.Device, error)
	// Origin, if set, is sent as the Origin header (native devices).
	Origin string
	// Transport connects to the coordinator (natively, default
	// WebSocket{URL, Origin}; URL and Origin are then unused). The page
	// gives its own.
	Transport Transport
	// OnEvent, if set, is called on every state change, in order, on
	// Run's goroutine and outside the runtime's locks: it may call the
	// runtime (State, Leave); Run waits while it runs.
	OnEvent func(Event)
	// MoreData, if set, reports whether more samples are on their way
	// (InsertData, AddData): the rest of a demo shard that the page
	// fetches while the device trains. A single-pass device whose
	// samples are used up then stays: it waits in a round for them and
	// lets the round pass unanswered if they have not come
	// (EventWaiting), instead of leaving as done. It is called under
	// the runtime's lock: it must not call the runtime.
	MoreData func() bool
	// DataWait bounds that wait (default 2 s, at most maxDataWait), and
	// so does half the round's deadline: an update prepared after its
	// round closed would spend samples and budget for nothing. The
	// connection is not read meanwhile.
	DataWait time.Duration
	// Hooks inject faults (tests only; nil in production).
	Hooks *Hooks
	// MinBackoff and MaxBackoff bound the reconnect delay (defaults 100ms
	// and 5s, with jitter).
	MinBackoff, MaxBackoff time.Duration
	// DialTimeout bounds each dial (Transport.Dial, the websocket's
	// opening handshake included; default 30s), and again the wait from
	// the hello to the coordinator's first answer: a server or proxy that
	// accepts the connection and never answers the handshake, or
	// completes it and then says nothing, costs a retry, not the device.
	// (The coordinator answers a hello at once, and an edge within its
	// hello timeout, 10s by default.)
	DialTimeout time.Duration
}

// Hooks inject faults for tests of the exactly-once protocol.
type Hooks struct {
	// BeforeSend runs after the pending update of round t is saved and
	// before it is sent: a positive delay sleeps first (a late update);
	// disconnect drops the connection instead of sending (a lost update).
	BeforeSend func(t int) (delay time.Duration, disconnect bool)
	// Withhold, if it returns true, keeps round t's saved update unsent
	// while the connection stays up (pings answered, later rounds read):
	// a device that is there but never answers.
	Withhold func(t int) bool
	// AfterSend runs right after the update of round t was written; true
	// drops the connection before any decision can arrive.
	AfterSend func(t int) (disconnect bool)
	// DropDecision runs when a decision for round t arrives; true drops
	// it and the connection (a lost acknowledgement).
	DropDecision func(t int) bool
}

// EventKind names what happened.
type EventKind string

// Event kinds.
const (
	EventConnected EventKind = "connected" // welcome received
	EventLobby     EventKind = "lobby"     // welcome received; the session waits for the teacher's Start
	EventStarted   EventKind = "started"   // the teacher started the session; its final parameters are accepted
	EventRound     EventKind = "round"     // assigned round T
	EventSent      EventKind = "sent"      // update for round T sent
	EventIncluded  EventKind = "included"  // round T's update included, noise state committed
	EventExcluded  EventKind = "excluded"  // round T's update excluded, pending state discarded
	EventEnd       EventKind = "end"       // the session finished
	EventWaiting   EventKind = "waiting"   // round T passed unanswered: more samples were on their way (Config.MoreData) but had not come
	EventError     EventKind = "error"     // connection lost; Err says why
	EventCohort    EventKind = "cohort"    // shared noise: round T's secure aggregation holds Cohort devices, this one included
)

// Event describes a state change of the runtime.
type Event struct {
	Kind           EventKind
	T              int
	DeviceID       string
	Participations int   // included rounds so far
	Err            error // for EventError
	// Cohort is, for EventCohort, how many devices the round's secure
	// aggregation names (this one included), at least the threshold.
	Cohort int
}

// State is what the runtime persists (JSON).
type State struct {
	DeviceID string              `json:"device_id,omitempty"`
	Secret   string              `json:"secret,omitempty"`
	Session  *wire.SessionParams `json:"session,omitempty"`
	// Pending is the round whose update was saved to be sent and whose
	// decision has not been applied; 0 if none.
	Pending int `json:"pending,omitempty"`
	// Algo is the device half's MarshalBinary.
	Algo []byte `json:"algo,omitempty"`
	// Cursor is the position of the next batch in Data.
	Cursor int `json:"cursor"`
	// Included and Excluded count decisions applied.
	Included int `json:"included"`
	Excluded int `json:"excluded"`
	// Ended is set when the coordinator said the session finished.
	Ended bool `json:"ended,omitempty"`
}

// ErrRefused is wrapped by errors that end Run for good: the coordinator
// refused the device (join code, secret, version) or the device refused
// the session (budget, trust).
var ErrRefused = errors.New("device: refused")

// ErrDataUsedUp and ErrBudgetSpent are wrapped, together with ErrRefused,
// by the error Run returns when the device stops because a single-pass
// session has used all its local samples, or because another round would
// take its ledger past the owner's budget. The device has sent
// wire.Leave{Reason: wire.LeaveDone} if it was connected.
var (
	ErrDataUsedUp  = errors.New("local data used up")
	ErrBudgetSpent = errors.New("privacy budget spent")
)

// ErrStartRefused is wrapped, with ErrRefused and the reason (for example
// plan.ErrOverBudget), by the error Run returns when the device refused
// the final parameters a lobby session's Start brought.
var ErrStartRefused = errors.New("the session's final parameters were refused at Start")

// ErrNicknameTaken is wrapped, with ErrRefused, by the error Run returns
// when the coordinator refused the nickname (wire.CodeNickname: it looks
// like the name of someone present); the person picks another.
var ErrNicknameTaken = errors.New("nickname refused")

// ErrRemoved is wrapped, with ErrRefused, by the error Run returns when
// the teacher removed the device from the session (wire.CodeRemoved): the
// coordinator refuses it for the rest of the session.
var ErrRemoved = errors.New("the teacher removed this device from the session")

// errAnswered is wrapped by a transport's dial error when the server
// answered the handshake with a status that says no coordinator's
// websocket is at this address (device/dial_native.go): it ends Run
// for a device that never had a welcome (Runtime.dial).
var errAnswered = errors.New("no coordinator's websocket at this address")

// ErrLeft is returned by Run after Leave was called.
var ErrLeft = errors.New("device: left the session")

// Runtime runs one device. Use New, then Run.
type Runtime struct {
	cfg    Config
	budget float64 // the owner's zCDP rho left for this session (+Inf when Unlimited), sent in hello

	mu    sync.Mutex
	st    State
	algo  optim.Device
	param optim.Params
	// feat computes the features the session's model reads from each
	// picture of a minibatch (minibatchLocked); nil when it reads
	// cfg.Data as they are.
	feat *plan.Features
	// events are emitted under mu and delivered by unlock, after it.
	events []Event
	// signKey signs the device's secure aggregation messages
	// (shared-noise sessions); its public half goes in every hello. It
	// lives as long as the runtime: a round's secure aggregation does not
	// survive a new connection anyway.
	signKey ed25519.PrivateKey
	// saOf is the secure aggregation derived from the session saFor
	// (plan.SessionSecAgg), kept: in a page's Worker it takes up to a
	// second, which every round frame would spend again before the
	// round's setup is answered.
	saOf  *plan.SecAgg
	saFor wire.SessionParams
	// dataAdded is closed (and replaced) under mu whenever InsertData
	// adds samples: a round waiting for them wakes up.
	dataAdded chan struct{}

	// pres is the current connection and the leave state (presence.go).
	pres *presence
}

// New checks cfg and loads the saved state.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.JoinCode == "" || cfg.Storage == nil || len(cfg.Data) == 0 {
		return nil, errors.New("device: JoinCode, Storage and Data are required")
	}
	if cfg.Transport == nil {
		tr, err := defaultTransport(cfg)
		if err != nil {
			return nil, err
		}
		cfg.Transport = tr
	}
	if err := wire.CheckNickname(cfg.Nickname); err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	if cfg.NewDevice == nil {
		cfg.NewDevice = DefaultNewDevice
	}
	if cfg.DataWait <= 0 {
		cfg.DataWait = 2 * time.Second
	}
	cfg.DataWait = min(cfg.DataWait, maxDataWait)
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 30 * time.Second
	}
	budget, err := cfg.policy().rho()
	if err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	_, signKey, err := ed25519.GenerateKey(crand.Reader)
	if err != nil {
		return nil, fmt.Errorf("device: signing key: %w", err)
	}
	rt := &Runtime{cfg: cfg, budget: budget, pres: newPresence(), signKey: signKey}
	b, err := cfg.Storage.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &rt.st); err != nil {
			return nil, fmt.Errorf("device: saved state: %w", err)
		}
		if rt.st.Session != nil {
			if err := rt.setup(*rt.st.Session); err != nil {
				return nil, err
			}
		}
	}
	return rt, nil
}

// State returns a copy of the current state (without the secret).
func (rt *Runtime) State() State {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	s := rt.st
	s.Secret = ""
	s.Algo = nil
	return s
}

// Algorithm returns the device half (for tests and UIs; do not mutate
// concurrently with Run).
func (rt *Runtime) Algorithm() optim.Device {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.algo
}

// setup builds the device half for session s and restores its state.
func (rt *Runtime) setup(s wire.SessionParams) error {
	feat, err := checkData(s, rt.cfg.Task, rt.cfg.Data)
	if err != nil {
		return err
	}
	p := s
	a, err := rt.cfg.NewDevice(p)
	if err != nil {
		return fmt.Errorf("device: algorithm %q: %w", s.Algorithm, err)
	}
	if len(rt.st.Algo) > 0 {
		if err := a.UnmarshalBinary(rt.st.Algo); err != nil {
			return fmt.Errorf("device: restore algorithm state: %w", err)
		}
	}
	alg, err := algo.Lookup(p.Algorithm)
	if err != nil {
		return fmt.Errorf("device: %w", err)
	}
	if alg.NeedsLocalData() {
		lds, ok := a.(optim.LocalDataSetter)
		if !ok {
			// A wrapper that hides SetLocalData would leave the device
			// without its local set: refuse here, not at its first round.
			return fmt.Errorf("device: algorithm %q keeps a local data set, but %T takes none", s.Algorithm, a)
		}
		local := rt.cfg.Data
		if p.LocalSize > 0 && p.LocalSize < len(local) {
			local = local[:p.LocalSize]
		}
		if feat != nil {
			// The algorithm keeps its local set: its features, once.
			if local, err = feat.Samples(local, runtime.GOMAXPROCS(0)); err != nil {
				return fmt.Errorf("%w: %w", ErrWrongData, err)
			}
		}
		if err := lds.SetLocalData(local); err != nil {
			return fmt.Errorf("device: local data: %w", err)
		}
	}
	rt.algo, rt.param, rt.feat = a, p, feat
	return nil
}

// ErrDataFixed is wrapped by AddData when the session's algorithm keeps a
// local data set of its own (algo.Algorithm.NeedsLocalData): it was
// given the data at set-up, and data arriving later would not be in it.
var ErrDataFixed = errors.New("device: this session's algorithm took its local data at set-up")

// ErrInsertUsed is wrapped by InsertData when the samples would go
// before the cursor: among samples already used, which would move.
var ErrInsertUsed = errors.New("device: samples would go among the used ones")

// AddData appends samples at the end of the device's data
// (InsertData at the end).
func (rt *Runtime) AddData(samples []dataset.Sample) error {
	rt.mu.Lock()
	n := len(rt.cfg.Data)
	rt.mu.Unlock()
	return rt.InsertData(n, samples)
}

// InsertData puts samples into the device's data at position at (data
// that arrives while the device runs: the rest of a demo shard fetched in
// the background, which goes after the demo samples and before the
// owner's files). Only at or after the cursor: the samples used keep
// their places, so the single-pass cursor means the same thing before
// and after (ErrInsertUsed otherwise); the ledger, the policy and the
// cursor are not touched: more data only lets the device answer more
// rounds, each charged as any other. Once a session is set up the
// samples must fit it (ErrWrongData) and its algorithm must not keep
// local data of its own (ErrDataFixed); on error nothing is added. Safe
// to call while Run runs, also from OnEvent (which runs outside the
// runtime's locks).
func (rt *Runtime) InsertData(at int, samples []dataset.Sample) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if s := rt.st.Session; s != nil && rt.algo != nil {
		if _, err := checkData(*s, rt.cfg.Task, samples); err != nil {
			return err
		}
		if alg, err := algo.Lookup(rt.param.Algorithm); err != nil || alg.NeedsLocalData() {
			return fmt.Errorf("%w (%s)", ErrDataFixed, rt.param.Algorithm)
		}
	}
	if at < rt.st.Cursor || at > len(rt.cfg.Data) {
		return fmt.Errorf("%w: at %d, the cursor at %d of %d samples", ErrInsertUsed, at, rt.st.Cursor, len(rt.cfg.Data))
	}
	// A fresh array: a slice handed out earlier (setup's local data,
	// the caller's) never sees the change.
	d := make([]dataset.Sample, 0, len(rt.cfg.Data)+len(samples))
	d = append(append(append(d, rt.cfg.Data[:at]...), samples...), rt.cfg.Data[at:]...)
	rt.cfg.Data = d
	if rt.dataAdded != nil {
		close(rt.dataAdded)
		rt.dataAdded = nil
	}
	return nil
}

// DataLen returns how many samples the device holds.
func (rt *Runtime) DataLen() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.cfg.Data)
}

// ErrWrongData is wrapped when the device's data does not fit a
// session: another task (or rows for a picture session, pictures for a
// row session), another number of features, a label out of range.
var ErrWrongData = errors.New("device: the data does not fit the session")

// checkData checks that data, encoded for task d (nil: pictures), fits
// session s: the session's task must be valid (plan.SessionTask) and the
// same as d, and every sample must have s.Features features and a label
// below s.Classes, so the dimensions are the session's whatever the data.
// When the session's model reads features of pictures
// (plan.SessionFeatures), it returns their transform, and every sample
// must be a picture the transform reads (its features are computed
// minibatch by minibatch, minibatchLocked); a transform this build does
// not know is refused (plan.ErrUnknownFeatures).
func checkData(s wire.SessionParams, d *task.Definition, data []dataset.Sample) (*plan.Features, error) {
	st, err := plan.SessionTask(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWrongData, err)
	}
	feat, err := plan.SessionFeatures(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWrongData, err)
	}
	inputs := s.Features
	if feat != nil {
		inputs = feat.Inputs()
	}
	switch {
	case feat != nil && d != nil:
		return nil, fmt.Errorf("%w: the session learns %s features of pictures, this device holds rows of the task %q", ErrWrongData, feat.Kind(), d.Name)
	case st == nil && d != nil:
		return nil, fmt.Errorf("%w: the session learns pictures, this device holds rows of the task %q", ErrWrongData, d.Name)
	case st != nil && d == nil:
		return nil, fmt.Errorf("%w: the session learns the task %q, this device holds pictures", ErrWrongData, st.Name)
	case st != nil && !reflect.DeepEqual(st, d):
		return nil, fmt.Errorf("%w: the session learns the task %q, this device holds rows of another task %q", ErrWrongData, st.Name, d.Name)
	}
	for i, x := range data {
		if len(x.X) != inputs || x.Label < 0 || x.Label >= s.Classes {
			return nil, fmt.Errorf("%w: sample %d has %d values and label %d; the session reads %d and has %d classes",
				ErrWrongData, i, len(x.X), x.Label, inputs, s.Classes)
		}
	}
	return feat, nil
}

// minibatchLocked returns the n samples of the device's data from
// cursor on (optim.Minibatch) as the session's model reads them: when it
// reads features, each picture's own (plan.Features.Picture: computed
// here from that picture alone, so no budget is spent; a picture's
// features are computed when its minibatch is, not kept). Call with
// rt.mu held.
func (rt *Runtime) minibatchLocked(n, cursor int) ([]dataset.Sample, error) {
	if rt.st.Session != nil && rt.st.Session.SinglePass() && cursor+n > len(rt.cfg.Data) {
		// exhaustedLocked stops this first; a minibatch that would wrap
		// around in a single-pass session is refused all the same.
		return nil, fmt.Errorf("single pass: a minibatch of %d from cursor %d would reuse samples (%d held)", n, cursor, len(rt.cfg.Data))
	}
	batch := make([]dataset.Sample, n)
	optim.Minibatch(batch, rt.cfg.Data, cursor)
	if rt.feat != nil {
		for i := range batch {
			x, err := rt.feat.Picture(batch[i].X)
			if err != nil {
				return nil, fmt.Errorf("sample %d from cursor %d: %w", i, cursor, err)
			}
			batch[i].X = x
		}
	}
	return batch, nil
}

// Policy is an owner's rules for joining a session.
type Policy struct {
	// Budget is epsilon at the owner's delta; the zero value is
	// plan.DefaultBudget(). Ignored when Unlimited.
	Budget plan.Budget
	// Spent is what the owner's data already spent elsewhere.
	Spent privacy.Spent
	// Unlimited: no owner budget (explicit; a zero Budget is the default
	// budget, never "no limit").
	Unlimited bool
	// AllowTrusted accepts trusted-server sessions (clipped, un-noised
	// updates); AllowNonPrivate accepts sessions without a guarantee.
	AllowTrusted, AllowNonPrivate bool
}

func (cfg Config) policy() Policy {
	return Policy{Budget: cfg.Budget, Spent: cfg.Spent, Unlimited: cfg.Unlimited,
		AllowTrusted: cfg.AllowTrusted, AllowNonPrivate: cfg.AllowNonPrivate}
}

// budget returns the owner's budget in force (the default for the zero
// value).
func (pol Policy) budget() plan.Budget {
	if pol.Budget == (plan.Budget{}) {
		return plan.DefaultBudget()
	}
	return pol.Budget
}

// rho returns the zCDP rho the policy leaves for one session: the
// owner's budget read at the owner's delta, less Spent (+Inf when
// Unlimited).
func (pol Policy) rho() (float64, error) {
	if pol.Unlimited {
		if pol.Budget != (plan.Budget{}) || pol.Spent != (privacy.Spent{}) {
			return 0, errors.New("an unlimited policy takes no budget and nothing spent")
		}
		return math.Inf(1), nil
	}
	if err := pol.Spent.Validate(); err != nil {
		return 0, fmt.Errorf("spent: %w", err)
	}
	r, err := pol.budget().Rho()
	if err != nil {
		return 0, err
	}
	return r - pol.Spent.Rho, nil
}

// allows returns nil if a session ledger holding s, with Spent, stays
// within the owner's budget: the comparison is plan.Budget.Over, the one
// plan.Check makes before joining.
func (pol Policy) allows(s privacy.Spent) error {
	if pol.Unlimited {
		return nil
	}
	b := pol.budget()
	all, err := pol.Spent.Add(s)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	eps, over, err := b.Over(all)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if over {
		return fmt.Errorf("%w: the ledger would reach zCDP rho %s (with %s spent before), epsilon %s at delta %s, over the budget of %g",
			plan.ErrOverBudget, plan.FormatRho(s.Rho), plan.FormatRho(pol.Spent.Rho), plan.FormatEpsilon(eps), plan.FormatDelta(b.Delta), b.Epsilon)
	}
	return nil
}

// CheckSession applies the owner's policy to a session: it returns an
// error wrapping ErrRefused if the session is not private and
// AllowNonPrivate is false, trusts the server with un-noised updates and
// AllowTrusted is false, or (unless Unlimited) may cost more than what
// is left of the owner's budget (plan.Check: the session's worst case
// plus Spent, at the owner's delta).
func CheckSession(s wire.SessionParams, pol Policy) error {
	if err := algo.Validate(s); err != nil {
		return fmt.Errorf("%w: session parameters: %v", ErrRefused, err)
	}
	if _, err := plan.SessionTask(s); err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if _, err := plan.SessionFeatures(s); err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if !algo.Private(s) {
		if !pol.AllowNonPrivate {
			return fmt.Errorf("%w: algorithm %q gives no privacy guarantee", ErrRefused, s.Algorithm)
		}
		return nil
	}
	if algo.Trusted(s) && !pol.AllowTrusted {
		return fmt.Errorf("%w: algorithm %q sends un-noised updates to a trusted server", ErrRefused, s.Algorithm)
	}
	if pol.Unlimited {
		return nil
	}
	if err := plan.Check(s, pol.budget(), pol.Spent); err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return nil
}

// SessionFigures are a session's privacy figures at the owner's delta
// (0: plan.DefaultDelta), as the page shows them.
func SessionFigures(s wire.SessionParams, ownerDelta float64) (plan.Figures, error) {
	return plan.SessionFigures(s, ownerDelta)
}

func (rt *Runtime) save(ctx context.Context) error {
	if rt.algo != nil {
		b, err := rt.algo.MarshalBinary()
		if err != nil {
			return fmt.Errorf("device: marshal algorithm: %w", err)
		}
		rt.st.Algo = b
	}
	b, err := json.Marshal(rt.st)
	if err != nil {
		return fmt.Errorf("device: marshal state: %w", err)
	}
	if err := rt.cfg.Storage.Save(ctx, b); err != nil {
		return fmt.Errorf("device: %w", err)
	}
	return nil
}

// emit queues event e for Config.OnEvent, with the device id and the
// participations as they are now. Call with rt.mu held, on Run's
// goroutine; unlock delivers it.
func (rt *Runtime) emit(e Event) {
	if rt.cfg.OnEvent == nil {
		return
	}
	e.DeviceID = rt.st.DeviceID
	e.Participations = rt.st.Included
	rt.events = append(rt.events, e)
}

// unlock releases rt.mu and then delivers the events queued under it, in
// order: OnEvent never runs under the runtime's locks, so a callback may
// call back into the runtime (State, Leave). Only Run's goroutine emits
// and unlocks this way, so events arrive in the order they happened.
func (rt *Runtime) unlock() {
	events := rt.events
	rt.events = nil
	rt.mu.Unlock()
	for _, e := range events {
		rt.cfg.OnEvent(e)
	}
}

// Run connects and serves rounds until the session ends (nil), the
// device is refused (an error wrapping ErrRefused) or ctx is done. It
// reconnects with jittered exponential backoff after a lost connection.
func (rt *Runtime) Run(ctx context.Context) error {
	backoff := rt.cfg.MinBackoff
	for {
		if rt.Leaving() != "" {
			return ErrLeft
		}
		rt.mu.Lock()
		ended := rt.st.Ended
		// A device with nothing left to give and no decision to learn
		// does not connect at all.
		var exhausted error
		if rt.st.Pending == 0 {
			exhausted = rt.exhaustedAheadLocked()
		}
		rt.unlock()
		if ended {
			return nil
		}
		if exhausted != nil {
			return exhausted
		}
		err := rt.connection(ctx)
		if err == nil || errors.Is(err, ErrRefused) {
			return err
		}
		if rt.Leaving() != "" {
			return ErrLeft
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rt.mu.Lock()
		rt.emit(Event{Kind: EventError, Err: err})
		rt.unlock()
		d := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-rt.pres.left:
			return ErrLeft
		case <-time.After(d):
		}
		backoff = min(2*backoff, rt.cfg.MaxBackoff)
		if errors.Is(err, errConnected) {
			backoff = rt.cfg.MinBackoff
		}
	}
}

// errConnected marks a connection that got as far as a welcome (resets
// the backoff).
var errConnected = errors.New("connection lost after welcome")

type lostError struct{ err error }

func (e lostError) Error() string { return e.err.Error() }
func (e lostError) Unwrap() []error {
	return []error{e.err, errConnected}
}

// connection serves one connection: it dials, says hello, and handles
// messages until the connection ends. It returns nil when the session
// ended, ErrLeft after Leave, and otherwise why the connection ended (an
// error wrapping ErrRefused ends Run for good).
func (rt *Runtime) connection(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ws, err := rt.dial(ctx)
	if err != nil {
		return err
	}
	// Every way out closes the socket with a normal closure (1000): the
	// browser refuses other codes from a script, and a refused close
	// leaves the socket open.
	defer rt.pres.detach(ws)
	ws.SetReadLimit(int64(wire.MaxControlBytes))
	if err := writeControl(ctx, ws, rt.hello()); err != nil {
		return err
	}
	c := &link{rt: rt, ws: ws}
	// Until the welcome, reads are bounded by DialTimeout from the hello.
	hctx, hcancel := context.WithTimeout(ctx, rt.cfg.DialTimeout)
	defer hcancel()
	for {
		rctx := ctx
		if !c.welcomed {
			rctx = hctx
		}
		typ, b, err := ws.Read(rctx)
		if err != nil {
			if rt.Leaving() != "" {
				return ErrLeft
			}
			if !c.welcomed && hctx.Err() != nil && ctx.Err() == nil {
				return fmt.Errorf("device: no answer to the hello within %v: %w", rt.cfg.DialTimeout, hctx.Err())
			}
			return c.lost(fmt.Errorf("device: read: %w", err))
		}
		if err := c.handle(ctx, typ, b); errors.Is(err, errEnded) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// dial opens a connection through the transport and makes it the current
// one; it returns ErrLeft (and closes it) if the device left meanwhile.
func (rt *Runtime) dial(ctx context.Context) (Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, rt.cfg.DialTimeout)
	ws, err := rt.cfg.Transport.Dial(dctx)
	cancel()
	if err != nil {
		if errors.Is(err, errAnswered) {
			// Final for a device that never reached a coordinator there
			// (a wrong -url or -origin); one that did is tried again (a
			// proxy answering for a while as its coordinator restarts).
			rt.mu.Lock()
			known := rt.st.DeviceID != ""
			rt.unlock()
			if !known {
				return nil, fmt.Errorf("%w: %w", ErrRefused, err)
			}
		}
		return nil, fmt.Errorf("device: dial: %w", err)
	}
	if !rt.pres.attach(ws) {
		closeConn(ws, "device left")
		return nil, ErrLeft
	}
	return ws, nil
}

// hello is the first message of a new connection.
func (rt *Runtime) hello() wire.Hello {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	hello := wire.Hello{Version: wire.Version, JoinCode: rt.cfg.JoinCode, DeviceID: rt.st.DeviceID,
		Secret: rt.st.Secret, Pending: rt.st.Pending, Nickname: rt.cfg.Nickname, KeepsX: true,
		SignKey: base64.StdEncoding.EncodeToString(rt.signKey.Public().(ed25519.PublicKey))}
	if !math.IsInf(rt.budget, 1) {
		hello.Budget = rt.budget
	}
	return hello
}

// onEnd records that the session finished; it returns errEnded once that
// is saved.
func (rt *Runtime) onEnd(ctx context.Context, m wire.End) error {
	rt.mu.Lock()
	rt.st.Ended = true
	err := rt.save(ctx)
	rt.emit(Event{Kind: EventEnd, T: m.Committed})
	rt.unlock()
	if err != nil {
		return err
	}
	return errEnded
}

// refusal is the error of the coordinator's wire.Error: it wraps
// ErrRefused when the coordinator refuses the device for good.
func refusal(m wire.Error) error {
	switch m.Code {
	case wire.CodeAuth, wire.CodeJoinCode, wire.CodeVersion:
		return fmt.Errorf("%w by coordinator: %s: %s", ErrRefused, m.Code, m.Reason)
	case wire.CodeNickname:
		return fmt.Errorf("%w by coordinator: %w: %s", ErrRefused, ErrNicknameTaken, m.Reason)
	case wire.CodeRemoved:
		return fmt.Errorf("%w: %w", ErrRefused, ErrRemoved)
	}
	return fmt.Errorf("device: coordinator closed: %s: %s", m.Code, m.Reason)
}

// roundFrameMax is the largest round frame a device reads: a whole frame
// of its session's dimension, with 64 bytes to spare.
func roundFrameMax(dim int) int { return wire.RoundFrameLen(dim, true) + 64 }

// readLimit is the largest message a device reads once its session is
// known: a round frame or a control message (a decision's reason may be
// longer than a small model's round frame).
func readLimit(s wire.SessionParams) int {
	n := max(roundFrameMax(s.Dim), wire.MaxControlBytes)
	if s.Algorithm == wire.SharedNoiseAlgorithm {
		n = max(n, wire.SecAggFrameMax(s.Cohort))
	}
	return n
}

func writeControl(ctx context.Context, ws Conn, m wire.Message) error {
	b, err := wire.EncodeControl(m)
	if err != nil {
		return err
	}
	if err := ws.Write(ctx, MessageText, b); err != nil {
		return fmt.Errorf("device: write %T: %w", m, err)
	}
	return nil
}

func (rt *Runtime) onWelcome(ctx context.Context, w wire.Welcome) error {
	if !w.Lobby {
		if err := CheckSession(w.Session, rt.cfg.policy()); err != nil {
			return err
		}
	}
	rt.mu.Lock()
	defer rt.unlock()
	if rt.st.DeviceID == "" {
		if w.DeviceID == "" || w.Secret == "" {
			return fmt.Errorf("device: %w: welcome without credentials at first contact", wire.ErrBadFrame)
		}
		rt.st.DeviceID, rt.st.Secret = w.DeviceID, w.Secret
	} else if w.DeviceID != rt.st.DeviceID {
		return fmt.Errorf("device: %w: welcome for another device id", wire.ErrBadFrame)
	}
	if w.Lobby {
		// The session waits for the teacher: its parameters are
		// provisional, so nothing is set up (or checked) until Start.
		if rt.st.Session != nil || rt.st.Pending != 0 || w.Pending != nil {
			return fmt.Errorf("%w: the coordinator put a started session back in its lobby", ErrRefused)
		}
		if err := rt.save(ctx); err != nil {
			return err
		}
		rt.emit(Event{Kind: EventLobby})
		return nil
	}
	if rt.st.Session == nil {
		s := w.Session
		if err := rt.setup(s); err != nil {
			return fmt.Errorf("%w: %v", ErrRefused, err)
		}
		rt.st.Session = &s
	} else if *rt.st.Session != w.Session {
		// The noise state belongs to one session: a changed definition
		// would silently break cancellation or accounting.
		return fmt.Errorf("%w: the coordinator changed the session's parameters", ErrRefused)
	}
	if err := rt.save(ctx); err != nil {
		return err
	}
	rt.emit(Event{Kind: EventConnected})
	if w.Pending != nil {
		return rt.applyLocked(ctx, *w.Pending)
	}
	if rt.st.Pending != 0 {
		return fmt.Errorf("device: %w: welcome did not answer pending round %d", wire.ErrBadFrame, rt.st.Pending)
	}
	return nil
}

// onStart takes the final parameters of a session that left its lobby:
// it checks them against the owner's policy (CheckSession) and sets the
// device half up with them. A refusal wraps ErrRefused (and
// plan.ErrOverBudget when the budget is the reason); the caller leaves.
func (rt *Runtime) onStart(ctx context.Context, s wire.Start) error {
	rt.mu.Lock()
	defer rt.unlock()
	if rt.st.Session != nil {
		if *rt.st.Session == s.Session {
			return nil // already set up with these (a welcome after Start)
		}
		return fmt.Errorf("%w: the coordinator changed the session's parameters", ErrRefused)
	}
	if err := CheckSession(s.Session, rt.cfg.policy()); err != nil {
		return fmt.Errorf("%w: %w", ErrStartRefused, err)
	}
	if err := rt.setup(s.Session); err != nil {
		return fmt.Errorf("%w: %w: %v", ErrStartRefused, ErrRefused, err)
	}
	sess := s.Session
	rt.st.Session = &sess
	if err := rt.save(ctx); err != nil {
		return err
	}
	rt.emit(Event{Kind: EventStarted})
	return nil
}

// leaveDetail says in a few words why the device refused a session (sent
// in Leave.Detail: the reason, not the owner's numbers).
func leaveDetail(err error) string {
	switch {
	case errors.Is(err, plan.ErrOverBudget):
		return wire.LeaveDetailOverBudget
	case errors.Is(err, ErrRefused):
		return wire.LeaveDetailRefused
	}
	return ""
}

func (rt *Runtime) onDecision(ctx context.Context, d wire.Decision) error {
	rt.mu.Lock()
	defer rt.unlock()
	return rt.applyLocked(ctx, d)
}

// applyLocked applies decision d to the pending round, at most once.
func (rt *Runtime) applyLocked(ctx context.Context, d wire.Decision) error {
	if d.T != rt.st.Pending || d.State == wire.Pending {
		return nil // not ours (a decision for a round we never sent) or not yet
	}
	switch d.State {
	case wire.Included:
		if err := rt.algo.Commit(d.T); err != nil {
			return fmt.Errorf("device: commit round %d: %w", d.T, err)
		}
		rt.st.Included++
	case wire.Excluded:
		if err := rt.algo.Abort(d.T); err != nil {
			return fmt.Errorf("device: abort round %d: %w", d.T, err)
		}
		rt.st.Excluded++
	}
	rt.st.Pending = 0
	if err := rt.save(ctx); err != nil {
		return err
	}
	kind := EventIncluded
	if d.State == wire.Excluded {
		kind = EventExcluded
	}
	rt.emit(Event{Kind: kind, T: d.T})
	return nil
}

// prepare computes round r's update on the next batch and saves the state
// with it pending, before anything is sent. A device that cannot answer
// (data used up, budget spent, the device half refuses) leaves instead.
func (rt *Runtime) prepare(ctx context.Context, ws Conn, r wire.RoundFrame) (optim.Update, error) {
	rt.mu.Lock()
	err := rt.exhaustedLocked(r.T)
	if errors.Is(err, errDataComing) {
		err = rt.awaitDataLocked(ctx, r.T, dataWait(rt.cfg.DataWait, r.DeadlineMillis))
	}
	if errors.Is(err, errDataComing) {
		rt.emit(Event{Kind: EventWaiting, T: r.T})
		rt.unlock()
		return optim.Update{}, err
	}
	if err != nil {
		why := exhaustedDetail(err)
		rt.unlock()
		rt.pres.leaveOn(ws, wire.LeaveDone, why)
		return optim.Update{}, err
	}
	single := rt.st.Session.SinglePass()
	batch, err := rt.minibatchLocked(rt.st.Session.Batch, rt.st.Cursor)
	if err != nil {
		rt.unlock()
		rt.pres.leaveOn(ws, wire.LeaveStopped, "")
		return optim.Update{}, fmt.Errorf("%w: %w: round %d: %v", ErrRefused, ErrWrongData, r.T, err)
	}
	up, err := rt.algo.Prepare(optim.Round{T: r.T, X: r.X, XPrev: r.XPrev}, batch)
	if err != nil {
		rt.unlock()
		// The device half refused (its ledger would exceed the session's
		// budget, a round id that is not new): leave rather than answer.
		rt.pres.leaveOn(ws, wire.LeaveStopped, "")
		return optim.Update{}, fmt.Errorf("%w: round %d: %v", ErrRefused, r.T, err)
	}
	// Samples that left in a message are spent, whatever the coordinator
	// decides about the round: the cursor never moves back.
	rt.st.Cursor = optim.NextCursor(rt.st.Cursor, len(batch), len(rt.cfg.Data), single)
	rt.st.Pending = r.T
	// Saved before sending: a crash from here on resumes with pending.
	err = rt.save(ctx)
	rt.unlock()
	return up, err
}

// sendUpdate sends round t's saved update, unless the device left
// meanwhile (ErrLeft; the round stays pending), and reports it sent.
func (rt *Runtime) sendUpdate(ctx context.Context, ws Conn, t int, up optim.Update) error {
	if h := rt.cfg.Hooks; h != nil && h.BeforeSend != nil {
		delay, disconnect := h.BeforeSend(t)
		if delay > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(delay):
			}
		}
		if disconnect {
			return errors.New("device: disconnect before send by test hook")
		}
	}
	if h := rt.cfg.Hooks; h != nil && h.Withhold != nil && h.Withhold(t) {
		return nil
	}
	frame, err := wire.EncodeUpdate(wire.UpdateFrame{T: t, Payload: up.Payload})
	if err != nil {
		return err
	}
	if err := rt.pres.write(ctx, ws, frame, fmt.Sprintf("update %d", t)); err != nil {
		return err
	}
	rt.mu.Lock()
	rt.emit(Event{Kind: EventSent, T: t})
	rt.unlock()
	if h := rt.cfg.Hooks; h != nil && h.AfterSend != nil && h.AfterSend(t) {
		return errors.New("device: disconnect right after send by test hook")
	}
	return nil
}

// exhaustedLocked returns an error wrapping ErrRefused and ErrDataUsedUp
// or ErrBudgetSpent if the device cannot answer another round (t is the
// round asked, 0 when checking ahead), nil otherwise or when no session is
// set up yet. Call with rt.mu held.
func (rt *Runtime) exhaustedLocked(t int) error {
	if rt.algo == nil || rt.st.Session == nil {
		return nil
	}
	at := "next round"
	if t > 0 {
		at = fmt.Sprintf("round %d", t)
	}
	if acc, ok := rt.algo.(optim.Accountant); ok {
		// DESIGN principle 2: the device checks its own ledger; a
		// coordinator cannot make it spend more than its owner allows.
		next, err := acc.NextSpent()
		if err == nil {
			err = rt.cfg.policy().allows(next)
		}
		if err != nil {
			return fmt.Errorf("%w: %w: %s: %v", ErrRefused, ErrBudgetSpent, at, err)
		}
	}
	if rt.st.Session.SinglePass() && rt.st.Cursor+rt.st.Session.Batch > len(rt.cfg.Data) {
		// Each sample is used once (the privacy analysis of the session's
		// algorithm needs it): with the data used up, leave, unless
		// more is on its way.
		if rt.cfg.MoreData != nil && rt.cfg.MoreData() {
			return fmt.Errorf("%w: %s: %d of the %d local samples are used and a round takes %d", errDataComing, at, rt.st.Cursor, len(rt.cfg.Data), rt.st.Session.Batch)
		}
		if rt.st.Cursor == 0 {
			short := &TooFewError{Unit: rt.unitLocked(), Have: len(rt.cfg.Data), Need: rt.st.Session.Batch}
			return fmt.Errorf("%w: %w: %s: %w", ErrRefused, ErrDataUsedUp, at, short)
		}
		return fmt.Errorf("%w: %w: %s: %d of the %d local samples are used and a round takes %d (single pass)",
			ErrRefused, ErrDataUsedUp, at, rt.st.Cursor, len(rt.cfg.Data), rt.st.Session.Batch)
	}
	return nil
}

// TooFewError is wrapped (with ErrDataUsedUp) when a device has fewer
// samples than one round takes, so it can never take part: it says how
// many it has and how many a round needs, for the owner (errors.As).
type TooFewError struct {
	Unit       string // "rows" for a row task, else "samples"
	Have, Need int
}

func (e *TooFewError) Error() string {
	return wire.TooFewWords(e.Unit, e.Have, e.Need)
}

// unitLocked names the device's samples in words: rows for a row task.
func (rt *Runtime) unitLocked() string {
	if rt.cfg.Task != nil {
		return "rows"
	}
	return "samples"
}

// exhaustedDetail says in a few words why a device that cannot answer
// another round leaves (wire.Leave.Detail, shown on the dashboard): too
// few samples for a single round with how many a round needs, data used
// up, or its budget spent; err is exhaustedLocked's.
func exhaustedDetail(err error) string {
	var short *TooFewError
	switch {
	case errors.As(err, &short):
		return short.Error()
	case errors.Is(err, ErrDataUsedUp):
		return wire.LeaveDetailUsedUp
	case errors.Is(err, ErrBudgetSpent):
		return wire.LeaveDetailSpent
	}
	return ""
}

// exhaustedAheadLocked is exhaustedLocked checking ahead of any round:
// samples on their way do not exhaust the device (asked for a round, it
// waits for them in prepare).
func (rt *Runtime) exhaustedAheadLocked() error {
	if err := rt.exhaustedLocked(0); !errors.Is(err, errDataComing) {
		return err
	}
	return nil
}

// errDataComing is returned by exhaustedLocked when a single-pass
// device's samples are used up but more are on their way
// (Config.MoreData): the device stays, and a round it cannot answer
// passes unanswered (prepare, link.round).
var errDataComing = errors.New("device: waiting for more samples")

// maxDataWait caps Config.DataWait well under the coordinator's ping
// timeout (10 s): the connection is not read while a round waits.
const maxDataWait = 5 * time.Second

// dataWait is how long a round with a deadline of deadlineMillis waits
// for samples on their way: wait, and at most half the deadline.
func dataWait(wait time.Duration, deadlineMillis int) time.Duration {
	if deadlineMillis > 0 {
		wait = min(wait, time.Duration(deadlineMillis)*time.Millisecond/2)
	}
	return wait
}

// awaitDataLocked waits, with rt.mu held on entry and on return, up to
// wait for the samples round t needs (InsertData): nil once they are
// there, errDataComing if the wait ended first (the round passes
// unanswered), the exhaustion error if they stopped coming (MoreData
// false: the device leaves as done). Every wake-up checks again: a
// chunk too small for a minibatch leaves it waiting.
func (rt *Runtime) awaitDataLocked(ctx context.Context, t int, wait time.Duration) error {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		if rt.dataAdded == nil {
			rt.dataAdded = make(chan struct{})
		}
		added := rt.dataAdded
		rt.unlock()
		expired := false
		select {
		case <-added:
		case <-ctx.Done():
		case <-timer.C:
			expired = true
		}
		rt.mu.Lock()
		err := rt.exhaustedLocked(t)
		if !errors.Is(err, errDataComing) || expired || ctx.Err() != nil {
			return err
		}
	}
}

// Leave makes the device stop taking part, for reason wire.LeaveDone or
// wire.LeaveStopped (anything else counts as stopped): if a connection is
// open it sends wire.Leave and closes it with a normal closure; Run then
// returns ErrLeft (at once if it is waiting to reconnect). A pending
// update is kept: the device learns its decision on a later Run. Leave
// does not wait for the close handshake, so a page may call it from an
// event handler (pagehide); later calls do nothing.
func (rt *Runtime) Leave(reason string) { rt.pres.leave(reason) }

// Leaving returns the reason the device left, or "" while it takes part.
func (rt *Runtime) Leaving() string { return rt.pres.reason() }
