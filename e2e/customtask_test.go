package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/coordinator"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
)

// teacherDefinesTask fills the dashboard's "Choose what the class
// learns" form (a number column, a text column and three answers) and
// starts a lobby for it; it returns the new join code, read from the
// dashboard's own address.
func teacherDefinesTask(t *testing.T, dash *browser, base, code, secret string) string {
	t.Helper()
	set := func(sel, v string) chromedp.Action {
		return chromedp.SetValue(sel, v, chromedp.ByQuery)
	}
	dash.must(60*time.Second, "teacher: define the class's task",
		chromedp.EmulateViewport(1920, 1080),
		chromedp.Navigate(base+"/dashboard?code="+code+"&teacher="+secret),
		chromedp.WaitVisible("#taskform", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("taskform").open = true`, nil),
		set("#tf-title", "Guess a pet"),
		set("#tf-about", "We teach the model which pet a classmate describes."),
		set("#tf-cols .tfcol:nth-child(1) .c-name", "legs"),
		set("#tf-cols .tfcol:nth-child(1) .c-ask", "How many legs?"),
		set("#tf-cols .tfcol:nth-child(1) .c-range", "0, 8"),
		chromedp.Click("#tf-add", chromedp.ByID),
		set("#tf-cols .tfcol:nth-child(2) .c-name", "sound"),
		set("#tf-cols .tfcol:nth-child(2) .c-ask", "What sound does it make?"),
		chromedp.SetValue("#tf-cols .tfcol:nth-child(2) .c-kind", "text", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#tf-cols .tfcol:nth-child(2) .c-kind").dispatchEvent(new Event("change"))`, nil),
		set("#tf-cols .tfcol:nth-child(2) .c-range", "20"),
		set("#tf-label", "pet"),
		set("#tf-label-ask", "Which pet is it?"),
		set("#tf-label-values", "dog, bird, fish"),
		chromedp.Evaluate(`window.confirm = () => true`, nil),
		chromedp.Click("#tf-go", chromedp.ByID),
		chromedp.Poll(`new URLSearchParams(location.search).get("code") !== `+fmt.Sprintf("%q", code)+
			` && document.getElementById("collects").textContent.includes("legs (a number from 0 to 8)")`,
			nil, chromedp.WithPollingTimeout(50*time.Second)))
	var next string
	if err := dash.eval(`new URLSearchParams(location.search).get("code")`, &next); err != nil || next == "" {
		t.Fatalf("the dashboard did not follow the new session: %q, %v", next, err)
	}
	return next
}

// TestCustomTask: the teacher defines a task on the dashboard (the real
// coordinator checks it with shared/task and starts a lobby of it); the
// lobby says in words what each student will type, and the session the
// pages read carries exactly that task.
func TestCustomTask(t *testing.T) {
	webDir := pageBuild(t)
	bin := coordinatorBinary(t)
	const code = "CUSTOMTASK7"
	logf, err := os.CreateTemp("", "browserfl-e2e-customtask-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dataDir := t.TempDir()
	coord := &process{t: t, bin: bin, addr: freeAddr(t), dataDir: dataDir, log: logf, args: []string{
		"-lobby", "-join-code", code, "-dataset", fashionDir, "-eval-samples", "500",
		"-deadline", "60s", "-round-gap", "300ms", "-T", "30", "-b", "4", "-M", "3", "-m", "3",
	}}
	coord.start()
	defer coord.stop()
	var index struct {
		TeacherSecret string `json:"teacher_secret"`
	}
	raw, err := os.ReadFile(filepath.Join(dataDir, "host.json"))
	if err != nil || json.Unmarshal(raw, &index) != nil || index.TeacherSecret == "" {
		t.Fatalf("host index: %v", err)
	}
	srv := serve(t, pageHandler(webDir, proxyTo(coord.addr)))
	shots := screenshotDir(t)

	dash := launch(t, t.TempDir())
	defer dash.close()
	next := teacherDefinesTask(t, dash, srv.URL, code, index.TeacherSecret)
	if err := dash.screenshot(filepath.Join(shots, "customtask-lobby.png")); err != nil {
		t.Fatal(err)
	}
	var sess wire.SessionParams
	if err := getJSON(srv.URL+"/api/session?code="+next, &sess); err != nil {
		t.Fatal(err)
	}
	def, err := plan.SessionTask(sess)
	if err != nil || def == nil || def.Title != "Guess a pet" || len(def.Features) != 2 || sess.Labels != "dog,bird,fish" {
		t.Fatalf("the new session's task: %+v, %v", def, err)
	}
	var st coordinator.Status
	if err := getJSON(srv.URL+"/api/status?code="+next, &st); err != nil || st.State != coordinator.StateLobby || st.Title != "Guess a pet" {
		t.Fatalf("the new session: %+v, %v", st.State, err)
	}
	if !strings.Contains(st.Collects, "sound (text, up to 20 characters)") {
		t.Errorf("lobby words %q", st.Collects)
	}
	fmt.Fprintln(logf, "test done")
}
