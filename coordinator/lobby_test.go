package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/internal/nctest"
	"browserfl/coordinator/store"
	"browserfl/device"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
)

const teacherSecret = "teacher-secret-for-tests-0123456789abcdef"

// lobbySize is a test Size: the class is the cohort, rounds as given.
func lobbySize(rounds int) func(wire.SessionParams, int) (wire.SessionParams, error) {
	return func(s wire.SessionParams, n int) (wire.SessionParams, error) {
		s.M, s.Cohort, s.Rounds = n, n, rounds
		return s, nil
	}
}

type lobbyHarness struct {
	coord *coordinator.Coordinator
	store *store.Store
	srv   *httptest.Server
}

// newLobby returns a coordinator in its lobby (template tmpl, final
// rounds as given) serving HTTP.
func newLobby(t *testing.T, tmpl wire.SessionParams, rounds int, gates ...gate.Config) *lobbyHarness {
	t.Helper()
	var g gate.Config
	if len(gates) > 0 {
		g = gates[0]
	}
	return newLobbyWith(t, tmpl, rounds, func(cfg *coordinator.Config) { cfg.Gate = g })
}

// newLobbyWith is newLobby with the coordinator's Config changed by opts.
func newLobbyWith(t *testing.T, tmpl wire.SessionParams, rounds int, opts ...func(*coordinator.Config)) *lobbyHarness {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "coord.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := coordinator.Config{
		Session: tmpl, JoinCode: "join-me", Store: st, Lobby: true, Seed: 42, Logger: quietLogger(),
		TeacherSecret: teacherSecret, Size: lobbySize(rounds),
		NewServer: func(s wire.SessionParams) (optim.Server, error) {
			return nctest.NewServer(s.Dim, s.Cohort, 0.5), nil
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &lobbyHarness{coord: c, store: st, srv: newTestServer(t, c)}
}

func (h *lobbyHarness) wsURL() string { return "ws" + strings.TrimPrefix(h.srv.URL, "http") + "/ws" }

// eventLog records each device's events.
type eventLog struct {
	mu     sync.Mutex
	counts map[device.EventKind]int
}

func (l *eventLog) add(e device.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[device.EventKind]int{}
	}
	l.counts[e.Kind]++
}

func (l *eventLog) n(k device.EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[k]
}

// lobbyDevice returns device i with a nickname, its events recorded.
func lobbyDevice(t *testing.T, url, code string, i int, dim int, pol device.Policy) (*device.Runtime, *eventLog) {
	t.Helper()
	fake := nctest.NewDevice(target(i, dim), 1, 0.3, uint64(1000+i))
	cfg := deviceConfig(t, url, i, fake)
	cfg.JoinCode = code
	cfg.Nickname = []string{"Ada", "Grace", "Alan", "Edsger"}[i%4]
	cfg.Unlimited, cfg.Budget, cfg.Spent = pol.Unlimited, pol.Budget, pol.Spent
	log := &eventLog{}
	inner := cfg.OnEvent
	cfg.OnEvent = func(e device.Event) { log.add(e); inner(e) }
	rt, err := device.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt, log
}

// waitFor polls cond until it holds or the test's budget of a minute
// runs out (a liveness bound, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// parkedIn reports whether a goroutine is blocked (on a channel or a
// select) with fn at the top of its stack; fn is a function as a stack
// trace names it, e.g. "browserfl/coordinator/lifecycle.(*Phase).WaitWhile".
func parkedIn(fn string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, rest, _ := strings.Cut(g, "\n")
		if !strings.Contains(head, "[select") && !strings.Contains(head, "[chan receive") {
			continue
		}
		if strings.HasPrefix(rest, fn+"(") {
			return true
		}
	}
	return false
}

// waitParked waits until the round loop (Coordinator.Run) is blocked in
// lifecycle.Phase.WaitWhile (in the lobby, or paused: what names), the one place it waits for a signal (Start,
// Resume or End) no test sends here: from then on no round can start, and
// any round started before has run and is visible. It stops waiting
// early if wrong() is true, so a round loop that does not wait there
// fails at once instead of at the timeout.
func waitParked(t *testing.T, what string, wrong func() bool) {
	t.Helper()
	waitFor(t, "the round loop to wait "+what, func() bool {
		return wrong() || parkedIn("browserfl/coordinator/lifecycle.(*Phase).WaitWhile")
	})
}

func lobbyCount(c *coordinator.Coordinator) int {
	n := 0
	for _, p := range c.Status().People {
		if p.State == "lobby" {
			n++
		}
	}
	return n
}

type runResult struct {
	errs []error
	done chan struct{}
}

func startDevices(ctx context.Context, rts []*device.Runtime) *runResult {
	r := &runResult{errs: make([]error, len(rts)), done: make(chan struct{})}
	var wg sync.WaitGroup
	for i, rt := range rts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.errs[i] = rt.Run(ctx)
		}()
	}
	go func() { wg.Wait(); close(r.done) }()
	return r
}

// TestLobbyHoldsRoundsUntilStart: devices wait in the lobby (listed with
// their nicknames) and no round runs until Start; Start sends the final
// parameters, every device sets up with them and the session runs.
func TestLobbyHoldsRoundsUntilStart(t *testing.T) {
	tmpl := testSession(8, 30, 10, 200, 10000)
	h := newLobby(t, tmpl, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	var rts []*device.Runtime
	var logs []*eventLog
	for i := range 3 {
		rt, l := lobbyDevice(t, h.wsURL(), "join-me", i, tmpl.Dim, device.Policy{Unlimited: true})
		rts, logs = append(rts, rt), append(logs, l)
	}
	res := startDevices(ctx, rts)
	waitFor(t, "three devices in the lobby", func() bool { return lobbyCount(h.coord) == 3 })
	// The coordinator counts a device in the lobby before the device has
	// read the lobby message: wait for each device's own event too.
	waitFor(t, "each device told it is in the lobby", func() bool {
		for _, l := range logs {
			if l.n(device.EventLobby) == 0 {
				return false
			}
		}
		return true
	})
	roundSeen := func() bool {
		st := h.coord.Status()
		return st.State != coordinator.StateLobby || st.Committed != 0 || st.Round != nil
	}
	waitParked(t, "in the lobby", roundSeen)
	st := h.coord.Status()
	if st.State != coordinator.StateLobby || st.Committed != 0 || st.Round != nil {
		t.Fatalf("in the lobby: state %q, committed %d, round %v", st.State, st.Committed, st.Round)
	}
	names := map[string]bool{}
	for i, l := range logs {
		if l.n(device.EventRound) != 0 || l.n(device.EventLobby) == 0 {
			t.Errorf("device %d in the lobby: %d rounds, %d lobby events", i, l.n(device.EventRound), l.n(device.EventLobby))
		}
	}
	for _, p := range st.People {
		names[p.Nickname] = true
	}
	if !names["Ada"] || !names["Grace"] || !names["Alan"] {
		t.Errorf("people %+v: want Ada, Grace and Alan", st.People)
	}
	if err := h.coord.Pause(); !errors.Is(err, coordinator.ErrState) {
		t.Errorf("Pause in the lobby: %v, want ErrState", err)
	}
	if err := h.coord.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.coord.Start(ctx); !errors.Is(err, coordinator.ErrState) {
		t.Errorf("second Start: %v, want ErrState", err)
	}
	<-res.done
	for i, err := range res.errs {
		if err != nil {
			t.Errorf("device %d: %v", i, err)
		}
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	final := h.coord.Session()
	if final.M != 3 || final.Cohort != 3 || final.Rounds != 4 {
		t.Fatalf("final M %d, m %d, T %d; want 3, 3, 4", final.M, final.Cohort, final.Rounds)
	}
	for i, rt := range rts {
		s := rt.State()
		if s.Session == nil || *s.Session != final || !s.Ended || logs[i].n(device.EventStarted) != 1 {
			t.Errorf("device %d: session %v, ended %v, %d started events", i, s.Session, s.Ended, logs[i].n(device.EventStarted))
		}
	}
	if got := h.coord.Committed(); got != 4 {
		t.Errorf("committed %d, want 4", got)
	}
	if st := h.coord.Status(); st.State != coordinator.StateEnded {
		t.Errorf("state %q after the last round", st.State)
	}
	life, err := coordinator.ReadLifecycle(h.store)
	if err != nil || life.State != coordinator.StateEnded || life.EndedEarly || life.Session != final || len(life.People) != 3 {
		t.Errorf("stored lifecycle %+v, %v", life, err)
	}
}

// TestStartOverBudgetDeviceLeaves: at Start a device whose owner's budget
// is below the final parameters' worst case leaves with the reason; the
// others train to the end without waiting for it.
func TestStartOverBudgetDeviceLeaves(t *testing.T) {
	tmpl := testSession(8, 30, 10, 200, 10000)
	h := newLobby(t, tmpl, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	tight := device.Policy{Budget: plan.Budget{Epsilon: 0.05, Delta: plan.DefaultDelta}}
	var rts []*device.Runtime
	for i := range 3 {
		pol := device.Policy{Unlimited: true}
		if i == 2 {
			pol = tight
		}
		rt, _ := lobbyDevice(t, h.wsURL(), "join-me", i, tmpl.Dim, pol)
		rts = append(rts, rt)
	}
	res := startDevices(ctx, rts)
	waitFor(t, "three devices in the lobby", func() bool { return lobbyCount(h.coord) == 3 })
	if err := h.coord.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-res.done
	if err := res.errs[2]; !errors.Is(err, device.ErrRefused) || !errors.Is(err, plan.ErrOverBudget) || !errors.Is(err, device.ErrStartRefused) {
		t.Errorf("over-budget device: %v, want ErrRefused, ErrStartRefused and plan.ErrOverBudget", err)
	}
	for i := range 2 {
		if res.errs[i] != nil {
			t.Errorf("device %d: %v", i, res.errs[i])
		}
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if got := h.coord.Committed(); got != 3 {
		t.Errorf("committed %d, want 3", got)
	}
	if s := rts[2].State(); s.Session != nil || s.Included != 0 {
		t.Errorf("the refusing device set up a session or took part: %+v", s)
	}
	left := 0
	for _, p := range h.coord.Status().People {
		if p.State == "left" {
			left++
			if !strings.Contains(p.Why, "budget") || p.Rounds != 0 {
				t.Errorf("left person %+v: want the budget reason and no rounds", p)
			}
		} else if p.Rounds == 0 {
			t.Errorf("person %+v took part in no round", p)
		}
	}
	if left != 1 {
		t.Errorf("%d people left, want 1", left)
	}
}

// runLobbySession starts n devices in a lobby of a long session and
// starts it.
func runLobbySession(t *testing.T, ctx context.Context, n int, opts ...func(*coordinator.Config)) (*lobbyHarness, []*device.Runtime, *runResult, chan error) {
	t.Helper()
	tmpl := testSession(8, 30, 10, 200, 10000)
	h := newLobbyWith(t, tmpl, 100000, opts...)
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	var rts []*device.Runtime
	for i := range n {
		rt, _ := lobbyDevice(t, h.wsURL(), "join-me", i, tmpl.Dim, device.Policy{Unlimited: true})
		rts = append(rts, rt)
	}
	res := startDevices(ctx, rts)
	waitFor(t, "devices in the lobby", func() bool { return lobbyCount(h.coord) == n })
	if err := h.coord.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return h, rts, res, runErr
}

// TestPauseResume: Pause lets the open round finish and starts no other
// until Resume.
func TestPauseResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h, _, res, runErr := runLobbySession(t, ctx, 2)
	waitFor(t, "two committed rounds", func() bool { return h.coord.Committed() >= 2 })
	if err := h.coord.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := h.coord.Pause(); !errors.Is(err, coordinator.ErrState) {
		t.Errorf("second Pause: %v", err)
	}
	waitFor(t, "the open round to finish", func() bool { return h.coord.Status().Round == nil })
	k := h.coord.Committed()
	waitParked(t, "while paused", func() bool {
		st := h.coord.Status()
		return st.Committed != k || st.Round != nil
	})
	if st := h.coord.Status(); st.Committed != k || st.Round != nil || st.State != coordinator.StatePaused {
		t.Fatalf("paused at %d: now committed %d, round %v, state %q", k, st.Committed, st.Round, st.State)
	}
	if err := h.coord.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "rounds after Resume", func() bool { return h.coord.Committed() >= k+2 })
	if err := h.coord.End(); err != nil {
		t.Fatal(err)
	}
	<-res.done
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
}

// TestEndEvaluatesTheLastRound: a session the teacher ends between
// rounds states its final model's accuracy: End evaluates the last
// committed round's model when that round was not due (every 1000 rounds
// here; rounds 1 to 3 and 5 always are), and the status and the store
// give it.
func TestEndEvaluatesTheLastRound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h, _, res, runErr := runLobbySession(t, ctx, 2, func(cfg *coordinator.Config) {
		cfg.EvalEvery, cfg.EvalSamples = 1000, 1
		cfg.Evaluate = func([]float64) (float64, float64, error) { return 0.5, 1, nil }
	})
	waitFor(t, "six committed rounds", func() bool { return h.coord.Committed() >= 6 })
	if err := h.coord.Pause(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the open round to finish", func() bool { return h.coord.Status().Round == nil })
	k := h.coord.Committed()
	if rec, ok, err := h.store.Round(k); err != nil || !ok || rec.Evaluated {
		t.Fatalf("round %d before End: evaluated %v (%v, %v), want a round not due", k, rec.Evaluated, ok, err)
	}
	if err := h.coord.End(); err != nil {
		t.Fatal(err)
	}
	<-res.done
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if rec, ok, err := h.store.Round(k); err != nil || !ok || !rec.Evaluated || rec.Accuracy != 0.5 {
		t.Errorf("round %d after End: %+v (%v, %v), want its evaluation", k, rec, ok, err)
	}
	if st := h.coord.Status(); st.LastEval == nil || st.LastEval.T != k || st.Committed != k {
		t.Errorf("status after End: committed %d, last evaluation %+v; want round %d's", st.Committed, st.LastEval, k)
	}
}

// TestEndEarly: End finishes a running session early: the store says so,
// every device gets End, and the round loop returns.
func TestEndEarly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h, rts, res, runErr := runLobbySession(t, ctx, 3)
	waitFor(t, "a committed round", func() bool { return h.coord.Committed() >= 1 })
	if err := h.coord.End(); err != nil {
		t.Fatal(err)
	}
	<-res.done
	for i, err := range res.errs {
		if err != nil {
			t.Errorf("device %d: %v", i, err)
		}
		if !rts[i].State().Ended {
			t.Errorf("device %d did not get End", i)
		}
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	st := h.coord.Status()
	if st.State != coordinator.StateEnded || !st.Finished {
		t.Errorf("state %q, finished %v", st.State, st.Finished)
	}
	life, err := coordinator.ReadLifecycle(h.store)
	if err != nil || life.State != coordinator.StateEnded || !life.EndedEarly || life.Ended.IsZero() {
		t.Errorf("stored lifecycle %+v, %v", life, err)
	}
	committed, _, _ := h.store.State()
	if committed != h.coord.Committed() || committed >= 100000 {
		t.Errorf("store committed %d, coordinator %d", committed, h.coord.Committed())
	}
	if err := h.coord.End(); err != nil {
		t.Errorf("second End: %v", err)
	}
	if err := h.coord.Resume(); !errors.Is(err, coordinator.ErrState) {
		t.Errorf("Resume after End: %v", err)
	}
}

func post(t *testing.T, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestTeacherEndpoints: without the secret, or with a wrong one, every
// teacher endpoint answers 403 (and counts a rejection); with it they act;
// the join code alone gives a read-only status (teacher: false). (The
// backoff after wrong secrets is TestTeacherSecretBackoff's; here it is
// set to allow the 15 wrong ones.)
func TestTeacherEndpoints(t *testing.T) {
	tmpl := testSession(8, 30, 10, 200, 10000)
	h := newLobby(t, tmpl, 100000, gate.Config{JoinFreeFailures: 100})
	base := h.srv.URL
	refused := 0
	for _, action := range []string{"start", "pause", "resume", "end", "new"} {
		for _, hdr := range []map[string]string{nil, {"X-Teacher-Secret": "wrong"}, {"X-Join-Code": "join-me"},
			{"X-Teacher-Secret": teacherSecret[:len(teacherSecret)-1]}} {
			if code, _ := post(t, base+"/api/teacher/"+action, hdr); code != http.StatusForbidden {
				t.Errorf("%s with %v: %d, want 403", action, hdr, code)
			}
			refused++
		}
		if code, _ := post(t, base+"/api/teacher/"+action+"?code=join-me&teacher=nope", nil); code != http.StatusForbidden {
			t.Errorf("%s with a wrong teacher query: %d, want 403", action, code)
		}
		refused++
	}
	_, metrics := getText(t, base+"/metrics")
	if want := `browserfl_rejections_total{kind="teacher_secret"} ` + itoa(refused); !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %q", want)
	}
	if h.coord.State() != coordinator.StateLobby {
		t.Fatalf("a refused call changed the state to %q", h.coord.State())
	}
	if _, body := getText(t, base+"/api/status?code=join-me"); !strings.Contains(body, `"teacher":false`) || !strings.Contains(body, `"state":"lobby"`) {
		t.Errorf("read-only status: %.200s", body)
	}
	if _, body := getText(t, base+"/api/status?code=join-me&teacher="+teacherSecret); !strings.Contains(body, `"teacher":true`) {
		t.Errorf("teacher status: %.200s", body)
	}
	ok := map[string]string{"X-Teacher-Secret": teacherSecret}
	// Nobody in the lobby: Start is refused with a reason (409).
	if code, body := post(t, base+"/api/teacher/start", ok); code != http.StatusConflict || !strings.Contains(body, "lobby") {
		t.Errorf("start of an empty lobby: %d %q", code, body)
	}
	if code, _ := post(t, base+"/api/teacher/pause", ok); code != http.StatusConflict {
		t.Errorf("pause in the lobby: %d, want 409", code)
	}
	if code, _ := post(t, base+"/api/teacher/new", ok); code != http.StatusConflict {
		t.Errorf("new without a host: %d, want 409", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	rt, _ := lobbyDevice(t, h.wsURL(), "join-me", 0, tmpl.Dim, device.Policy{Unlimited: true})
	res := startDevices(ctx, []*device.Runtime{rt})
	waitFor(t, "a device in the lobby", func() bool { return lobbyCount(h.coord) == 1 })
	for _, action := range []string{"start", "pause", "resume"} {
		code, body := post(t, base+"/api/teacher/"+action+"?teacher="+teacherSecret, nil)
		if code != http.StatusOK || !strings.Contains(body, `"teacher":true`) {
			t.Errorf("%s: %d %.200s", action, code, body)
		}
	}
	if code, body := post(t, base+"/api/teacher/end", ok); code != http.StatusOK || !strings.Contains(body, `"state":"ended"`) {
		t.Errorf("end: %d %.200s", code, body)
	}
	<-res.done
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
}

// TestTeacherSecretBackoff: wrong teacher secrets from one address get
// the join codes' backoff: a few are checked, then every attempt from
// that address carrying a secret, the right one included, is refused
// unchecked (429 with Retry-After) on the teacher endpoints and the
// status, and counted. The pause is per address (the teacher elsewhere
// is not held up), requests without a secret are not touched (the
// students' read-only dashboard), and a right join code, which every
// student has, does not clear it.
func TestTeacherSecretBackoff(t *testing.T) {
	proxies, err := gate.ParseTrustedProxies("127.0.0.1/32,::1/128")
	if err != nil {
		t.Fatal(err)
	}
	h := newLobby(t, testSession(8, 30, 10, 200, 10000), 100000, gate.Config{JoinFreeFailures: 3,
		JoinBackoff: time.Minute, JoinBackoffMax: time.Minute, TrustedProxies: proxies})
	base := h.srv.URL
	do := func(method, path, from, secret string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		req.Header.Set("X-Forwarded-For", from)
		if secret != "" {
			req.Header.Set(api.TeacherHeader, secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	const guesser, teacher = "203.0.113.66", "198.51.100.1"
	for i := range 4 {
		method, path := "POST", "/api/teacher/pause"
		if i%2 == 1 {
			method, path = "GET", "/api/status?code=join-me"
		}
		if code, _, body := do(method, path, guesser, fmt.Sprintf("guess-%d", i)); code != http.StatusForbidden || !strings.Contains(body, "wrong teacher secret") {
			t.Fatalf("wrong secret %d on %s: %d %q, want 403", i, path, code, body)
		}
	}
	// The pause: the right secret from the guesser's address is refused unchecked.
	for _, tc := range []struct{ method, path string }{{"POST", "/api/teacher/pause"}, {"GET", "/api/status?code=join-me"}} {
		code, hdr, _ := do(tc.method, tc.path, guesser, teacherSecret)
		if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
			t.Errorf("%s %s with the right secret during the pause: %d (Retry-After %q), want 429", tc.method, tc.path, code, hdr.Get("Retry-After"))
		}
	}
	// A right join code from that address does not clear the teacher record.
	if code, _, body := do("GET", "/api/status?code=join-me", guesser, ""); code != http.StatusOK || !strings.Contains(body, `"teacher":false`) {
		t.Errorf("read-only status from the guesser's address: %d %.100s", code, body)
	}
	if code, _, _ := do("GET", "/api/status?code=join-me", guesser, teacherSecret); code != http.StatusTooManyRequests {
		t.Errorf("right secret after a right join code, still in the pause: %d, want 429", code)
	}
	// The teacher at another address is not held up.
	if code, _, body := do("GET", "/api/status?code=join-me", teacher, teacherSecret); code != http.StatusOK || !strings.Contains(body, `"teacher":true`) {
		t.Errorf("teacher's status from another address: %d %.100s", code, body)
	}
	_, metrics := getText(t, base+"/metrics")
	for _, want := range []string{`browserfl_rejections_total{kind="teacher_secret"} 4`, `browserfl_rejections_total{kind="teacher_throttled"} 3`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if h.coord.State() != coordinator.StateLobby {
		t.Errorf("state %q after refused calls", h.coord.State())
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestJoinAfterStart: a device that connects after Start gets the final
// parameters in its welcome (no lobby) and takes part.
func TestJoinAfterStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h, _, res, runErr := runLobbySession(t, ctx, 2)
	final := h.coord.Session()
	late, log := lobbyDevice(t, h.wsURL(), "join-me", 3, final.Dim, device.Policy{Unlimited: true})
	lateRes := startDevices(ctx, []*device.Runtime{late})
	waitFor(t, "the late device to be included", func() bool { return late.State().Included >= 1 })
	if err := h.coord.End(); err != nil {
		t.Fatal(err)
	}
	<-res.done
	<-lateRes.done
	if err := lateRes.errs[0]; err != nil {
		t.Errorf("late device: %v", err)
	}
	if s := late.State(); s.Session == nil || *s.Session != final || log.n(device.EventLobby) != 0 || log.n(device.EventStarted) != 0 {
		t.Errorf("late device: session %v (final %v), %d lobby and %d started events", s.Session, final, log.n(device.EventLobby), log.n(device.EventStarted))
	}
	if final.M != 2 {
		t.Errorf("final M %d: the late device must not change the sizing", final.M)
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
}
