package e2e

import (
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
// pages read carries exactly that task; three students then enter rows
// and the session trains (studentsTrainCustomTask).
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
	secret := teacherSecretIn(t, dataDir)
	srv := serve(t, pageHandler(webDir, proxyTo(coord.addr)))
	shots := screenshotDir(t)

	dash := launch(t, t.TempDir())
	defer dash.close()
	next := teacherDefinesTask(t, dash, srv.URL, code, secret)
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
	studentsTrainCustomTask(t, srv.URL, next, shots, dash, sess, coord)
	fmt.Fprintln(logf, "test done")
}

// studentsTrainCustomTask: three students join the teacher's task: each
// sees it in words before consent, types two rows in the generated form
// (legs, sound, pet) and picks a CSV file with the rest of its rows; they
// wait in the lobby until the teacher presses Start; the session trains
// to its last round; "try the model" answers a typed row with a pet.
func studentsTrainCustomTask(t *testing.T, base, code, shots string, dash *browser, sess wire.SessionParams, coord *process) {
	t.Helper()
	const students = 3
	need := sess.Rounds * sess.Batch
	pets := []struct {
		name   string
		legs   string
		sounds []string
	}{{"dog", "4", []string{"woof", "bark", "growl"}}, {"bird", "2", []string{"tweet", "chirp", "sing"}}, {"fish", "0", []string{"blub", "splash", "glug"}}}
	var csv strings.Builder
	csv.WriteString("legs,sound,pet\n")
	for k := 0; k < need; k++ {
		p := pets[k%len(pets)]
		fmt.Fprintf(&csv, "%s,%s,%s\n", p.legs, p.sounds[k%len(p.sounds)], p.name)
	}
	path := filepath.Join(t.TempDir(), "pets.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	set := func(id, v, ev string) chromedp.Action {
		return chromedp.Evaluate(fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = %q; e.dispatchEvent(new Event(%q, {bubbles: true})); })()`, id, v, ev), nil)
	}
	count := func(n int) chromedp.Action {
		return chromedp.Poll(fmt.Sprintf(`Number((document.getElementById("data-count")||{}).textContent) == %d`, n), nil, chromedp.WithPollingTimeout(20*time.Second))
	}
	pages := make([]*browser, students)
	for i := range pages {
		pages[i] = launch(t, t.TempDir())
		defer pages[i].close()
		b := pages[i]
		b.must(60*time.Second, "consent", chromedp.Navigate(base+"/?code="+code), chromedp.WaitVisible("#task-words", chromedp.ByID))
		var words string
		b.must(5*time.Second, "task words", chromedp.Text("#task-words", &words, chromedp.ByID))
		if !strings.Contains(words, "legs (a number from 0 to 8)") || !strings.Contains(words, "sound (text, up to 20 characters)") {
			t.Errorf("student %d reads the task as %q", i, words)
		}
		b.must(30*time.Second, "join", chromedp.Click("#join-btn", chromedp.ByID), chromedp.WaitVisible("#row-0", chromedp.ByID))
		for k, p := range pets[:2] {
			b.must(10*time.Second, "type a row",
				set("row-0", p.legs, "input"), set("row-1", p.sounds[i], "input"), set("row-label", p.name, "change"),
				chromedp.Click("#row-add", chromedp.ByID), count(k+1))
		}
		b.must(30*time.Second, "pick the CSV file", chromedp.SetUploadFiles("#files", []string{path}, chromedp.ByID), count(2+need))
		if i == 0 {
			if err := b.screenshot(filepath.Join(shots, "customtask-rows.png")); err != nil {
				t.Fatal(err)
			}
		}
		b.must(20*time.Second, "wait in the lobby", chromedp.Click("#train-btn", chromedp.ByID), chromedp.WaitVisible("#lobby", chromedp.ByID))
	}
	dash.must(60*time.Second, "Start",
		chromedp.Poll(`!document.getElementById("btn-start").hidden`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Click("#btn-start", chromedp.ByID))
	waitCommitted(t, base, code, sess.Rounds, 4*time.Minute, func() string {
		var why []string
		for i, b := range pages {
			var st string
			b.eval(`(document.getElementById("conn")||{}).textContent + ": " + (document.getElementById("status")||{}).textContent + " " + ((document.getElementById("error")||{}).textContent||"")`, &st)
			why = append(why, fmt.Sprintf("student %d: %s", i, st))
		}
		return strings.Join(why, "\n") + "\ncoordinator log " + coord.log.Name()
	})
	var answer string
	pages[0].must(30*time.Second, "try the model",
		set("try-0", "2", "input"), set("try-1", "tweet", "input"), chromedp.Click("#try-btn", chromedp.ByID),
		chromedp.Poll(`(document.getElementById("prediction")||{}).textContent.startsWith("The model says: ")`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Text("#prediction", &answer, chromedp.ByID))
	if pet := strings.TrimPrefix(answer, "The model says: "); pet != "dog" && pet != "bird" && pet != "fish" {
		t.Errorf("try the model answered %q, want a pet", answer)
	}
	t.Logf("try the model: 2 legs, tweet -> %q", answer)
}
