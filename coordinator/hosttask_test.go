package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/sessions"
	"browserfl/coordinator/view"
	"browserfl/shared/plan"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// teacherTaskJSON is a task a teacher could define on the dashboard: a
// number, a category and a text, and three answers.
const teacherTaskJSON = `{"format": "browserfl.task/v1", "name": "pets", "title": "Guess a pet",
 "about": "We teach the model which pet a classmate describes.",
 "features": [
  {"name": "legs", "ask": "How many legs?", "kind": "number", "min": 0, "max": 8},
  {"name": "home", "ask": "Where does it live?", "kind": "category", "values": ["house", "cage", "tank"]},
  {"name": "sound", "ask": "What sound does it make?", "kind": "text", "max_length": 20, "char_grams": [1, 2], "buckets": 64}],
 "label": {"name": "pet", "ask": "Which pet is it?", "values": ["dog", "bird", "fish"]},
 "model": "logreg", "privacy": {"epsilon": 4}}`

func postBody(t *testing.T, url, secret, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Teacher-Secret", secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostTeacherTask: a teacher's task posted to /api/teacher/new makes
// the next session one of that task (its shape, labels, definition and
// privacy target travel in the session; no demo data, no evaluation;
// the lobby says what will be collected); a definition that cannot make
// a session is refused with 400, counted, and leaves the current session
// running; a restart reopens the teacher's session.
func TestHostTeacherTask(t *testing.T) {
	dir := t.TempDir()
	tmpl := testSession(8, 30, 10, 200, 10000)
	host, srv, stop := runningHost(t, dir, tmpl)
	secret := host.TeacherSecret()

	// The last one is a valid definition that cannot make a session: its
	// 30 answers of 40 letters do not fit the protocol's label list.
	var long []string
	for i := range 30 {
		long = append(long, fmt.Sprintf("%q", strings.Repeat(string(rune('a'+i%26)), 39)+fmt.Sprint(i%10)))
	}
	tooLong := strings.Replace(teacherTaskJSON, `["dog", "bird", "fish"]`, "["+strings.Join(long, ", ")+"]", 1)
	// A valid task after more blanks than a task may have is refused,
	// not read as "no task" (which would replace the lobby with the
	// coordinator's own session).
	padded := strings.Repeat(" ", task.MaxDefinitionBytes+1) + teacherTaskJSON
	for _, bad := range []string{`{"format": "browserfl.task/v1"`, strings.Replace(teacherTaskJSON, `"max": 8`, `"max": -1`, 1),
		strings.Replace(teacherTaskJSON, `"model": "logreg"`, `"model": "logreg", "extra": 1`, 1), tooLong, padded} {
		if code, body := postBody(t, srv.URL+"/api/teacher/new", secret, bad); code != http.StatusBadRequest || !strings.Contains(body, "task") {
			t.Errorf("bad task: %d %q, want 400 naming the task", code, body)
		}
	}
	if host.JoinCode() != "FIRSTCODE" || host.Current().State() != coordinator.StateLobby {
		t.Fatalf("a refused task changed the session: code %q, state %q", host.JoinCode(), host.Current().State())
	}
	if code, body := getText(t, srv.URL+"/metrics"); code != http.StatusOK || !strings.Contains(body, `browserfl_rejections_total{kind="task"} 5`) {
		t.Errorf("metrics (%d) do not count 5 refused tasks", code)
	}

	code, body := postBody(t, srv.URL+"/api/teacher/new", secret, teacherTaskJSON)
	if code != http.StatusOK {
		t.Fatalf("new with a task: %d %s", code, body)
	}
	var info sessions.NewSessionInfo
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatal(err)
	}
	var sess wire.SessionParams
	if err := getJSON(srv.URL+"/api/session?code="+info.JoinCode, &sess); err != nil {
		t.Fatal(err)
	}
	def, err := plan.SessionTask(sess)
	if err != nil || def == nil || def.Name != "pets" {
		t.Fatalf("the new session's task: %v, %v", def, err)
	}
	if sess.Features != 1+3+64 || sess.Classes != 3 || sess.Labels != "dog,bird,fish" || sess.DemoShards ||
		sess.Epsilon != 4 || sess.Delta != plan.DefaultDelta || sess.Rho != 0 || sess.Dim != (1+3+64+1)*3 {
		t.Errorf("the new session: features %d, classes %d, labels %q, demo %v, epsilon %v delta %v rho %v, dim %d",
			sess.Features, sess.Classes, sess.Labels, sess.DemoShards, sess.Epsilon, sess.Delta, sess.Rho, sess.Dim)
	}
	var st view.Status
	if err := getJSON(srv.URL+"/api/status?code="+info.JoinCode, &st); err != nil {
		t.Fatal(err)
	}
	if st.Title != "Guess a pet" || !strings.Contains(st.Collects, "legs (a number from 0 to 8)") || !strings.Contains(st.Collects, "sound (text, up to 20 characters)") {
		t.Errorf("lobby words: title %q, collects %q", st.Title, st.Collects)
	}
	// The form's task has no test rows: no accuracy, and the status says why.
	if st.AccuracyNote != coordinator.NoTestRows || st.LastEval != nil {
		t.Errorf("the teacher's task: accuracy note %q, evaluation %+v; want %q and none", st.AccuracyNote, st.LastEval, coordinator.NoTestRows)
	}
	for _, path := range []string{"/api/demo/rows", "/api/demo/shard"} {
		if code, _ := getText(t, srv.URL+path+"?code="+info.JoinCode); code == http.StatusOK {
			t.Errorf("%s served for a teacher's task", path)
		}
	}

	stop()
	host2, err := sessions.Open(sessions.Config{Dir: dir, Template: hostTemplate(tmpl, 3), Logger: quietLogger()})
	if err != nil {
		t.Fatalf("reopen the teacher's session: %v", err)
	}
	defer host2.Close()
	if host2.JoinCode() != info.JoinCode || host2.Current().Status().Session.Task != sess.Task {
		t.Errorf("after restart: code %q, task kept %v", host2.JoinCode(), host2.Current().Status().Session.Task == sess.Task)
	}
}

// TestHostTeacherPostsTemplateTask: a teacher who posts the very task the
// coordinator runs (a row task with demo data) gets a session of it
// without the demo data, and a restart reopens that session (it is told
// apart from the template by its parameters, not by its task's text).
func TestHostTeacherPostsTemplateTask(t *testing.T) {
	b, err := task.LookupBuiltin("tabular")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := plan.WithTask(testSession(8, 30, 10, 200, 10000), b.Def)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.DemoShards = true // as cmd/coordinator -task tabular serves it
	dir := t.TempDir()
	host, srv, stop := runningHost(t, dir, tmpl)
	if code, body := postBody(t, srv.URL+"/api/teacher/new", host.TeacherSecret(), tmpl.Task); code != http.StatusOK {
		t.Fatalf("new with the template's task: %d %s", code, body)
	}
	code := host.JoinCode()
	stop()
	host2, err := sessions.Open(sessions.Config{Dir: dir, Template: hostTemplate(tmpl, 3), Logger: quietLogger()})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer host2.Close()
	if s := host2.Current().Status().Session; host2.JoinCode() != code || s.DemoShards || s.Task != tmpl.Task {
		t.Errorf("after restart: code %q (want %q), demo shards %v, same task %v", host2.JoinCode(), code, s.DemoShards, s.Task == tmpl.Task)
	}
}

// runningHost opens a host of tmpl in dir (join code FIRSTCODE), serves
// it and runs it; stop ends its Run (reporting Run's error) and closes
// it, so that the test can reopen dir (once; the test's cleanup calls it
// too).
func runningHost(t *testing.T, dir string, tmpl wire.SessionParams) (host *sessions.Host, srv *httptest.Server, stop func()) {
	t.Helper()
	return runningHostWith(t, sessions.Config{Dir: dir, Template: hostTemplate(tmpl, 3), JoinCode: "FIRSTCODE", Logger: quietLogger()})
}

// runningHostWith is runningHost of the host cfg configures.
func runningHostWith(t *testing.T, cfg sessions.Config) (host *sessions.Host, srv *httptest.Server, stop func()) {
	t.Helper()
	host, err := sessions.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(host)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	hostErr := make(chan error, 1)
	go func() { hostErr <- host.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-hostErr; err != nil {
				t.Error(err)
			}
			srv.Close()
			host.Close()
		})
	}
	t.Cleanup(stop) // also when the test fails first
	return host, srv, stop
}

// TestTeacherControlAnswersTheStatus: a teacher's control answers with
// the status GET /api/status gives the teacher (its title, join links and
// warnings filled in), not the session core's bare one.
func TestTeacherControlAnswersTheStatus(t *testing.T) {
	host, srv, stop := runningHost(t, t.TempDir(), testSession(8, 30, 10, 200, 10000))
	defer stop()
	code, body := postBody(t, srv.URL+"/api/teacher/end", host.TeacherSecret(), "")
	if code != http.StatusOK {
		t.Fatalf("end: %d %s", code, body)
	}
	var got view.Status
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := teacherStatus(t, srv.URL, host.JoinCode(), host.TeacherSecret())
	if want.Title == "" || len(want.Join.URLs) == 0 || want.Warnings == nil {
		t.Fatalf("GET /api/status lacks what this test compares: title %q, join %v, warnings %v", want.Title, want.Join.URLs, want.Warnings)
	}
	if got.State != want.State || got.Title != want.Title || !slices.Equal(got.Join.URLs, want.Join.URLs) || got.Warnings == nil {
		t.Errorf("end answered state %q, title %q, join %v, warnings %v; /api/status: %q, %q, %v, %v",
			got.State, got.Title, got.Join.URLs, got.Warnings, want.State, want.Title, want.Join.URLs, want.Warnings)
	}
}
