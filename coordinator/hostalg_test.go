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
	"browserfl/coordinator/sessions"
	"browserfl/shared/wire"
)

// TestHostTeacherAlgorithm: a teacher switches the next session between
// the two ways in which every page adds noise (?algorithm=shared, then
// back), and nothing else about the session changes; a way the operator
// did not offer (the trusted server, a non-private reference, an
// unknown or overlong name) is refused with 400, counted, and leaves the
// current session running; a restart reopens the teacher's choice, while
// a template whose own way changed is the operator's change
// (ErrTemplateChanged). A host whose sessions run behind edges refuses
// shared noise before ending anything (Config.CheckSession).
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
	if got := session(body); got.Algorithm != wire.SharedNoiseAlgorithm || got.Task == "" {
		t.Errorf("a task with shared noise: algorithm %q, task kept %v", got.Algorithm, got.Task != "")
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
	if _, err := sessions.Open(sessions.Config{Dir: dir, Template: hostTemplate(trusted, 3), Logger: quietLogger()}); !errors.Is(err, sessions.ErrTemplateChanged) {
		t.Errorf("reopen under a trusted template: %v; want %v", err, sessions.ErrTemplateChanged)
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

	// Behind edges: shared noise is refused, the lobby stays.
	edges, err := sessions.Open(sessions.Config{Dir: t.TempDir(), Template: hostTemplate(tmpl, 3), JoinCode: "EDGECODE",
		Logger: quietLogger(), CheckSession: coordinator.CheckClusterSession})
	if err != nil {
		t.Fatal(err)
	}
	esrv := httptest.NewServer(edges)
	defer esrv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	runErr := make(chan error, 1)
	go func() { runErr <- edges.Run(ctx) }()
	if code, body := postBody(t, esrv.URL+"/api/teacher/new?algorithm=shared", edges.TeacherSecret(), ""); code != http.StatusBadRequest || !strings.Contains(body, "edges") {
		t.Errorf("shared noise behind edges: %d %q, want 400 naming the edges", code, body)
	}
	if edges.JoinCode() != "EDGECODE" || edges.Current().State() != coordinator.StateLobby {
		t.Errorf("a refused request behind edges changed the session: code %q, state %q", edges.JoinCode(), edges.Current().State())
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Error(err)
	}
	edges.Close()
}
