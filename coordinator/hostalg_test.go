package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/edge"
	"browserfl/coordinator/sessions"
	"browserfl/coordinator/view"
	"browserfl/shared/wire"
)

// TestHostTeacherAlgorithm: a teacher switches the next session between
// the two ways in which every page adds noise (?algorithm=shared, then
// back), and nothing else about the session changes; a way the operator
// did not offer (the trusted server, a non-private reference, an
// unknown or overlong name) is refused with 400, counted, and leaves the
// current session running; a restart reopens the teacher's choice, while
// a template whose own way changed is the operator's change
// (ErrTemplateChanged). A host whose sessions cannot run shared noise
// (Config.CheckSession refuses it) refuses it before ending anything.
func TestHostTeacherAlgorithm(t *testing.T) {
	dir := t.TempDir()
	tmpl := testSession(8, 30, 10, 200, 10000)
	host, srv, stop := runningHost(t, dir, tmpl)
	secret := host.TeacherSecret()
	for _, alg := range []string{"trusted", "sgd", "nope", strings.Repeat("s", 40)} {
		if code, body := postBody(t, srv.URL+"/api/teacher/new?algorithm="+alg, secret, ""); code != http.StatusBadRequest {
			t.Errorf("new with algorithm %.12q: %d %q, want 400", alg, code, body)
		}
	}
	if host.JoinCode() != "FIRSTCODE" || host.Current().State() != coordinator.StateLobby {
		t.Fatalf("a refused way of learning changed the session: code %q, state %q", host.JoinCode(), host.Current().State())
	}
	if code, body := getText(t, srv.URL+"/metrics"); code != http.StatusOK || !strings.Contains(body, `browserfl_rejections_total{kind="task"} 4`) {
		t.Errorf("metrics (%d) do not count 4 refused requests", code)
	}
	session := func(body string) wire.SessionParams {
		t.Helper()
		var info sessions.NewSessionInfo
		if err := json.Unmarshal([]byte(body), &info); err != nil {
			t.Fatal(err)
		}
		var sess wire.SessionParams
		if err := getJSON(srv.URL+"/api/session?code="+info.JoinCode, &sess); err != nil {
			t.Fatal(err)
		}
		return sess
	}
	first := host.Current().Status().Session
	code, body := postBody(t, srv.URL+"/api/teacher/new?algorithm=shared", secret, "")
	if code != http.StatusOK {
		t.Fatalf("new with shared noise: %d %s", code, body)
	}
	want := first
	want.Algorithm = wire.SharedNoiseAlgorithm
	if got := session(body); got.Algorithm != wire.SharedNoiseAlgorithm || got != want {
		t.Errorf("the shared-noise session: %+v; want %+v", got, want)
	}
	if code, body = postBody(t, srv.URL+"/api/teacher/new?algorithm=shared", secret, teacherTaskJSON); code != http.StatusOK {
		t.Fatalf("new with a task and shared noise: %d %s", code, body)
	}
	taskShared := session(body)
	if taskShared.Algorithm != wire.SharedNoiseAlgorithm || taskShared.Task == "" {
		t.Errorf("a task with shared noise: algorithm %q, task kept %v", taskShared.Algorithm, taskShared.Task != "")
	}
	// In the lobby of the teacher's task, the way alone is chosen (the
	// dashboard's form sends no task): the task stays, both ways.
	for _, alg := range []string{"nc", wire.SharedNoiseAlgorithm} {
		code, body := postBody(t, srv.URL+"/api/teacher/new?algorithm="+alg, secret, "")
		if code != http.StatusOK {
			t.Fatalf("new with %s in the task's lobby: %d %s", alg, code, body)
		}
		want := taskShared
		want.Algorithm = alg
		if got := session(body); got != want {
			t.Errorf("the way %s chosen in the task's lobby: task kept %v, session %+v; want %+v", alg, got.Task != "", got, want)
		}
	}
	// The way it already runs: nothing changes, the lobby stays.
	before := host.JoinCode()
	if code, body := postBody(t, srv.URL+"/api/teacher/new?algorithm=shared", secret, ""); code != http.StatusOK || host.JoinCode() != before {
		t.Errorf("the current way in the task's lobby: %d %s, code %q, want the lobby %q kept", code, body, host.JoinCode(), before)
	}
	joined := host.JoinCode()
	stop()
	host2, err := sessions.Open(sessions.Config{Dir: dir, Template: hostTemplate(tmpl, 3), Logger: quietLogger()})
	if err != nil {
		t.Fatalf("reopen the teacher's shared-noise session: %v", err)
	}
	if s := host2.Current().Status().Session; host2.JoinCode() != joined || s.Algorithm != wire.SharedNoiseAlgorithm || s.Task == "" {
		t.Errorf("after restart: code %q (want %q), algorithm %q, task kept %v", host2.JoinCode(), joined, s.Algorithm, s.Task != "")
	}
	host2.Close()
	// The operator now trusts the server: the stored session is not one a
	// teacher could have chosen from that template.
	trusted := tmpl
	trusted.Algorithm = "trusted"
	if _, err := sessions.Open(sessions.Config{Dir: dir, Template: hostTemplate(trusted, 3), Logger: quietLogger()}); !errors.Is(err, sessions.ErrTemplateChanged) ||
		!strings.Contains(err.Error(), `, now "trusted"`) {
		t.Errorf("reopen under a trusted template: %v; want %v, saying which setting differs", err, sessions.ErrTemplateChanged)
	}

	// The teacher's way alone, without a task of theirs, is reopened too.
	dir2 := t.TempDir()
	host3, srv3, stop3 := runningHost(t, dir2, tmpl)
	if code, body := postBody(t, srv3.URL+"/api/teacher/new?algorithm=shared", host3.TeacherSecret(), ""); code != http.StatusOK {
		t.Fatalf("new with shared noise: %d %s", code, body)
	}
	joined = host3.JoinCode()
	stop3()
	host4, err := sessions.Open(sessions.Config{Dir: dir2, Template: hostTemplate(tmpl, 3), Logger: quietLogger()})
	if err != nil {
		t.Fatalf("reopen the teacher's shared-noise session (no task): %v", err)
	}
	if s := host4.Current().Status().Session; host4.JoinCode() != joined || s.Algorithm != wire.SharedNoiseAlgorithm {
		t.Errorf("after restart (no task): code %q (want %q), algorithm %q", host4.JoinCode(), joined, s.Algorithm)
	}
	host4.Close()

	// The operator's own change between the two ways (no teacher asked)
	// is refused at restart, as any other change of the template.
	dir3 := t.TempDir()
	_, _, stop5 := runningHost(t, dir3, tmpl)
	stop5()
	sharedTmpl := tmpl
	sharedTmpl.Algorithm = wire.SharedNoiseAlgorithm
	if _, err := sessions.Open(sessions.Config{Dir: dir3, Template: hostTemplate(sharedTmpl, 3), Logger: quietLogger()}); !errors.Is(err, sessions.ErrTemplateChanged) {
		t.Errorf("reopen an nc session under the operator's shared template: %v; want %v", err, sessions.ErrTemplateChanged)
	}

	// A host that cannot run shared noise: refused, the lobby stays.
	edges, err := sessions.Open(sessions.Config{Dir: t.TempDir(), Template: hostTemplate(tmpl, 3), JoinCode: "EDGECODE",
		Logger: quietLogger(), CheckSession: refuseShared})
	if err != nil {
		t.Fatal(err)
	}
	esrv := httptest.NewServer(edges)
	defer esrv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	runErr := make(chan error, 1)
	go func() { runErr <- edges.Run(ctx) }()
	if code, body := postBody(t, esrv.URL+"/api/teacher/new?algorithm=shared", edges.TeacherSecret(), ""); code != http.StatusBadRequest || !strings.Contains(body, errNoShared.Error()) {
		t.Errorf("shared noise where it cannot run: %d %q, want 400 saying why", code, body)
	}
	if edges.JoinCode() != "EDGECODE" || edges.Current().State() != coordinator.StateLobby {
		t.Errorf("a refused request changed the session: code %q, state %q", edges.JoinCode(), edges.Current().State())
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Error(err)
	}
	edges.Close()
}

// teacherChoice returns the teacher_choice of the teacher's status of
// the session of code (nil: none), and checks that the status without
// the teacher secret has none.
func teacherChoice(t *testing.T, base, code, secret string) *view.TeacherChoice {
	t.Helper()
	var public view.Status
	if err := getJSON(base+"/api/status?code="+code, &public); err != nil {
		t.Fatal(err)
	}
	if public.TeacherChoice != nil {
		t.Errorf("the status without the teacher secret carries the teacher's choice %+v", public.TeacherChoice)
	}
	return teacherStatus(t, base, code, secret).TeacherChoice
}

// TestHostTeacherChoice: the teacher's status serves the choice of how
// the noise is added (plan.TeacherAlgorithms and the current one), the
// one list the dashboard reads; asking for the way the lobby already
// runs changes nothing (same code, the students stay); an operator who
// fixed the way (NoTeacherChoice, cmd/coordinator -teacher-choice=false)
// serves no choice and every other way is refused with 400 saying so,
// the lobby kept; behind edges (edge.CheckSession) both ways run and the
// choice is offered; a host that cannot run shared noise (CheckSession
// refuses it) offers no choice and refuses it saying why; a restart that
// can no longer run the teacher's shared-noise session, where it cannot
// run or with the choice fixed, says what to do.
func TestHostTeacherChoice(t *testing.T) {
	tmpl := testSession(8, 30, 10, 200, 10000)
	both := []string{"nc", wire.SharedNoiseAlgorithm}

	// The choice offered, the current one moving with the teacher's.
	dir := t.TempDir()
	host, srv, stop := runningHost(t, dir, tmpl)
	secret := host.TeacherSecret()
	if c := teacherChoice(t, srv.URL, "FIRSTCODE", secret); c == nil || !slices.Equal(c.Algorithms, both) || c.Current != "nc" {
		t.Fatalf("the teacher's choice %+v; want %v, current nc", c, both)
	}
	code, body := postBody(t, srv.URL+"/api/teacher/new?algorithm=nc", secret, "")
	var info sessions.NewSessionInfo
	if code != http.StatusOK || json.Unmarshal([]byte(body), &info) != nil || info.JoinCode != "FIRSTCODE" || info.Ended != "" {
		t.Errorf("choosing the lobby's own way: %d %s; want the same lobby, nothing ended", code, body)
	}
	if host.JoinCode() != "FIRSTCODE" || host.Current().State() != coordinator.StateLobby {
		t.Errorf("choosing the lobby's own way changed the session: code %q, state %q", host.JoinCode(), host.Current().State())
	}
	if code, body = postBody(t, srv.URL+"/api/teacher/new?algorithm=shared", secret, ""); code != http.StatusOK {
		t.Fatalf("new with shared noise: %d %s", code, body)
	}
	shared := host.JoinCode()
	if c := teacherChoice(t, srv.URL, shared, secret); c == nil || c.Current != wire.SharedNoiseAlgorithm {
		t.Errorf("the teacher's choice in the shared lobby %+v; want current %q", c, wire.SharedNoiseAlgorithm)
	}
	if code, body = postBody(t, srv.URL+"/api/teacher/new?algorithm=shared", secret, ""); code != http.StatusOK || host.JoinCode() != shared {
		t.Errorf("choosing shared noise again: %d %s, code %q; want the same lobby %q", code, body, host.JoinCode(), shared)
	}
	// A lobby that is not the way asked for alone (a teacher's task)
	// is not the same: asking is a new session.
	if code, body = postBody(t, srv.URL+"/api/teacher/new?algorithm=shared", secret, teacherTaskJSON); code != http.StatusOK || host.JoinCode() == shared {
		t.Fatalf("a task with shared noise: %d %s", code, body)
	}
	task := host.JoinCode()
	// The way alone, asked in the task's lobby, keeps the task: the way
	// it runs already changes nothing.
	if code, body = postBody(t, srv.URL+"/api/teacher/new?algorithm=shared", secret, ""); code != http.StatusOK || host.JoinCode() != task {
		t.Errorf("shared noise without the task from the task's lobby: %d %s, code %q; want the same lobby %q", code, body, host.JoinCode(), task)
	}
	stop()
	// The operator now fixes the way: the teacher's shared-noise session
	// cannot be reopened, and the error says what to do.
	_, err := sessions.Open(sessions.Config{Dir: dir, Template: hostTemplate(tmpl, 3), Logger: quietLogger(), NoTeacherChoice: true})
	if !errors.Is(err, sessions.ErrTeacherChoiceOff) || !strings.Contains(err.Error(), "-reset") {
		t.Errorf("reopen a teacher's shared-noise session with the choice fixed: %v; want %v and what to do", err, sessions.ErrTeacherChoiceOff)
	}

	// The way fixed by the operator.
	fixed, fsrv, _ := runningHostWith(t, sessions.Config{Dir: t.TempDir(), Template: hostTemplate(tmpl, 3), JoinCode: "FIXEDCODE",
		Logger: quietLogger(), NoTeacherChoice: true})
	if c := teacherChoice(t, fsrv.URL, "FIXEDCODE", fixed.TeacherSecret()); c != nil {
		t.Errorf("the teacher's choice with the way fixed: %+v; want none", c)
	}
	code, body = postBody(t, fsrv.URL+"/api/teacher/new?algorithm=shared", fixed.TeacherSecret(), "")
	if code != http.StatusBadRequest || !strings.Contains(body, "fixed how the noise is added") || !strings.Contains(body, "-teacher-choice=false") {
		t.Errorf("shared noise with the way fixed: %d %q; want 400 saying the way is fixed", code, body)
	}
	if fixed.JoinCode() != "FIXEDCODE" || fixed.Current().State() != coordinator.StateLobby || fixed.Current().Session().Algorithm != "nc" {
		t.Errorf("a refused choice changed the session: code %q, state %q, algorithm %q", fixed.JoinCode(), fixed.Current().State(), fixed.Current().Session().Algorithm)
	}
	// The server's own way is no change: the lobby stays.
	if code, body = postBody(t, fsrv.URL+"/api/teacher/new?algorithm=nc", fixed.TeacherSecret(), ""); code != http.StatusOK || fixed.JoinCode() != "FIXEDCODE" {
		t.Errorf("nc with the way fixed at nc: %d %q, code %q", code, body, fixed.JoinCode())
	}

	// Behind edges (cmd/coordinator -role session checks each session
	// with edge.CheckSession): both ways run, the choice is offered.
	edged, edsrv, _ := runningHostWith(t, sessions.Config{Dir: t.TempDir(), Template: hostTemplate(tmpl, 3), JoinCode: "EDGECODE",
		Logger: quietLogger(), CheckSession: edge.CheckSession})
	if c := teacherChoice(t, edsrv.URL, "EDGECODE", edged.TeacherSecret()); c == nil || !slices.Equal(c.Algorithms, both) {
		t.Errorf("the teacher's choice behind edges: %+v; want %v", c, both)
	}

	// A host that cannot run shared noise: no choice, shared refused
	// saying why.
	edges, esrv, _ := runningHostWith(t, sessions.Config{Dir: t.TempDir(), Template: hostTemplate(tmpl, 3), JoinCode: "NOSHARED",
		Logger: quietLogger(), CheckSession: refuseShared})
	if c := teacherChoice(t, esrv.URL, "NOSHARED", edges.TeacherSecret()); c != nil {
		t.Errorf("the teacher's choice without shared noise: %+v; want none", c)
	}
	code, body = postBody(t, esrv.URL+"/api/teacher/new?algorithm=shared", edges.TeacherSecret(), "")
	if code != http.StatusBadRequest || !strings.Contains(body, errNoShared.Error()) {
		t.Errorf("shared noise where it cannot run: %d %q; want 400 saying why", code, body)
	}

	// A restart of a teacher's shared-noise session where it cannot run.
	dir2 := t.TempDir()
	h2, srv2, stop2 := runningHost(t, dir2, tmpl)
	if code, body := postBody(t, srv2.URL+"/api/teacher/new?algorithm=shared", h2.TeacherSecret(), ""); code != http.StatusOK {
		t.Fatalf("new with shared noise: %d %s", code, body)
	}
	stop2()
	_, err = sessions.Open(sessions.Config{Dir: dir2, Template: hostTemplate(tmpl, 3), Logger: quietLogger(), CheckSession: refuseShared})
	if !errors.Is(err, errNoShared) || !errors.Is(err, sessions.ErrChoiceUnavailable) ||
		!strings.Contains(err.Error(), "without -role session") || !strings.Contains(err.Error(), "-reset") {
		t.Errorf("reopen a teacher's shared-noise session where it cannot run: %v; want %v and what to do", err, errNoShared)
	}
	t.Logf("the operator's restart where shared noise cannot run: %v", err)
}

// errNoShared stands for a reason a host's sessions cannot run shared
// noise (Config.CheckSession).
var errNoShared = errors.New("no shared noise on this host")

func refuseShared(s wire.SessionParams) error {
	if s.Algorithm == wire.SharedNoiseAlgorithm {
		return errNoShared
	}
	return nil
}
