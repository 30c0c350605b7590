package sessions

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/shared/plan"
	"browserfl/shared/session"
	"browserfl/shared/wire"
)

// A Host runs the sessions of one data directory in one process: the
// current session (a *Coordinator with its own store) and the finished
// ones, which stay readable. POST /api/teacher/new ends the current
// session and starts a fresh one without a restart.
//
// On disk (Config.Dir):
//
//	host.json                 the index: teacher secret, current session, every session's id and join code
//	sessions/<id>/session.db  one bbolt store per session (Store)
//
// Every session has its own join code (a page keeps its device state per
// join code, so a fresh session never meets an old session's device
// ids), its own device registry and its own server half. The teacher
// secret belongs to the host: the teacher link stays valid across
// sessions.
type Host struct {
	cfg    Config
	log    *slog.Logger
	secret string

	newMu sync.Mutex // serializes NewSession
	mu    sync.Mutex
	index hostIndex
	cur   *hostSession
	// old holds the stores of finished sessions opened for reading, by
	// id.
	old map[string]*store.Store
	// damaged holds the old sessions whose store Open refused as damaged
	// (store.ErrDamaged): not opened again.
	damaged map[string]error
	// runCtx is Run's context (nil before Run): new sessions run under
	// it.
	runCtx context.Context
	// fatal receives the current session's Run error (not a context
	// error); Run returns it.
	fatal chan error
	// choices are the ways of learning a teacher may choose between
	// (Choices); unavailable says why each TeacherAlgorithm left out
	// cannot run here (teacherChoices). Both are set in Open.
	choices     []string
	unavailable map[string]error
	// own is the template's way of learning: asking for it changes
	// nothing a teacher chooses.
	own string
}

// Config configures a Host.
type Config struct {
	// Dir is the data directory (required; created if needed).
	Dir string
	// Template returns the Config of a fresh session: everything but
	// Store, JoinCode, Seed, TeacherSecret and NewSession, which the host
	// fills in. It must not set Server (the host needs a fresh server
	// half for every session): set NewServer (required).
	Template func() (coordinator.Config, error)
	// JoinCode and Seed are the join code and cohort seed (default
	// random) of the session Open starts: the first, or with Fresh a new
	// one (a join code an earlier session had is refused,
	// ErrJoinCodeUsed); later sessions always get random ones.
	JoinCode string
	Seed     uint64
	// JoinCodeLength is the length of a random join code (default 10).
	JoinCodeLength int
	// Fresh starts a new session at open even if the index names a
	// current one (which stays listed as finished).
	Fresh bool
	// Prepare, if set, is called with the current session's store before
	// its coordinator is built (cmd/coordinator: -rollback-to).
	Prepare func(*store.Store) error
	// Assets and Shards are served by every session (api.Handler).
	Assets site.Assets
	Shards *shards.Set
	Logger *slog.Logger
	// Attach, if set, is called for each session's coordinator before its
	// round loop starts, with the loop's context (cmd/coordinator: the
	// cluster shape's sessionnode.Node). An error ends the host's Run.
	Attach func(ctx context.Context, c *coordinator.Coordinator) error
	// CheckSession, if set, is asked about every session a teacher's
	// request makes (NewSessionWith) before the current one ends: an
	// error refuses the request (cmd/coordinator: edge.CheckSession when
	// the sessions' devices reach it through edges, which read frames of
	// a bounded size).
	CheckSession func(wire.SessionParams) error
	// NoTeacherChoice fixes the way of learning: a teacher may not
	// switch the next session to another (cmd/coordinator
	// -teacher-choice=false). Without it a teacher chooses between the
	// plan.TeacherAlgorithms this host's sessions can run (Choices).
	NoTeacherChoice bool
}

type hostIndex struct {
	TeacherSecret string       `json:"teacher_secret"`
	Current       string       `json:"current"`
	Sessions      []indexEntry `json:"sessions"`
}

type indexEntry struct {
	ID       string    `json:"id"`
	JoinCode string    `json:"join_code"`
	Created  time.Time `json:"created"`
}

type hostSession struct {
	id      string
	code    string
	c       *coordinator.Coordinator
	store   *store.Store
	handler http.Handler
	cancel  context.CancelFunc
	done    chan struct{} // closed when its Run returned
}

// sessionIdent is what a session's store keeps of its identity (Store.
// SessionParams): the template, join code and cohort seed.
type sessionIdent struct {
	Session  wire.SessionParams `json:"session"`
	JoinCode string             `json:"join_code"`
	Seed     uint64             `json:"cohort_seed"`
	// TeacherAlgorithm is the way of learning a teacher asked for
	// (NewSessionRequest.Algorithm; empty: the template's): only then
	// does a restart rebuild the session by another algorithm than the
	// template's, so that an operator's own change is still refused.
	TeacherAlgorithm string `json:"teacher_algorithm,omitempty"`
}

const hostIndexFile = "host.json"

// ErrTemplateChanged is wrapped by Open when the current session was
// created from other parameters than the template's.
var ErrTemplateChanged = errors.New("the current session has other parameters")

// ErrJoinCodeUsed is wrapped by Open when a fresh session is asked for
// with a join code an earlier session of the data directory had: the
// pages and devices that joined it keep their state under that code, and
// the new session would refuse them for good.
var ErrJoinCodeUsed = errors.New("an earlier session of this data directory used this join code")

// ErrTeacherChoiceOff is wrapped by a teacher's request for a way of
// learning on a host whose operator fixed it (Config.NoTeacherChoice),
// and by Open when the current session runs a way a teacher chose
// before the operator fixed it.
var ErrTeacherChoiceOff = errors.New("the person who runs this server fixed how the noise is added, so a teacher cannot change it here")

// ErrChoiceUnavailable is wrapped by a teacher's request for a way of
// learning this host's sessions cannot run (not among Choices: behind
// edges, shared noise).
var ErrChoiceUnavailable = errors.New("this way of learning cannot run on this server")

// Open opens (or creates) the data directory and its current session
// (creating one if there is none, or if Fresh). Call Run to drive it.
func Open(cfg Config) (*Host, error) {
	if cfg.Dir == "" || cfg.Template == nil {
		return nil, errors.New("coordinator: host: Dir and Template are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.JoinCodeLength <= 0 {
		cfg.JoinCodeLength = 10
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "sessions"), 0o700); err != nil {
		return nil, fmt.Errorf("coordinator: host: %w", err)
	}
	// The page's assets are hashed and compressed once for every
	// session's handler (site.Assets.Prepared).
	assets, err := cfg.Assets.Prepared()
	if err != nil {
		return nil, fmt.Errorf("coordinator: host: %w", err)
	}
	cfg.Assets = assets
	h := &Host{cfg: cfg, log: cfg.Logger, old: map[string]*store.Store{}, fatal: make(chan error, 1)}
	b, err := os.ReadFile(filepath.Join(cfg.Dir, hostIndexFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("host index: %w", err)
	default:
		if err := json.Unmarshal(b, &h.index); err != nil {
			return nil, fmt.Errorf("host index %s: %w", hostIndexFile, err)
		}
	}
	if h.index.TeacherSecret == "" {
		var r [24]byte // 192 bits
		if _, err := crand.Read(r[:]); err != nil {
			return nil, fmt.Errorf("coordinator: teacher secret: %w", err)
		}
		h.index.TeacherSecret = hex.EncodeToString(r[:])
	}
	h.secret = h.index.TeacherSecret
	h.choices, h.unavailable = h.teacherChoices()
	if prev := h.index.Current; prev == "" || cfg.Fresh {
		err = h.startSession(cfg.JoinCode, cfg.Seed, true, coordinator.NewSessionRequest{})
		if err == nil && prev != "" {
			h.endStored(prev) // once the new one is current: a failed start leaves it as it was
		}
	} else {
		err = h.openSession(h.index.Current, cfg.JoinCode, cfg.Seed)
	}
	if err != nil {
		h.closeStores()
		return nil, err
	}
	return h, nil
}

// teacherChoices returns the ways of learning a teacher may choose
// between: the plan.TeacherAlgorithms a session of the template can run
// (sessionConfig accepts it: plan.WithAlgorithm, its secure aggregation,
// CheckSession), none if fewer than two or the operator fixed the way
// (NoTeacherChoice); and why each TeacherAlgorithm left out cannot run.
func (h *Host) teacherChoices() ([]string, map[string]error) {
	if tmpl, err := h.cfg.Template(); err == nil {
		h.own = tmpl.Session.Algorithm
	}
	if h.cfg.NoTeacherChoice {
		return nil, nil
	}
	var out []string
	why := map[string]error{}
	for _, alg := range plan.TeacherAlgorithms() {
		if _, err := h.sessionConfig(coordinator.NewSessionRequest{Algorithm: alg}); err != nil {
			why[alg] = err
			continue
		}
		out = append(out, alg)
	}
	if len(out) < 2 {
		for _, alg := range plan.TeacherAlgorithms() {
			if why[alg] != nil {
				h.log.Info("a teacher cannot choose how the noise is added", "unavailable", alg, "why", why[alg])
			}
		}
		return nil, why
	}
	return out, why
}

// Choices returns the ways of learning a teacher may switch the next
// session between (POST /api/teacher/new?algorithm=): empty when there
// is no choice (Config.NoTeacherChoice, or fewer than two ways the
// host's sessions can run).
func (h *Host) Choices() []string { return slices.Clone(h.choices) }

// checkChoice refuses a teacher's way of learning alg ("" asks for
// none) that is neither the template's own nor among the host's
// Choices, saying what to do (the error wraps api.ErrBadChoice and
// ErrTeacherChoiceOff, or ErrChoiceUnavailable and why the way cannot
// run). A way that is not a TeacherAlgorithm at all is left to
// plan.WithAlgorithm's refusal (sessionConfig).
func (h *Host) checkChoice(alg string) error {
	switch {
	case alg == "" || alg == h.own || slices.Contains(h.choices, alg):
		return nil
	case h.cfg.NoTeacherChoice:
		return fmt.Errorf("%w: %w (cmd/coordinator -teacher-choice=false): the lesson keeps its way; ask that person to allow the choice if the class needs it", api.ErrBadChoice, ErrTeacherChoiceOff)
	case h.unavailable[alg] != nil:
		return fmt.Errorf("%w (%w)", ErrChoiceUnavailable, h.unavailable[alg])
	}
	return nil
}

// TeacherSecret returns the teacher secret (print it as the teacher
// link; never log it).
func (h *Host) TeacherSecret() string { return h.secret }

// Current returns the current session's coordinator.
func (h *Host) Current() *coordinator.Coordinator {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur.c
}

// JoinCode returns the current session's join code.
func (h *Host) JoinCode() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur.code
}

func (h *Host) saveIndexLocked() error {
	b, err := json.MarshalIndent(h.index, "", "  ")
	if err != nil {
		return fmt.Errorf("host index: %w", err)
	}
	path := filepath.Join(h.cfg.Dir, hostIndexFile)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("host index: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("host index: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("host index: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("host index: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("host index: %w", err)
	}
	return nil
}

func sessionPath(dir, id string) string {
	return filepath.Join(dir, "sessions", id, "session.db")
}

// newSessionID returns a sortable, unguessable-enough session id (it is
// not a secret: ids are listed to anyone with the join code).
func newSessionID() (string, error) {
	var r [3]byte
	if _, err := crand.Read(r[:]); err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(r[:]), nil
}

// startSession creates a session directory and store and makes it
// current (first: at open, before Run).
func (h *Host) startSession(code string, seed uint64, first bool, req coordinator.NewSessionRequest) error {
	id, err := newSessionID()
	if err != nil {
		return err
	}
	for _, e := range h.index.Sessions {
		if gate.JoinCodeEqual(code, e.JoinCode) {
			return fmt.Errorf("new session: join code %s: %w (session %s): the pages and devices that joined it keep their state under it, and a new session would refuse them; give another code, or none for a random one",
				code, ErrJoinCodeUsed, e.ID)
		}
	}
	if err := os.MkdirAll(filepath.Dir(sessionPath(h.cfg.Dir, id)), 0o700); err != nil {
		return fmt.Errorf("coordinator: new session: %w", err)
	}
	if code == "" {
		if code, err = RandomJoinCode(h.cfg.JoinCodeLength); err != nil {
			return err
		}
	}
	for seed == 0 {
		var r [8]byte
		if _, err := crand.Read(r[:]); err != nil {
			return fmt.Errorf("cohort seed: %w", err)
		}
		seed = binary.LittleEndian.Uint64(r[:])
	}
	st, err := store.Open(sessionPath(h.cfg.Dir, id))
	if err != nil {
		return err
	}
	tmpl, err := h.sessionConfig(req)
	if err != nil {
		st.Close()
		return fmt.Errorf("coordinator: new session: %w", err)
	}
	b, err := json.Marshal(sessionIdent{Session: tmpl.Session, JoinCode: code, Seed: seed, TeacherAlgorithm: req.Algorithm})
	if err == nil {
		err = st.PutSessionParams(b)
	}
	if err != nil {
		st.Close()
		return fmt.Errorf("coordinator: new session: %w", err)
	}
	s, err := h.build(id, st, tmpl, code, seed)
	if err != nil {
		st.Close()
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.index.Sessions = append(h.index.Sessions, indexEntry{ID: id, JoinCode: code, Created: time.Now().UTC()})
	prev := h.index.Current
	h.index.Current = id
	if err := h.saveIndexLocked(); err != nil {
		h.index.Current = prev
		h.index.Sessions = h.index.Sessions[:len(h.index.Sessions)-1]
		st.Close()
		return err
	}
	if h.cur != nil {
		h.old[h.cur.id] = h.cur.store
	}
	h.cur = s
	h.log.Info("session created", "id", id, "first", first)
	return nil
}

// openSession reopens the current session of the index.
func (h *Host) openSession(id, code string, seed uint64) error {
	st, err := store.Open(sessionPath(h.cfg.Dir, id))
	if err != nil {
		return err
	}
	raw, err := st.SessionParams()
	if err != nil || raw == nil {
		st.Close()
		return fmt.Errorf("coordinator: session %s has no identity in its store (%v)", id, err)
	}
	var ident sessionIdent
	if err := json.Unmarshal(raw, &ident); err != nil {
		st.Close()
		return fmt.Errorf("coordinator: session %s: %w", id, err)
	}
	tmpl, err := h.cfg.Template()
	if err == nil && ident.Session != tmpl.Session && (ident.Session.Task != "" || ident.TeacherAlgorithm != "") {
		// A teacher's task or way of learning (NewSessionWith):
		// rebuilt from the definition and algorithm the session
		// stored. An algorithm no teacher could have chosen from this
		// template is the operator's change: ErrTemplateChanged below.
		req := coordinator.NewSessionRequest{Algorithm: ident.TeacherAlgorithm}
		if req.Task, err = plan.SessionTask(ident.Session); err == nil {
			var rebuilt coordinator.Config
			if err = h.checkChoice(req.Algorithm); err == nil {
				rebuilt, err = h.sessionConfig(req)
			}
			switch {
			case err == nil:
				tmpl = rebuilt
			case errors.Is(err, plan.ErrAlgorithmChoice):
				err = nil
			case errors.Is(err, ErrTeacherChoiceOff):
				// The operator's restart cannot run the way a teacher
				// chose: say what to do.
				err = fmt.Errorf("coordinator: the current session %s runs %q, the way of learning a teacher chose, and %w: "+
					"start again without -teacher-choice=false to finish it, or with -reset for a new session of these settings (this one stays listed)",
					id, ident.TeacherAlgorithm, ErrTeacherChoiceOff)
			case errors.Is(err, ErrChoiceUnavailable):
				err = fmt.Errorf("coordinator: the current session %s runs %q, the way of learning a teacher chose; %w (%w): "+
					"finish it on the one-process coordinator (without -role session) with this data directory, or start again with -reset for a new session of these settings (this one stays listed)",
					id, ident.TeacherAlgorithm, ErrChoiceUnavailable, h.unavailable[ident.TeacherAlgorithm])
			}
		}
	}
	if err != nil {
		st.Close()
		return err
	}
	switch {
	case ident.Session != tmpl.Session:
		st.Close()
		return fmt.Errorf("restart: %w than these settings (%s): start a new session (cmd/coordinator: -reset keeps it listed) or use another data directory",
			ErrTemplateChanged, strings.Join(session.Differences(ident.Session, tmpl.Session), "; "))
	case code != "" && !gate.JoinCodeEqual(code, ident.JoinCode):
		st.Close()
		return fmt.Errorf("restart: %w: another join code", ErrTemplateChanged)
	case seed != 0 && seed != ident.Seed:
		st.Close()
		return fmt.Errorf("restart: %w: another cohort seed", ErrTemplateChanged)
	}
	if h.cfg.Prepare != nil {
		if err := h.cfg.Prepare(st); err != nil {
			st.Close()
			return err
		}
	}
	s, err := h.build(id, st, tmpl, ident.JoinCode, ident.Seed)
	if err != nil {
		st.Close()
		return err
	}
	h.mu.Lock()
	h.cur = s
	h.mu.Unlock()
	return nil
}

func (h *Host) build(id string, st *store.Store, cfg coordinator.Config, code string, seed uint64) (*hostSession, error) {
	if cfg.Server != nil || cfg.NewServer == nil {
		return nil, errors.New("coordinator: host: the template must set NewServer and not Server")
	}
	cfg.Store, cfg.JoinCode, cfg.Seed, cfg.TeacherSecret = st, code, seed, h.secret
	cfg.TeacherAlgorithms = h.Choices()
	cfg.NewSession = h.newSessionEndpoint
	if cfg.Logger == nil {
		cfg.Logger = h.log
	}
	cfg.Logger = cfg.Logger.With("session_id", id)
	c, err := coordinator.New(cfg)
	if err != nil {
		return nil, err
	}
	shards := h.cfg.Shards
	if !cfg.Session.DemoShards {
		shards = nil // a teacher's task: the host's demo data are another task's
	}
	return &hostSession{id: id, code: code, c: c, store: st, handler: api.Handler(c, h.cfg.Assets, shards),
		done: make(chan struct{})}, nil
}

// sessionConfig returns the template's Config, made what req asks:
// a session of task req.Task when it is not nil (its session from
// plan.WithTask, no demo data and no evaluation: the host's test set is
// another task's; the status says why: coordinator.NoTestRows), run by
// algorithm req.Algorithm when it is not empty (plan.WithAlgorithm).
// A refusal wraps api.ErrBadTask when req has a task, else
// api.ErrBadChoice (plan.WithAlgorithm's always); Config.CheckSession's
// too.
func (h *Host) sessionConfig(req coordinator.NewSessionRequest) (coordinator.Config, error) {
	cfg, err := h.cfg.Template()
	if err != nil || (req.Task == nil && req.Algorithm == "") {
		return cfg, err
	}
	if req.Task != nil {
		if cfg.Session, err = plan.WithTask(cfg.Session, req.Task); err != nil {
			return cfg, fmt.Errorf("%w: %w", api.ErrBadTask, err)
		}
		cfg.Evaluate, cfg.EvalEvery, cfg.EvalSamples, cfg.EvalNote = nil, 0, 0, coordinator.NoTestRows
	}
	// What a session of the teacher's task cannot run is the task's
	// fault; else the way of learning's.
	bad := api.ErrBadChoice
	if req.Task != nil {
		bad = api.ErrBadTask
	}
	if req.Algorithm != "" {
		if cfg.Session, err = plan.WithAlgorithm(cfg.Session, req.Algorithm); err != nil {
			return cfg, fmt.Errorf("%w: %w", api.ErrBadChoice, err)
		}
	}
	if cfg.Session.Algorithm == wire.SharedNoiseAlgorithm {
		// A teacher's task under the template's shared noise too: its
		// secure aggregation is checked before the lobby ends, not at
		// Start.
		if _, err := plan.SessionSecAgg(cfg.Session); err != nil {
			return cfg, fmt.Errorf("%w: %w", bad, err)
		}
	}
	if h.cfg.CheckSession != nil {
		if err := h.cfg.CheckSession(cfg.Session); err != nil {
			return cfg, fmt.Errorf("%w: %w", bad, err)
		}
	}
	return cfg, nil
}

// Run drives the current session, and each new one, until ctx is done
// or a session's round loop fails; it then stops the current session and
// closes every store.
func (h *Host) Run(ctx context.Context) error {
	h.mu.Lock()
	h.launchLocked(ctx, h.cur)
	h.mu.Unlock()
	var result error
	select {
	case <-ctx.Done():
	case result = <-h.fatal:
	}
	h.newMu.Lock() // no new session from now on
	defer h.newMu.Unlock()
	h.mu.Lock()
	cur := h.cur
	h.mu.Unlock()
	cur.cancel()
	select {
	case <-cur.done:
	case <-time.After(10 * time.Second):
		h.log.Warn("round loop did not stop in 10 s")
	}
	cur.c.Shutdown()
	h.closeStores()
	return result
}

// launchLocked starts s's round loop under a context of its own (so that
// a new session can stop it without stopping the host).
func (h *Host) launchLocked(parent context.Context, s *hostSession) {
	ctx, cancel := context.WithCancel(parent)
	s.cancel = cancel
	go func() {
		var err error
		if h.cfg.Attach != nil {
			err = h.cfg.Attach(ctx, s.c)
		}
		if err == nil {
			err = s.c.Run(ctx)
		}
		close(s.done)
		if err != nil && !errors.Is(err, context.Canceled) {
			select {
			case h.fatal <- fmt.Errorf("session %s: %w", s.id, err):
			default:
			}
		}
	}()
	h.runCtx = parent
}

func (h *Host) closeStores() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur != nil {
		h.cur.store.Close()
	}
	for _, st := range h.old {
		st.Close()
	}
}

// NewSessionInfo is the answer of POST /api/teacher/new.
type NewSessionInfo struct {
	ID       string `json:"id"`
	JoinCode string `json:"join_code"`
	// Dashboard is the new session's dashboard path (add the teacher
	// secret to keep the controls).
	Dashboard string `json:"dashboard"`
	// Ended is the id of the session that was ended.
	Ended string `json:"ended"`
}

func (h *Host) newSessionEndpoint(ctx context.Context, req coordinator.NewSessionRequest) (any, error) {
	return h.NewSessionWith(ctx, req)
}

// NewSession ends the current session (if it has not ended), waits for
// its round loop to stop, closes its devices' connections and makes a
// fresh session (new id, join code, store, device registry and server
// half) current. The ended session stays readable (Sessions, and the
// API with ?session=ID or its own join code). Run must be running.
func (h *Host) NewSession(ctx context.Context) (NewSessionInfo, error) {
	return h.NewSessionWith(ctx, coordinator.NewSessionRequest{})
}

// NewSessionWith is NewSession making the fresh session what req asks
// (a teacher's task: plan.WithTask; a way of learning:
// plan.WithAlgorithm; the zero request: the template's own). req is
// checked before the current session is ended: a request that cannot
// make a session leaves it running (the error wraps api.ErrBadTask).
//
// A way of learning alone (no task) that the current lobby already runs
// changes nothing: the lobby goes on, with its code and the students in
// it (the answer names it, Ended empty).
func (h *Host) NewSessionWith(ctx context.Context, req coordinator.NewSessionRequest) (NewSessionInfo, error) {
	if err := h.checkChoice(req.Algorithm); err != nil {
		return NewSessionInfo{}, err
	}
	wayAlone := req.Task == nil && req.Algorithm != ""
	req, err := h.keepTeacherTask(req)
	if err != nil {
		return NewSessionInfo{}, err
	}
	cfg, err := h.sessionConfig(req)
	if err != nil {
		return NewSessionInfo{}, err
	}
	h.newMu.Lock()
	defer h.newMu.Unlock()
	h.mu.Lock()
	old, runCtx := h.cur, h.runCtx
	h.mu.Unlock()
	if runCtx == nil || runCtx.Err() != nil {
		return NewSessionInfo{}, errors.New("coordinator: the host is not running")
	}
	if wayAlone && old.c.State() == coordinator.StateLobby && old.c.Config().Session == cfg.Session {
		h.log.Info("the lobby already runs the way of learning asked for: nothing changed", "algorithm", req.Algorithm)
		return NewSessionInfo{ID: old.id, JoinCode: old.code, Dashboard: "/dashboard?code=" + old.code}, nil
	}
	if err := old.c.End(); err != nil {
		return NewSessionInfo{}, fmt.Errorf("coordinator: end session %s: %w", old.id, err)
	}
	select {
	case <-old.done:
	case <-ctx.Done():
		return NewSessionInfo{}, ctx.Err()
	}
	old.cancel()
	old.c.Shutdown()
	if err := h.startSession("", 0, false, req); err != nil {
		return NewSessionInfo{}, err
	}
	h.mu.Lock()
	cur := h.cur
	h.launchLocked(runCtx, cur)
	h.mu.Unlock()
	return NewSessionInfo{ID: cur.id, JoinCode: cur.code, Dashboard: "/dashboard?code=" + cur.code, Ended: old.id}, nil
}

// keepTeacherTask returns req, made to carry the current session's task
// when req asks for a way of learning alone and the current session runs
// a teacher's task (one the template does not carry): choosing how the
// noise is added in such a lobby keeps the class's task.
func (h *Host) keepTeacherTask(req coordinator.NewSessionRequest) (coordinator.NewSessionRequest, error) {
	if req.Task != nil || req.Algorithm == "" {
		return req, nil
	}
	h.mu.Lock()
	cur := h.cur
	h.mu.Unlock()
	tmpl, err := h.cfg.Template()
	if err != nil || cur == nil {
		return req, err
	}
	s := cur.c.Config().Session
	if s.Task == "" || s.Task == tmpl.Session.Task {
		return req, nil
	}
	if req.Task, err = plan.SessionTask(s); err != nil {
		return req, fmt.Errorf("coordinator: the current session's task: %w", err)
	}
	return req, nil
}

// Summary is one line of GET /api/sessions.
type Summary struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	State   string `json:"state"`
	Current bool   `json:"current"`
	// Rounds is the number of committed rounds, of PlannedRounds.
	Rounds        int `json:"rounds"`
	PlannedRounds int `json:"planned_rounds"`
	// Accuracy is the last evaluated accuracy (absent if never
	// evaluated).
	Accuracy *float64 `json:"accuracy,omitempty"`
	// AccuracySamples is the number of test samples it was measured on.
	AccuracySamples int `json:"accuracy_samples,omitempty"`
	// Participants is the number of devices included in at least one
	// round.
	Participants int        `json:"participants"`
	Created      time.Time  `json:"created"`
	Ended        *time.Time `json:"ended,omitempty"`
}

// Sessions lists every session of the data directory, oldest first.
func (h *Host) Sessions() ([]Summary, error) {
	h.mu.Lock()
	entries := slices.Clone(h.index.Sessions)
	curID := h.cur.id
	cur := h.cur.c
	h.mu.Unlock()
	out := make([]Summary, 0, len(entries))
	for _, e := range entries {
		st, err := h.storeOf(e.ID)
		if err != nil {
			h.log.Warn("session unreadable", "id", e.ID, "err", err)
			out = append(out, Summary{ID: e.ID, State: "unreadable", Created: e.Created})
			continue
		}
		sum, err := summarize(st)
		if err != nil {
			return nil, err
		}
		sum.ID, sum.Created, sum.Current = e.ID, e.Created, e.ID == curID
		if sum.Current {
			sum.State = cur.State()
			sum.Name = cur.Session().Name
			sum.PlannedRounds = cur.Session().Rounds
		}
		out = append(out, sum)
	}
	return out, nil
}

// storeOf returns the store of session id (the current one's, or a
// finished one's opened for reading and kept open).
func (h *Host) storeOf(id string) (*store.Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur.id == id {
		return h.cur.store, nil
	}
	if st := h.old[id]; st != nil {
		return st, nil
	}
	if !slices.ContainsFunc(h.index.Sessions, func(e indexEntry) bool { return e.ID == id }) {
		return nil, fmt.Errorf("no session %q", id)
	}
	if err := h.damaged[id]; err != nil {
		return nil, err
	}
	st, err := store.Open(sessionPath(h.cfg.Dir, id))
	if errors.Is(err, store.ErrDamaged) {
		// Not opened again: bbolt may keep a damaged file locked.
		if h.damaged == nil {
			h.damaged = map[string]error{}
		}
		h.damaged[id] = err
	}
	if err != nil {
		return nil, err
	}
	h.old[id] = st
	return st, nil
}

// endStored records in its store that session id, which no process
// runs, has ended (now, early if it had rounds to go): a new session
// started at open (Config.Fresh) ends the one that was current, as
// NewSession does, once the new one is current. A store that cannot be read or written is left as it is, with a
// warning: starting afresh is also the way past a damaged session.
func (h *Host) endStored(id string) {
	warn := func(err error) { h.log.Warn("the previous session could not be marked ended", "id", id, "err", err) }
	st, err := h.storeOf(id) // kept open for the list, closed with the others
	if err != nil {
		warn(err)
		return
	}
	sum, err := summarize(st)
	if err != nil {
		warn(err)
		return
	}
	life, err := coordinator.ReadLifecycle(st)
	if err != nil || life.State == coordinator.StateEnded {
		if err != nil {
			warn(err)
		}
		return
	}
	if life.State == "" || life.State == coordinator.StateLobby {
		life.Session = sessionOf(st, life.Session)
	}
	life.State, life.Ended = coordinator.StateEnded, time.Now().UTC()
	life.EndedEarly = sum.Rounds < life.Session.Rounds
	if err := coordinator.PutLifecycle(st, life); err != nil {
		warn(err)
		return
	}
	h.log.Info("the previous session is ended and stays listed", "id", id, "rounds", sum.Rounds)
}

// sessionOf returns the session's parameters as stored at its creation
// (those of a lobby, or of a session without one before it ended), or
// def if there are none.
func sessionOf(st *store.Store, def wire.SessionParams) wire.SessionParams {
	if raw, err := st.SessionParams(); err == nil && raw != nil {
		var ident sessionIdent
		if json.Unmarshal(raw, &ident) == nil {
			return ident.Session
		}
	}
	return def
}

// summarize reads a session's summary from its store.
func summarize(st *store.Store) (Summary, error) {
	var s Summary
	life, err := coordinator.ReadLifecycle(st)
	if err != nil {
		return s, err
	}
	sess := life.Session
	if life.State == "" || life.State == coordinator.StateLobby {
		sess = sessionOf(st, sess)
	}
	s.Name, s.PlannedRounds, s.State = sess.Name, sess.Rounds, life.State
	if s.State == "" {
		s.State = coordinator.StateRunning
	}
	if !life.Ended.IsZero() {
		t := life.Ended
		s.Ended = &t
	}
	seen := map[string]bool{}
	after := 0
	for {
		recs, err := st.Rounds(after, 1000)
		if err != nil {
			return s, err
		}
		for _, r := range recs {
			for _, id := range r.Included {
				seen[id] = true
			}
			if r.Evaluated {
				a := r.Accuracy
				s.Accuracy, s.AccuracySamples = &a, r.EvalSamples
			}
			s.Rounds, after = r.T, r.T
		}
		if len(recs) < 1000 {
			break
		}
	}
	s.Participants = len(seen)
	return s, nil
}

// ServeHTTP routes a request: GET /api/sessions lists the sessions; a
// request for a finished session (?session=ID, or the finished session's
// own join code) is answered from its store, read-only; everything else
// goes to the current session's handler.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	cur := h.cur
	h.mu.Unlock()
	if r.URL.Path == "/api/sessions" && r.Method == http.MethodGet {
		h.teacherOnly(cur, func(w http.ResponseWriter, r *http.Request) {
			list, err := h.Sessions()
			if err != nil {
				http.Error(w, "store error", http.StatusInternalServerError)
				return
			}
			site.WriteJSON(w, list)
		}).ServeHTTP(w, r)
		return
	}
	if id := h.archivedTarget(r, cur); id != "" && r.Method == http.MethodGet {
		switch r.URL.Path {
		case "/api/status", "/api/progress", "/api/rounds", "/api/session":
			h.authorized(cur, id, func(w http.ResponseWriter, r *http.Request) { h.serveArchived(w, r, id) }).ServeHTTP(w, r)
			return
		case "/api/model.json", "/api/join-qr.png":
			// Not kept for a finished session, and never the current
			// session's in its place.
			http.Error(w, "that session is not the current one: only its status, progress, rounds and parameters are kept", http.StatusNotFound)
			return
		}
	}
	cur.handler.ServeHTTP(w, r)
}

// archivedTarget returns the id of the finished session r asks for, or
// "" for the current one.
func (h *Host) archivedTarget(r *http.Request, cur *hostSession) string {
	if id := r.URL.Query().Get("session"); id != "" && id != cur.id {
		return id
	}
	code := r.Header.Get("X-Join-Code")
	if code == "" {
		code = r.URL.Query().Get("code")
	}
	if code == "" || gate.JoinCodeEqual(code, cur.code) {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.index.Sessions {
		if e.ID != cur.id && gate.JoinCodeEqual(code, e.JoinCode) {
			return e.ID
		}
	}
	return ""
}

// teacherOnly lets a request through with the teacher secret only
// (checked with the current session's gate and its backoff); anything
// else is answered 403 and counted.
func (h *Host) teacherOnly(cur *hostSession, next http.HandlerFunc) http.Handler {
	return site.SecurityHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if api.RequireTeacher(cur.c, w, r, h.secret) {
			next(w, withTeacher(r))
		}
	}))
}

// authorized lets a request through with the teacher secret, the join
// code of the finished session target ("" for none) or else the current
// session's join code (checked by the current session's gate). A wrong
// teacher secret is refused (api.TeacherAuth) whatever code comes with it.
func (h *Host) authorized(cur *hostSession, target string, next http.HandlerFunc) http.Handler {
	return site.SecurityHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, answered := api.TeacherAuth(cur.c, w, r, h.secret)
		if answered {
			return
		}
		if ok {
			next(w, withTeacher(r))
			return
		}
		code := r.Header.Get("X-Join-Code")
		if code == "" {
			code = r.URL.Query().Get("code")
		}
		h.mu.Lock()
		own := false
		for _, e := range h.index.Sessions {
			if e.ID == target && target != cur.id && code != "" && gate.JoinCodeEqual(code, e.JoinCode) {
				own = true
			}
		}
		h.mu.Unlock()
		if own {
			next(w, r)
			return
		}
		api.WithCode(cur.c, next)(w, r)
	}))
}

func (h *Host) serveArchived(w http.ResponseWriter, r *http.Request, id string) {
	st, err := h.storeOf(id)
	if err != nil {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	api.ServeArchived(w, r, st, teacherChecked(r))
}

// RandomJoinCode returns an n-character join code (5n bits) from
// JoinCodeAlphabet (log2 31 = 4.95 bits a character), drawn from
// crypto/rand: each character from a byte below 248 = 8 x 31 (others are
// drawn again), so every character is equally likely.
func RandomJoinCode(n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n+8)
	for len(out) < n {
		if _, err := crand.Read(buf); err != nil {
			return "", fmt.Errorf("join code: %w", err)
		}
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, JoinCodeAlphabet[int(b)%len(JoinCodeAlphabet)])
			}
		}
	}
	return string(out), nil
}

// JoinCodeAlphabet has 31 characters without look-alikes (no 0/O, no
// 1/I/L), upper case, easy on a phone. Codes are compared normalised
// (wire.NormalizeJoinCode), so a student may type them in lower case.
const JoinCodeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// Close closes the stores of a host whose Run was never called (Run
// closes them itself when it returns).
func (h *Host) Close() { h.closeStores() }

// CurrentStorePath returns the store file of the current session of the
// data directory dir (tools and tests read it after the coordinator
// stopped).
func CurrentStorePath(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, hostIndexFile))
	if err != nil {
		return "", fmt.Errorf("host index: %w", err)
	}
	var idx hostIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		return "", fmt.Errorf("host index: %w", err)
	}
	if idx.Current == "" {
		return "", errors.New("host index: no current session")
	}
	return sessionPath(dir, idx.Current), nil
}

// teacherKey marks a request whose teacher secret Host.authorized has
// checked and found right, so that it is checked (and counted) once.
type teacherKey struct{}

func withTeacher(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), teacherKey{}, true))
}

func teacherChecked(r *http.Request) bool {
	ok, _ := r.Context().Value(teacherKey{}).(bool)
	return ok
}

// LogWarnings is api.LogWarnings for whichever session is the
// host's current one (a new session starts with no warning logged).
func (h *Host) LogWarnings(ctx context.Context, shards *shards.Set, every time.Duration) {
	api.LogPlanWarnings(ctx, func() api.Session { return h.Current() }, shards, every)
}
