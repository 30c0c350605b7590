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
	"browserfl/coordinator/view"
	"browserfl/internal/loopback"
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
	t.Parallel() // docs/browser.md, "Parallel browser tests"
	webDir := pageBuild(t)
	bin := coordinatorBinary(t)
	const code = "CUSTOMTASK7"
	logf, err := os.CreateTemp("", "browserfl-e2e-customtask-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dataDir := t.TempDir()
	coord := &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: dataDir, log: logf, args: []string{
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
	var st view.Status
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
	// Pressed by the page's script: the session's end can move the
	// layout between finding the button and a pointer's press.
	pages[0].must(90*time.Second, "try the model",
		set("try-0", "2", "input"), set("try-1", "tweet", "input"), chromedp.Evaluate(`document.getElementById("try-btn").click()`, nil),
		chromedp.Poll(`(document.getElementById("prediction")||{}).textContent.startsWith("The model says: ")`, nil, chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.Text("#prediction", &answer, chromedp.ByID))
	if pet := strings.TrimPrefix(answer, "The model says: "); pet != "dog" && pet != "bird" && pet != "fish" {
		t.Errorf("try the model answered %q, want a pet", answer)
	}
	t.Logf("try the model: 2 legs, tweet -> %q", answer)
}

// TestTaskFormEngines: the teacher's "Choose what the class learns" form
// on the dashboard is usable in each engine (subtests chromium, firefox,
// webkit), at 1920x1080 and 1280x720, against the real coordinator
// (cmd/coordinator -lobby): opened by a click on its summary (the
// engine's pointer), it lies inside the screen and inside its section
// without the page overflowing, every field is drawn and no wider than
// the form, and its submit button, with the form scrolled to its end as
// the teacher would, is inside the screen and not covered; the teacher fills it (a number
// column, a text column added with "Add a column", three answers) and
// presses the button; the coordinator starts a lobby of that task and
// the dashboard follows it (the new code in its address, the words of
// what each student types). With -screenshots it writes
// docs/screenshots/dashboard-taskform.png (Chromium's; -firefox and
// -webkit in the others' names), the form filled at 1280x720 (before
// the test scrolls it).
func TestTaskFormEngines(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { taskFormEngine(t, e) })
	}
}

// taskFormJS reports the open form's geometry, then scrolls the form's
// own scroller (not the card, which the teacher cannot scroll) to its
// end and reports where the submit button lies.
const taskFormJS = `(() => {
  const W = innerWidth, H = innerHeight, f = document.getElementById("tf"), d = document.getElementById("taskform");
  const sw = document.documentElement.scrollWidth, sh = document.documentElement.scrollHeight;
  const inside = (q, o) => q.left >= o.left - 0.5 && q.top >= o.top - 0.5 && q.right <= o.right + 0.5 && q.bottom <= o.bottom + 0.5;
  const go = document.getElementById("tf-go"), sec = d.closest("section"), bad = [];
  // The box the teacher can scroll (overflow auto or scroll) between the
  // button and its section, if any: what a wheel or a finger scrolls.
  let scroller = null;
  for (let a = go.parentElement; a && a !== sec && !scroller; a = a.parentElement)
    if (["auto", "scroll"].includes(getComputedStyle(a).overflowY)) scroller = a;
  const screen = {left: 0, top: 0, right: W, bottom: H}, box = (scroller || f).getBoundingClientRect();
  if (!inside(box, screen)) bad.push("the form lies outside the screen");
  if (!inside(box, sec.getBoundingClientRect())) bad.push("the form lies outside its section");
  if (f.scrollWidth > f.clientWidth + 1) bad.push("the form's content is " + f.scrollWidth + " px wide in " + f.clientWidth);
  const r = f.getBoundingClientRect();
  for (const el of f.querySelectorAll("input, select, button")) {
    const q = el.getBoundingClientRect(), name = el.id || el.className;
    if (q.width === 0 || q.height === 0) bad.push(name + " is not drawn");
    else if (q.left < r.left - 0.5 || q.right > r.right + 0.5) bad.push(name + " is wider than the form");
  }
  // Scrolled to its end, as the teacher would, the button is on the
  // screen, in the form's box, and nothing covers it.
  if (scroller) scroller.scrollTop = scroller.scrollHeight;
  const g = go.getBoundingClientRect(), hit = document.elementFromPoint((g.left + g.right) / 2, (g.top + g.bottom) / 2);
  if (!inside(g, screen) || !inside(g, (scroller || f).getBoundingClientRect()) || !inside(g, sec.getBoundingClientRect()))
    bad.push("the submit button lies outside the screen or the form");
  else if (!go.contains(hit)) bad.push("the submit button is covered by " + (hit ? hit.id || hit.className || hit.tagName : "nothing"));
  return {Open: d.open, Bad: bad, ScrollW: sw, ScrollH: sh, W, H};
})()`

func taskFormEngine(t *testing.T, e engine) {
	code := "TASKFORM7"
	logf, err := os.CreateTemp("", "browserfl-e2e-taskform-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dataDir := t.TempDir()
	coord := &process{t: t, bin: coordinatorBinary(t), addr: loopback.Addr(t), dataDir: dataDir, log: logf, args: []string{
		"-lobby", "-join-code", code, "-dataset", fashionDir, "-eval-samples", "500",
		"-deadline", "60s", "-T", "30", "-b", "4", "-M", "3", "-m", "3",
	}}
	coord.start()
	defer coord.stop()
	secret := teacherSecretIn(t, dataDir)
	base := "http://" + coord.addr
	b, err := e.start(t)()
	if err != nil {
		t.Fatal(err)
	}
	shots := screenshotDir(t)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(pageFailure(b, what, err))
		}
	}
	for _, size := range [][2]int{{1920, 1080}, {1280, 720}} {
		name := fmt.Sprintf("task form %dx%d", size[0], size[1])
		got, err := b.viewport(size[0], size[1], false)
		if err != nil || got != size {
			t.Fatalf("%s: the page is %v (%v)", name, got, err)
		}
		must(name, b.navigate(base+"/dashboard?code="+code+"&teacher="+secret))
		if size[0] == 1920 {
			// The teacher first switches the lobby to shared noise
			// (plan.TeacherAlgorithms); the task's lobby keeps it.
			code = chooseSharedNoise(t, b, base, code, filepath.Join(shots, shotName(e.name, "dashboard-noisechoice")))
		}
		must(name, waitVisible(b, 60*time.Second, "#taskform > summary"))
		must(name, b.click("#taskform > summary"))
		must(name, waitFor(b, 10*time.Second, name+" open", `document.getElementById("taskform").open && document.querySelectorAll("#tf-cols .tfcol").length === 1`))
		must(name, b.click("#tf-add"))
		for _, f := range [][2]string{{"#tf-title", "Guess a pet"}, {"#tf-about", "We teach the model which pet a classmate describes."},
			{"#tf-cols .tfcol:nth-child(1) .c-name", "legs"}, {"#tf-cols .tfcol:nth-child(1) .c-ask", "How many legs?"},
			{"#tf-cols .tfcol:nth-child(1) .c-range", "0, 8"},
			{"#tf-cols .tfcol:nth-child(2) .c-name", "sound"}, {"#tf-cols .tfcol:nth-child(2) .c-ask", "What sound does it make?"},
			{"#tf-cols .tfcol:nth-child(2) .c-range", "20"},
			{"#tf-label", "pet"}, {"#tf-label-ask", "Which pet is it?"}, {"#tf-label-values", "dog, bird, fish"}} {
			must(name+": "+f[0], setValue(b, f[0], f[1]))
		}
		must(name+": text column", b.eval(`(s => { s.value = "text"; s.dispatchEvent(new Event("change", {bubbles: true})); return true; })(document.querySelector("#tf-cols .tfcol:nth-child(2) .c-kind"))`, nil))
		dir := shots
		if size[0] != 1280 {
			dir = t.TempDir()
		}
		must(name, b.screenshot(filepath.Join(dir, shotName(e.name, "dashboard-taskform")), false))
		var r struct {
			Open                   bool
			Bad                    []string
			ScrollW, ScrollH, W, H float64
		}
		must(name, b.eval(taskFormJS, &r))
		if !r.Open || len(r.Bad) > 0 || r.ScrollW > r.W || r.ScrollH > r.H {
			t.Errorf("%s: open %v, page %vx%v in %vx%v: %q", name, r.Open, r.ScrollW, r.ScrollH, r.W, r.H, r.Bad)
		}
		must(name+": submit", b.click("#tf-go"))
		must(name+": the new lobby", waitFor(b, 60*time.Second, name+": the dashboard follows the new session",
			fmt.Sprintf(`new URLSearchParams(location.search).get("code") !== %q && document.getElementById("collects").textContent.includes("legs (a number from 0 to 8)")`, code)))
		var next string
		must(name, b.eval(`new URLSearchParams(location.search).get("code")`, &next))
		var st view.Status
		if err := getJSON(base+"/api/status?code="+next, &st); err != nil || st.State != coordinator.StateLobby || st.Title != "Guess a pet" ||
			!strings.Contains(st.Collects, "sound (text, up to 20 characters)") {
			t.Fatalf("%s: the new session %q: state %q, title %q, collects %q (%v)", name, next, st.State, st.Title, st.Collects, err)
		}
		if st.Session.Algorithm != wire.SharedNoiseAlgorithm {
			t.Errorf("%s: the task's lobby runs %q; want the teacher's choice, %q, kept", name, st.Session.Algorithm, wire.SharedNoiseAlgorithm)
		}
		code = next
	}
}

// chooseSharedNoise switches the lobby of code to shared noise on the
// teacher's dashboard b (the "Choose how the noise is added" form) and
// returns the new lobby's code, once the dashboard follows it and the
// coordinator runs it with shared noise, nothing else changed. First it
// checks the shared way's words (its two costs) and that submitting the
// way the lobby already runs changes nothing. The open form, its choice
// made, is kept as shot.
func chooseSharedNoise(t *testing.T, b tab, base, code, shot string) string {
	t.Helper()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(pageFailure(b, "noise choice: "+what, err))
		}
	}
	var before view.Status
	if err := getJSON(base+"/api/status?code="+code, &before); err != nil || before.Session.Algorithm != "nc" {
		t.Fatalf("the first lobby runs %q (%v); want nc", before.Session.Algorithm, err)
	}
	must("form", waitVisible(b, 60*time.Second, "#modeform > summary"))
	must("open", b.click("#modeform > summary"))
	must("ticked", waitFor(b, 10*time.Second, "the current way ticked", `document.getElementById("modeform").open && document.getElementById("mf-nc").checked`))
	// The shared way's words say its two costs: each phone's guarantee
	// rests on the others being real, and no update is checked alone.
	var words string
	must("words", b.eval(`document.getElementById("mf-shared").closest("label").innerText`, &words))
	for _, w := range []string{"counts on the other phones being real", "if they were fake, only its own share protects it", "only the total"} {
		if !strings.Contains(words, w) {
			t.Errorf("the shared way's words lack %q: %q", w, words)
		}
	}
	// The way the lobby already runs: nothing changes, the lobby stays.
	must("submit the current way", b.click("#mf-go"))
	must("nothing changed", waitFor(b, 10*time.Second, "the form says nothing changed",
		`!document.getElementById("mf-msg").hidden && document.getElementById("mf-msg").textContent.includes("nothing changed")`))
	var same string
	must("code", b.eval(`new URLSearchParams(location.search).get("code")`, &same))
	var still view.Status
	if err := getJSON(base+"/api/status?code="+code, &still); err != nil || same != code || still.State != coordinator.StateLobby {
		t.Fatalf("choosing the lobby's own way: the dashboard shows %q, the lobby %q is %q (%v); want it kept", same, code, still.State, err)
	}
	must("pick", b.click("#mf-shared"))
	must("screenshot", b.screenshot(shot, false))
	t.Logf("screenshot %s", shot)
	must("submit", b.click("#mf-go"))
	must("new lobby", waitFor(b, 60*time.Second, "the dashboard follows the new lobby",
		fmt.Sprintf(`new URLSearchParams(location.search).get("code") !== %q && !document.getElementById("modeform").hidden`, code)))
	var next string
	must("code", b.eval(`new URLSearchParams(location.search).get("code")`, &next))
	var st view.Status
	if err := getJSON(base+"/api/status?code="+next, &st); err != nil || st.State != coordinator.StateLobby {
		t.Fatalf("the shared-noise lobby %q: state %q (%v)", next, st.State, err)
	}
	want := before.Session
	want.Algorithm = wire.SharedNoiseAlgorithm
	if st.Session != want {
		t.Errorf("the shared-noise lobby's session %+v; want the first's with shared noise: %+v", st.Session, want)
	}
	return next
}

// TestNoiseChoiceFixed: a coordinator whose operator fixed the way of
// learning (cmd/coordinator -teacher-choice=false) serves no choice in
// the teacher's status, so the teacher's dashboard shows the lobby's task
// form but not "Choose how the noise is added" (Chromium: the form's
// drawing in every engine is TestTaskFormEngines').
func TestNoiseChoiceFixed(t *testing.T) {
	code := "FIXEDWAY7"
	logf, err := os.CreateTemp("", "browserfl-e2e-fixedway-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dataDir := t.TempDir()
	coord := &process{t: t, bin: coordinatorBinary(t), addr: loopback.Addr(t), dataDir: dataDir, log: logf, args: []string{
		"-lobby", "-join-code", code, "-dataset", fashionDir, "-eval-samples", "500", "-T", "30", "-b", "4", "-M", "3", "-m", "3",
		"-teacher-choice=false",
	}}
	coord.start()
	defer coord.stop()
	secret := teacherSecretIn(t, dataDir)
	base := "http://" + coord.addr
	b, err := engines[0].start(t)()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.navigate(base + "/dashboard?code=" + code + "&teacher=" + secret); err != nil {
		t.Fatal(err)
	}
	if err := waitVisible(b, 60*time.Second, "#taskform > summary"); err != nil {
		t.Fatal(pageFailure(b, "the task form", err))
	}
	var hidden bool
	if err := b.eval(`document.getElementById("modeform").hidden`, &hidden); err != nil {
		t.Fatal(err)
	}
	if !hidden {
		t.Error("the dashboard shows the noise choice on a coordinator with -teacher-choice=false")
	}
}
