package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/coordinator/shards"
	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// scripted is a small coordinator written for these tests. It speaks
// protocol v1 (shared/wire) and runs the real server half
// (optim.NewServer), so pages really train; and it can lie, which the
// real coordinator never does, to show that the page protects itself.
//
// Honest behaviour: a round starts when Cohort devices are connected and
// idle; it waits for all their updates (or the deadline), applies them,
// and only then sends the decisions.
type scripted struct {
	t      testing.TB
	params wire.SessionParams
	code   string
	test   []dataset.Sample // evaluation samples of the global model
	shards []dataset.Set    // demo shards handed out in order
	lie    lies

	mu       sync.Mutex
	server   optim.Server
	model    model.Model
	conns    map[string]*sconn // device id -> live connection
	secrets  map[string]string
	nextShrd int
	round    int // current open round (0 if none)
	updates  map[string][]byte
	results  map[int]map[string]bool // round -> device -> included
	acc      []accPoint
	sent     []sentUpdate // every update received, decoded
	changed  chan struct{}
	start    time.Time
	assigned map[string]int // device -> round assignments sent
}

// lies are the ways the scripted coordinator can misbehave.
type lies struct {
	// ReplayRounds sends every round id twice (a second assignment of
	// the same T after its decision).
	ReplayRounds bool
	// ClaimRhoPaper, if set, is the rho_p announced in the welcome in
	// place of the session's real one (the consent screen saw the real
	// one at /api/session).
	ClaimRhoPaper float64
	// ExtraRounds sends this many round ids beyond T after the session.
	ExtraRounds int
	// ExcludeAndReassign assigns every round this many extra times
	// first, each time deciding "excluded" for every update and assigning
	// the same round id again: each answer costs the device privacy and
	// none of it reaches the model.
	ExcludeAndReassign int
}

type accPoint struct {
	Round    int     `json:"round"`
	Accuracy float64 `json:"accuracy"`
}

type sentUpdate struct {
	Device string
	T      int
	Vec    []float64
}

type sconn struct {
	id string
	ws *websocket.Conn
}

func newScripted(t testing.TB, p wire.SessionParams, code string, shards []dataset.Set, test []dataset.Sample, l lies) *scripted {
	t.Helper()
	m, err := model.New(p.Model, p.Features, p.Classes)
	if err != nil {
		t.Fatal(err)
	}
	op := optim.Params{Algorithm: p.Algorithm, Model: p.Model, Features: p.Features, Classes: p.Classes,
		M: p.M, Cohort: p.Cohort, Rounds: p.Rounds, Batch: p.Batch, Clip: p.Clip, Eta: p.Eta,
		Diameter: p.Diameter, Rho: p.Rho, Epsilon: p.Epsilon, Delta: p.Delta, Compressor: p.Compressor}
	srv, err := optim.NewServer(op, make([]float64, m.Dim()), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &scripted{t: t, params: p, code: code, shards: shards, test: test, lie: l, server: srv, model: m,
		conns: map[string]*sconn{}, secrets: map[string]string{}, results: map[int]map[string]bool{}, assigned: map[string]int{},
		changed: make(chan struct{}, 1)}
}

func (s *scripted) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// handler serves the public API and the websocket.
func (s *scripted) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/session", func(w http.ResponseWriter, r *http.Request) {
		if wire.NormalizeJoinCode(r.URL.Query().Get("code")) != wire.NormalizeJoinCode(s.code) { // as the coordinator compares
			http.Error(w, "unknown join code", http.StatusNotFound)
			return
		}
		json.NewEncoder(w).Encode(s.params)
	})
	mux.HandleFunc("GET /api/demo/{part}", func(w http.ResponseWriter, r *http.Request) {
		// As the coordinator: a cookie keeps the page on its shard (its
		// images, labels and later chunks), ?from=&count= ask a chunk
		// (shards.ParseRange), X-Shard-Samples says the shard's size.
		s.mu.Lock()
		k := -1
		if ck, err := r.Cookie(shards.Cookie); err == nil {
			if i, err := strconv.Atoi(ck.Value); err == nil && i >= 0 && i < len(s.shards) {
				k = i
			}
		}
		if k < 0 {
			k = s.nextShrd % len(s.shards)
			s.nextShrd++
		}
		s.mu.Unlock()
		shard := s.shards[k]
		if shards.Ranged(r.URL.Query()) {
			from, to, err := shards.ParseRange(r.URL.Query(), shard.Len())
			code := http.StatusBadRequest
			if errors.Is(err, shards.ErrRangeEnd) {
				code = http.StatusRequestedRangeNotSatisfiable
			}
			if err != nil {
				http.Error(w, err.Error(), code)
				return
			}
			shard = dataset.Set{Name: shard.Name, Features: shard.Features, Classes: shard.Classes, Samples: shard.Samples[from:to]}
		}
		im, lab, err := shard.EncodeIDX()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		x := im
		if r.PathValue("part") == "labels" {
			x = lab
		}
		var b bytes.Buffer
		dataset.WriteIDX(&b, x)
		http.SetCookie(w, &http.Cookie{Name: shards.Cookie, Value: strconv.Itoa(k), Path: "/api/demo/"})
		w.Header().Set("X-Shard-Samples", strconv.Itoa(s.shards[k].Len()))
		w.Write(b.Bytes())
	})
	mux.HandleFunc("GET /api/progress", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"committed": len(s.acc), "rounds": s.params.Rounds, "accuracy": s.acc})
	})
	mux.HandleFunc("GET /api/model", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b, err := wire.EncodeRound(wire.RoundFrame{T: max(1, len(s.acc)), DeadlineMillis: 1, X: s.server.Model()})
		s.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Write(b)
	})
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) {
		// As strict as the coordinator (withCode): no code or a wrong one
		// is refused, so a page that forgets the code fails here too.
		if wire.NormalizeJoinCode(r.URL.Query().Get("code")) != wire.NormalizeJoinCode(s.code) {
			http.Error(w, "wrong join code", http.StatusForbidden)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"committed": len(s.acc), "finished": false})
	})
	mux.HandleFunc("GET /ws", s.serveWS)
	return mux
}

func (s *scripted) serveWS(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(8 << 20)
	ctx := r.Context()
	typ, b, err := ws.Read(ctx)
	if err != nil || typ != websocket.MessageText {
		return
	}
	m, err := wire.DecodeControl(b)
	hello, ok := m.(wire.Hello)
	if err != nil || !ok || wire.NormalizeJoinCode(hello.JoinCode) != wire.NormalizeJoinCode(s.code) {
		s.send(ctx, ws, wire.Error{Code: wire.CodeJoinCode, Reason: "bad hello"})
		return
	}
	s.mu.Lock()
	id, secret := hello.DeviceID, ""
	if id == "" {
		id, secret = randHex(16), randHex(32)
		s.secrets[id] = secret
	} else if s.secrets[id] != hello.Secret {
		s.mu.Unlock()
		s.send(ctx, ws, wire.Error{Code: wire.CodeAuth, Reason: "unknown device"})
		return
	}
	sess := s.params
	if s.lie.ClaimRhoPaper > 0 {
		sess.Rho = s.lie.ClaimRhoPaper
	}
	wel := wire.Welcome{Version: wire.Version, DeviceID: id, Secret: secret, Session: sess, Committed: len(s.acc)}
	if hello.Pending != 0 {
		wel.Pending = &wire.Decision{T: hello.Pending, State: s.decisionLocked(hello.Pending, id)}
	}
	if old := s.conns[id]; old != nil {
		old.ws.Close(websocket.StatusPolicyViolation, "duplicate")
	}
	c := &sconn{id: id, ws: ws}
	s.conns[id] = c
	s.mu.Unlock()
	if err := s.send(ctx, ws, wel); err != nil {
		return
	}
	s.poke()
	defer func() {
		s.mu.Lock()
		if s.conns[id] == c {
			delete(s.conns, id)
		}
		s.mu.Unlock()
		s.poke()
	}()
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageText {
			m, err := wire.DecodeControl(b)
			if st, ok := m.(wire.Status); err == nil && ok {
				s.mu.Lock()
				d := wire.Decision{T: st.T, State: s.decisionLocked(st.T, id)}
				s.mu.Unlock()
				s.send(ctx, ws, d)
			}
			continue
		}
		u, err := wire.DecodeUpdate(b, wire.Limits{MaxBytes: 8 << 20})
		if err != nil {
			s.t.Errorf("scripted coordinator: bad update from %s: %v", id, err)
			return
		}
		vec := make([]float64, s.params.Dim)
		if err := mechanism.Decode(vec, u.Payload); err != nil {
			s.t.Errorf("scripted coordinator: bad payload from %s: %v", id, err)
			return
		}
		s.mu.Lock()
		s.sent = append(s.sent, sentUpdate{Device: id, T: u.T, Vec: vec})
		if u.T == s.round {
			if _, dup := s.updates[id]; !dup && s.updates != nil {
				s.updates[id] = u.Payload
			}
		}
		s.mu.Unlock()
		s.poke()
	}
}

// decisionLocked answers "was device id's update of round t included?".
func (s *scripted) decisionLocked(t int, id string) string {
	if res, ok := s.results[t]; ok {
		if res[id] {
			return wire.Included
		}
		return wire.Excluded
	}
	if t == s.round {
		return wire.Pending
	}
	return wire.Excluded
}

func (s *scripted) send(ctx context.Context, ws *websocket.Conn, m wire.Message) error {
	b, err := wire.EncodeControl(m)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return ws.Write(ctx, websocket.MessageText, b)
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// run drives rounds until the session's T rounds are done or ctx ends.
// Each round asks the first Cohort connected devices.
func (s *scripted) run(ctx context.Context) error {
	s.start = time.Now()
	for t := 1; t <= s.params.Rounds; t++ {
		cohort, err := s.waitCohort(ctx)
		if err != nil {
			return err
		}
		rf := s.nextRound(t)
		for k := 0; k < s.lie.ExcludeAndReassign; k++ {
			if err := s.playExcluded(ctx, t, rf, cohort); err != nil {
				return err
			}
		}
		if err := s.playRound(ctx, t, rf, cohort); err != nil {
			return err
		}
		if s.lie.ReplayRounds {
			// The same round id again, to the same devices: an honest
			// device must not answer a round it already answered.
			if err := s.playRound(ctx, t, rf, cohort); err != nil {
				return err
			}
		}
	}
	for k := 1; k <= s.lie.ExtraRounds; k++ {
		cohort, err := s.waitCohort(ctx)
		if err != nil {
			return err
		}
		rf := s.nextRound(s.params.Rounds + k)
		if err := s.playRound(ctx, s.params.Rounds+k, rf, cohort); err != nil {
			return err
		}
	}
	s.mu.Lock()
	conns := make([]*sconn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		s.send(ctx, c.ws, wire.End{Committed: s.params.Rounds})
	}
	return nil
}

func (s *scripted) nextRound(t int) wire.RoundFrame {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t > s.params.Rounds { // a lie: the server half has no such round
		m := s.server.Model()
		return wire.RoundFrame{T: t, DeadlineMillis: 2000, X: m, XPrev: m}
	}
	r := s.server.Next()
	if r.T != t {
		s.t.Errorf("scripted coordinator: server round %d, want %d", r.T, t)
	}
	return wire.RoundFrame{T: t, DeadlineMillis: 20000, X: r.X, XPrev: r.XPrev}
}

func (s *scripted) waitCohort(ctx context.Context) ([]*sconn, error) {
	for {
		s.mu.Lock()
		var cohort []*sconn
		for _, c := range s.conns {
			if len(cohort) < s.params.Cohort {
				cohort = append(cohort, c)
			}
		}
		s.mu.Unlock()
		if len(cohort) == s.params.Cohort {
			return cohort, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.changed:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// playRound assigns round t to cohort, collects updates until all came or
// the deadline passed, applies them (the first time only) and decides.
func (s *scripted) playRound(ctx context.Context, t int, rf wire.RoundFrame, cohort []*sconn) error {
	frame, err := wire.EncodeRound(rf)
	if err != nil {
		return err
	}
	s.mu.Lock()
	replay := s.results[t] != nil
	s.round, s.updates = t, map[string][]byte{}
	s.mu.Unlock()
	for _, c := range cohort {
		s.mu.Lock()
		s.assigned[c.id]++
		s.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c.ws.Write(wctx, websocket.MessageBinary, frame)
		cancel()
	}
	deadline := time.After(time.Duration(rf.DeadlineMillis) * time.Millisecond)
	if replay || t > s.params.Rounds {
		deadline = time.After(time.Second) // honest devices stay silent
	}
wait:
	for {
		s.mu.Lock()
		n := len(s.updates)
		s.mu.Unlock()
		if n == len(cohort) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			break wait
		case <-s.changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
	s.mu.Lock()
	if replay {
		if len(s.updates) > 0 {
			s.t.Errorf("round %d replayed: %d device(s) answered it again", t, len(s.updates))
		}
		s.round, s.updates = 0, nil
		s.mu.Unlock()
		return nil
	}
	if t > s.params.Rounds {
		s.round, s.updates = 0, nil
		s.mu.Unlock()
		return nil
	}
	var ups []optim.Update
	res := map[string]bool{}
	for id, p := range s.updates {
		ups = append(ups, optim.Update{T: t, Payload: p})
		res[id] = true
	}
	if err := s.server.Apply(t, ups); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("apply round %d: %w", t, err)
	}
	acc, _ := model.Evaluate(s.model, s.server.Model(), s.test)
	s.acc = append(s.acc, accPoint{Round: t, Accuracy: acc})
	s.t.Logf("round %d: %d/%d updates, accuracy %.3f, %v", t, len(ups), len(cohort), acc, time.Since(s.start).Round(time.Millisecond))
	s.results[t] = res
	s.round, s.updates = 0, nil
	s.mu.Unlock()
	for _, c := range cohort {
		st := wire.Excluded
		if res[c.id] {
			st = wire.Included
		}
		s.send(ctx, c.ws, wire.Decision{T: t, State: st})
	}
	return nil
}

// playExcluded assigns round t, collects for up to a second, and decides
// "excluded" for every answer without applying anything.
func (s *scripted) playExcluded(ctx context.Context, t int, rf wire.RoundFrame, cohort []*sconn) error {
	frame, err := wire.EncodeRound(rf)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.round, s.updates = t, map[string][]byte{}
	s.mu.Unlock()
	for _, c := range cohort {
		s.mu.Lock()
		s.assigned[c.id]++
		s.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c.ws.Write(wctx, websocket.MessageBinary, frame)
		cancel()
	}
	deadline := time.After(time.Second)
wait:
	for {
		s.mu.Lock()
		n := len(s.updates)
		s.mu.Unlock()
		if n == len(cohort) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			break wait
		case <-s.changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.mu.Lock()
	s.round, s.updates = 0, nil
	s.mu.Unlock()
	for _, c := range cohort {
		s.send(ctx, c.ws, wire.Decision{T: t, State: wire.Excluded})
	}
	return nil
}

// asked returns how many round assignments device id was sent.
func (s *scripted) asked(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.assigned[id]
}

func (s *scripted) updatesSeen() []sentUpdate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sentUpdate(nil), s.sent...)
}
