package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/internal/nctest"
	"browserfl/coordinator/sessions"
	"browserfl/coordinator/view"
	"browserfl/device"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

func hostTemplate(tmpl wire.SessionParams, rounds int) func() (coordinator.Config, error) {
	return func() (coordinator.Config, error) {
		return coordinator.Config{Session: tmpl, Lobby: true, Logger: quietLogger(), Size: lobbySize(rounds),
			NewServer: func(s wire.SessionParams) (optim.Server, error) {
				return nctest.NewServer(s.Dim, s.Cohort, 0.5), nil
			}}, nil
	}
}

// TestHostNewSession: POST /api/teacher/new ends the current session and
// starts a fresh one in the same process (new join code, empty lobby);
// the finished session stays listed with its summary and readable; a
// restart reopens the new session and keeps the teacher secret.
func TestHostNewSession(t *testing.T) {
	dir := t.TempDir()
	tmpl := testSession(8, 30, 10, 200, 10000)
	hcfg := sessions.Config{Dir: dir, Template: hostTemplate(tmpl, 3), JoinCode: "FIRSTCODE", Logger: quietLogger()}
	host, err := sessions.Open(hcfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(host)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	hostCtx, stopHost := context.WithCancel(ctx)
	hostErr := make(chan error, 1)
	go func() { hostErr <- host.Run(hostCtx) }()
	secret := host.TeacherSecret()
	if len(secret) < 32 {
		t.Fatalf("teacher secret of %d hex digits", len(secret))
	}
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	var rts []*device.Runtime
	for i := range 2 {
		rt, _ := lobbyDevice(t, wsURL, "FIRSTCODE", i, tmpl.Dim, device.Policy{Unlimited: true})
		rts = append(rts, rt)
	}
	res := startDevices(ctx, rts)
	first := host.Current()
	waitFor(t, "two devices in the lobby", func() bool { return lobbyCount(first) == 2 })
	ok := map[string]string{"X-Teacher-Secret": secret}
	if code, body := post(t, srv.URL+"/api/teacher/start", ok); code != http.StatusOK {
		t.Fatalf("start: %d %s", code, body)
	}
	<-res.done
	for i, err := range res.errs {
		if err != nil {
			t.Errorf("device %d: %v", i, err)
		}
	}
	waitFor(t, "the first session to end", func() bool { return first.State() == coordinator.StateEnded })

	if code, _ := post(t, srv.URL+"/api/teacher/new", map[string]string{"X-Join-Code": "FIRSTCODE"}); code != http.StatusForbidden {
		t.Errorf("new with the join code only: %d, want 403", code)
	}
	code, body := post(t, srv.URL+"/api/teacher/new", ok)
	if code != http.StatusOK {
		t.Fatalf("new: %d %s", code, body)
	}
	var info sessions.NewSessionInfo
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatal(err)
	}
	if info.JoinCode == "" || info.JoinCode == "FIRSTCODE" || info.ID == "" || info.Ended == "" || host.JoinCode() != info.JoinCode {
		t.Fatalf("new session %+v (host code %q)", info, host.JoinCode())
	}
	second := host.Current()
	if second == first || second.State() != coordinator.StateLobby || len(second.Status().People) != 0 {
		t.Fatalf("the new session is not a fresh lobby: state %q, %d people", second.State(), len(second.Status().People))
	}
	// The new session's status with its code; the old code now reads the
	// finished session.
	var st view.Status
	if err := getJSON(srv.URL+"/api/status?code="+info.JoinCode, &st); err != nil || st.State != coordinator.StateLobby {
		t.Errorf("new status: %+v, %v", st.State, err)
	}
	if err := getJSON(srv.URL+"/api/status?code=FIRSTCODE", &st); err != nil || st.State != coordinator.StateEnded || st.Committed != 3 || len(st.People) != 2 {
		t.Errorf("old status by its code: state %q, committed %d, people %v, %v", st.State, st.Committed, st.People, err)
	}
	if err := getJSON(srv.URL+"/api/status?session="+info.Ended+"&code="+info.JoinCode, &st); err != nil || st.State != coordinator.StateEnded || st.Committed != 3 {
		t.Errorf("old status by id: state %q, committed %d, %v", st.State, st.Committed, err)
	}
	if code, _ := getText(t, srv.URL+"/api/status?session="+info.Ended+"&code=WRONG"); code != http.StatusForbidden {
		t.Errorf("old status with a wrong code: %d, want 403", code)
	}
	// What a finished session does not keep is not answered with the
	// current session's in its place.
	for _, u := range []string{"/api/model.json?session=" + info.Ended, "/api/model.json?session=nosuch", "/api/model.json?code=FIRSTCODE",
		"/api/join-qr.png?session=" + info.Ended} {
		if code, _ := getText(t, srv.URL+u+"&code="+info.JoinCode); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", u, code)
		}
	}
	for _, u := range []string{"/api/rounds?after=abc", "/api/join-qr.png?i=abc"} {
		if code, _ := getText(t, srv.URL+u+"&code="+info.JoinCode); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", u, code)
		}
	}
	checkList := func(url string) {
		t.Helper()
		var list []sessions.Summary
		if err := getJSON(url, &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 {
			t.Fatalf("%d sessions listed, want 2", len(list))
		}
		old, cur := list[0], list[1]
		if old.ID != info.Ended || old.State != coordinator.StateEnded || old.Current || old.Rounds != 3 ||
			old.Participants != 2 || old.Name != "test" || old.Ended == nil {
			t.Errorf("finished session summary %+v", old)
		}
		if cur.ID != info.ID || !cur.Current || cur.State != coordinator.StateLobby || cur.Rounds != 0 {
			t.Errorf("current session summary %+v", cur)
		}
	}
	checkList(srv.URL + "/api/sessions?teacher=" + secret)
	// The list of past sessions is the teacher's: today's join code, which
	// every student has, does not open it, nor does an old session's.
	for _, q := range []string{"code=" + info.JoinCode, "code=FIRSTCODE", "code=nope", "code=" + info.JoinCode + "&teacher=wrong", ""} {
		if code, body := getText(t, srv.URL+"/api/sessions?"+q); code != http.StatusForbidden || strings.Contains(body, info.Ended) {
			t.Errorf("sessions with %q: %d %.100s, want 403", q, code, body)
		}
	}

	// Restart: the index names the new session as current.
	stopHost()
	if err := <-hostErr; err != nil {
		t.Fatal(err)
	}
	host2, err := sessions.Open(sessions.Config{Dir: dir, Template: hostTemplate(tmpl, 3), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer host2.Close()
	if host2.JoinCode() != info.JoinCode || host2.TeacherSecret() != secret || host2.Current().State() != coordinator.StateLobby {
		t.Errorf("after restart: code %q, same secret %v, state %q", host2.JoinCode(), host2.TeacherSecret() == secret, host2.Current().State())
	}
	srv.Config.Handler = host2
	checkList(srv.URL + "/api/sessions?teacher=" + secret)
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &httpError{resp.StatusCode}
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

type httpError struct{ code int }

func (e *httpError) Error() string { return http.StatusText(e.code) }

// TestHostFreshEndsTheCurrent: a host opened afresh (cmd/coordinator
// -reset) over a data directory whose current session never ended (a
// lobby here) records that session as ended, early, with its
// parameters, so that the list of sessions and its archived status agree.
func TestHostFreshEndsTheCurrent(t *testing.T) {
	dir := t.TempDir()
	tmpl := testSession(8, 30, 10, 200, 10000)
	tmpl.Name = "first lesson"
	open := func(fresh bool) *sessions.Host {
		h, err := sessions.Open(sessions.Config{Dir: dir, Template: hostTemplate(tmpl, 3), Logger: quietLogger(), Fresh: fresh})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := open(false)
	before, err := h.Sessions()
	h.Close()
	if err != nil || len(before) != 1 {
		t.Fatalf("before -reset: %+v, %v; want one session", before, err)
	}
	first := before[0].ID
	h = open(true)
	defer h.Close()
	list, err := h.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("%d sessions listed, want the first and the fresh one: %+v", len(list), list)
	}
	old, cur := list[0], list[1]
	if old.ID != first || old.Current || old.State != coordinator.StateEnded || old.Ended == nil || old.Name != tmpl.Name {
		t.Errorf("the session before -reset is listed as %+v; want %s, not current, ended with a time, named %q", old, first, tmpl.Name)
	}
	if !cur.Current || cur.State != coordinator.StateLobby {
		t.Errorf("the fresh session is listed as %+v; want current, in its lobby", cur)
	}
}

// TestHostFreshRefusesAnUsedCode: a fresh session (cmd/coordinator
// -reset -join-code) with the code of an earlier session of the data
// directory is refused, saying so, and the directory keeps its current
// session; with another code it starts, and the old one is kept.
func TestHostFreshRefusesAnUsedCode(t *testing.T) {
	dir := t.TempDir()
	tmpl := testSession(8, 30, 10, 200, 10000)
	open := func(fresh bool, code string) (*sessions.Host, error) {
		return sessions.Open(sessions.Config{Dir: dir, Template: hostTemplate(tmpl, 3), Logger: quietLogger(), Fresh: fresh, JoinCode: code})
	}
	h, err := open(false, "PHYS2345")
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if _, err := open(true, "phys2345"); !errors.Is(err, sessions.ErrJoinCodeUsed) {
		t.Fatalf("-reset with the first session's code: %v, want %v", err, sessions.ErrJoinCodeUsed)
	}
	h, err = open(true, "CHEM2345")
	if err != nil {
		t.Fatalf("-reset with a new code: %v", err)
	}
	defer h.Close()
	list, err := h.Sessions()
	if err != nil || len(list) != 2 || h.JoinCode() != "CHEM2345" {
		t.Fatalf("after -reset with a new code: %+v, %v, code %q; want two sessions, the new one's code current", list, err, h.JoinCode())
	}
}
