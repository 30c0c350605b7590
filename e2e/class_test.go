package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
	"browserfl/internal/loopback"
	"browserfl/shared/wire"
	"browserfl/wasm/local"
	"browserfl/wasm/ui"
)

// phone starts a Chromium of its own at phone size (390x844, mobile).
// Tabs of one Chromium would be lighter, but here a second tab stops
// answering DevTools after its first navigation, even to a static file
// and with or without a browser context of its own (chromedp 0.14.2,
// headless Chromium 156; not the page); so every student gets its own
// browser, like its own phone.
func phone(t testing.TB) (*browser, error) {
	s := launch(t, t.TempDir())
	if err := s.run(30*time.Second, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// joinSteps open the bare URL, type the join code into the join box,
// consent with a nickname (the page's default budget accepts the
// session), store data (the demo shard, or files if given) and press
// the train button.
func joinSteps(base, code, nickname string, files []string) []chromedp.Action {
	load := chromedp.Action(chromedp.Click("#demo-btn", chromedp.ByID))
	if files != nil {
		load = chromedp.SetUploadFiles("#files", files, chromedp.ByID)
	}
	return []chromedp.Action{
		chromedp.Navigate(base + "/"),
		chromedp.WaitVisible("#code-input", chromedp.ByID),
		chromedp.SetValue("#code-input", code, chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("code-input").dispatchEvent(new Event("input", {bubbles: true}))`, nil),
		chromedp.Click("#code-btn", chromedp.ByID),
		chromedp.WaitVisible("#consent", chromedp.ByID),
		chromedp.SetValue("#nickname", nickname, chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("nickname").dispatchEvent(new Event("input", {bubbles: true}))`, nil),
		chromedp.Click("#join-btn", chromedp.ByID),
		chromedp.WaitVisible("#data", chromedp.ByID),
		load,
		chromedp.Poll(`Number((document.getElementById("data-count")||{}).textContent) > 0`, nil, chromedp.WithPollingTimeout(80*time.Second)),
		chromedp.Click("#train-btn", chromedp.ByID),
	}
}

// classRound is what the test reads of /api/rounds.
type classRound struct {
	T           int     `json:"t"`
	Cohort      int     `json:"cohort"`
	Included    int     `json:"included"`
	Evaluated   bool    `json:"evaluated"`
	Accuracy    float64 `json:"accuracy"`
	DeadlineHit *bool   `json:"deadline_hit"`
}

// TestClassroom is a lesson in a browser, in each engine a class brings
// (subtests chromium, firefox, webkit: engines), with shared noise in
// every engine: the real
// coordinator (cmd/coordinator -lobby, -algorithm shared -threshold 6) as
// a child process, the teacher's dashboard
// at projector size (1920x1080) and eleven students at phone size
// (390x844; Chromium with its mobile emulation; WebKit's MiniBrowser
// window is at least 447 px wide), each with storage of its own: a
// headless Chromium each (see phone), a Firefox window in a user context
// each, a MiniBrowser each. Ten students open the bare address, type the join code into
// the join box, give a nickname and wait in the lobby; the teacher
// presses Start on the dashboard. During the session two students close
// their tabs, one reloads, one runs out of data and one joins late. The
// session must run all its rounds to the end (summary on the
// dashboard); no round may close at its deadline waiting for a student
// who left (checkNoWaitForDeparted; a page here answers in well under a
// second, the deadline is 8 s, but a busy machine can make one miss it);
// the departures show in the dashboard's people list; the final test
// accuracy must reach the bound stated below.
//
// Shared noise: every round's updates are summed by secure aggregation
// in the pages' Workers, and the first student's page must say how many
// classmates share the noise: all ten in round 1, at most eight once
// three have left (classroom, sharedChecks). The cohort m is the whole
// class of ten at Start, and the threshold must exceed m/2: 6, one below
// the default ceil(0.7 m) = 7. Seven of the ten stay to the end, eight
// with the late student; with 7 a page that leaves after its masked
// input (the reload) takes the round's unmasking below the threshold
// whenever the late student is not in it, and the round is discarded
// after every page spent a release and a batch on it: the lesson's
// pages, sized for one release and one batch a round, then run out
// before the last round (docs/secagg.md, "A discarded round costs a
// round"). With 6 the departures and one page gone mid-round leave it
// satisfiable. The default algorithm, nc, runs in the browsers elsewhere:
// TestClassroomLesson's whole lesson (Chromium) and
// TestPrivacyWordsEveryMode's pages (every engine).
//
// Data: nine students take the coordinator's demo shard (sized for the
// rounds left). The one who runs out picks local files (an IDX pair of
// 2b = 128 Fashion-MNIST test images, as a student would pick from
// disk): everyone is asked every round (the preset's cohort is the whole
// class), so it answers rounds 1 and 2 and then leaves with its data
// used up.
//
// With -screenshots it writes docs/screenshots/classroom-*.png
// (Chromium's; classroom-*-firefox.png and classroom-*-webkit.png).
func TestClassroom(t *testing.T) {
	t.Parallel() // docs/browser.md, "Parallel browser tests"
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { t.Parallel(); classroom(t, e, wire.SharedNoiseAlgorithm) })
	}
}

// classroom runs TestClassroom's lesson in engine e with the session's
// algorithm alg (cmd/coordinator -algorithm; with shared noise,
// -threshold sharedClassThreshold; the default privacy target).
func classroom(t *testing.T, e engine, alg string) {
	webDir := pageBuild(t)
	bin := coordinatorBinary(t)
	const (
		code     = "CLASS10"
		students = 10
		rounds   = 30
		batch    = 64
	)
	logf, err := os.CreateTemp("", "browserfl-e2e-classroom-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dataDir := t.TempDir()
	// The algorithm alg, the default model (logreg) and privacy target
	// (plan.DefaultLessonTarget: epsilon 7.92, 99% of the page's default budget of 8);
	// a larger step and a diameter for a short session. -deadline 60s is
	// the template's; the "one lesson" preset caps it at 8 s at Start,
	// still far above what a round takes here.
	coord := &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: dataDir, log: logf, args: []string{
		"-lobby", "-join-code", code, "-dataset", fashionDir, "-eval-every", "1", "-eval-samples", "1000",
		"-demo-shards", "16", "-deadline", "60s", "-round-gap", "500ms", "-seed", "11",
		"-T", fmt.Sprint(rounds), "-b", fmt.Sprint(batch), "-eta", "1", "-D", "10", "-clip", "1",
		"-algorithm", alg,
	}}
	if alg == wire.SharedNoiseAlgorithm {
		coord.args = append(coord.args, "-threshold", fmt.Sprint(sharedClassThreshold))
	}
	shared := alg == wire.SharedNoiseAlgorithm
	coord.start()
	stopped := false // stopped early to read its store
	defer func() {
		if !stopped {
			coord.stop()
		}
	}()
	secret := teacherSecretIn(t, dataDir)
	srv := serve(t, pageHandler(webDir, proxyTo(coord.addr)))
	status := func() view.Status {
		t.Helper()
		var st view.Status
		if err := getJSON(srv.URL+"/api/status?code="+code, &st); err != nil {
			t.Fatalf("status: %v (coordinator log %s)", err, logf.Name())
		}
		return st
	}
	shots := screenshotDir(t)
	shot := func(b tab, name string) {
		t.Helper()
		if err := b.screenshot(filepath.Join(shots, shotName(e.name, "classroom-"+name)), true); err != nil {
			t.Fatal(err)
		}
	}
	newTab := e.start(t)
	phone := func() (tab, error) { return phoneTab(newTab) }
	phoneScreen := phoneScreenCheck(t, e.name, shots)
	must := func(p tab, what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(pageFailure(p, what, err))
		}
	}

	// The small local data set of the student who runs out.
	few, err := fashionTest(t).Take(2 * batch)
	if err != nil {
		t.Fatal(err)
	}
	im, lab, err := local.Encode(few)
	if err != nil {
		t.Fatal(err)
	}
	fileDir := t.TempDir()
	files := []string{filepath.Join(fileDir, "few-images-idx3-ubyte"), filepath.Join(fileDir, "few-labels-idx1-ubyte")}
	if os.WriteFile(files[0], im, 0o644) != nil || os.WriteFile(files[1], lab, 0o644) != nil {
		t.Fatal("writing the local files")
	}

	// The projector.
	dash, err := newTab()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"Ada", "Ben", "Chloe", "Dev", "Emma", "Finn", "Gia", "Hugo", "Iris", "Jon"}
	const (
		closer1, closer2 = 1, 2 // close their tabs
		reloader         = 3    // reloads
		runsOut          = 4    // little data
		late             = "Kai"
	)
	tabs := make([]tab, students)
	start := time.Now()
	for i, name := range names {
		if tabs[i], err = phone(); err != nil {
			t.Fatal(err)
		}
		var f []string
		if i == runsOut {
			f = files
		}
		var check func(tab, string, string) error
		if i == 0 {
			check = phoneScreen
		}
		must(tabs[i], name+": join by code, wait in the lobby", joinTab(tabs[i], srv.URL, code, name, f, "#lobby", check))
	}
	t.Logf("%d students in the lobby after %v", students, time.Since(start).Round(time.Second))

	if size, err := dash.viewport(1920, 1080, false); err != nil || size != [2]int{1920, 1080} {
		t.Fatalf("projector: %v, %v", size, err)
	}
	must(dash, "the teacher's dashboard", dash.navigate(srv.URL+"/dashboard?code="+code+"&teacher="+secret))
	must(dash, "the teacher's dashboard in the lobby", waitFor(dash, 90*time.Second, "lobby", fmt.Sprintf(`document.body.dataset.view === "lobby" && document.querySelectorAll("#names-big li.lobby").length === %d &&
			!document.getElementById("btn-start").hidden`, students)))
	shot(dash, "lobby-projector")
	shot(tabs[0], "lobby-phone")
	if shared {
		// Every status line the first student's page shows from now on.
		must(tabs[0], "the status recorder", tabs[0].eval(statusRecorder, nil))
	}

	// The late student's page, opened now and joined after Start.
	lateTab, err := phone()
	if err != nil {
		t.Fatal(err)
	}
	must(lateTab, "the late student's page", openTab(lateTab, srv.URL))

	// Start on the dashboard.
	must(dash, "Start", dash.click("#btn-start"))
	started := time.Now()
	// The first accuracy on the dashboard: logged, not asserted.
	firstEval := make(chan time.Duration, 1)
	go func() {
		for k := 0; k < 1200; k++ {
			var st view.Status
			if getJSON(srv.URL+"/api/status?code="+code, &st) == nil && st.LastEval != nil {
				firstEval <- time.Since(started)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		firstEval <- -1
	}()
	st := status()
	for k := 0; k < 100 && st.State == coordinator.StateLobby; k++ {
		time.Sleep(100 * time.Millisecond)
		st = status()
	}
	if st.State != coordinator.StateRunning && st.State != coordinator.StateEnded {
		t.Fatalf("after Start: state %q", st.State)
	}
	if st.Session.M != students || st.Session.Cohort != students || st.Session.Rounds != rounds {
		t.Errorf("sized at Start: M %d, m %d, T %d; want %d, %d, %d", st.Session.M, st.Session.Cohort, st.Session.Rounds, students, students, rounds)
	}
	if st.Session.Algorithm != alg || st.Privacy.Shared != shared {
		t.Errorf("the session runs %q (shared noise: %v), want %q", st.Session.Algorithm, st.Privacy.Shared, alg)
	}
	if shared && st.Privacy.Threshold != sharedClassThreshold {
		t.Errorf("threshold %d at Start, want %d of the class of %d", st.Privacy.Threshold, sharedClassThreshold, students)
	}

	// A late student joins while the class trains (its own goroutine).
	// Its page is open before Start: compiling the program is the slow
	// part (tens of seconds in WebKit on two busy cores, where 30 rounds
	// once ended before a page opened after Start was ready); typing the
	// code, consent, data and training come once round 1 is committed.
	var wg sync.WaitGroup
	wg.Add(1)
	lateErr := make(chan string, 1)
	lateAt := -1 // rounds committed when the late student was training
	go func() {
		defer wg.Done()
		// Late: after round 1 has been committed.
		for k := 0; ; k++ {
			var s view.Status
			if getJSON(srv.URL+"/api/status?code="+code, &s) == nil && s.Committed >= 1 {
				break
			}
			if k == 3000 {
				lateErr <- "round 1 not committed within 5 minutes"
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := joinOpened(lateTab, code, late, nil, "#train", nil); err != nil {
			lateErr <- pageFailure(lateTab, "late join", err)
			return
		}
		var s view.Status
		if getJSON(srv.URL+"/api/status?code="+code, &s) == nil {
			lateAt = s.Committed
		}
	}()
	defer wg.Wait()

	waitCommitted := func(r int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for time.Now().Before(deadline) {
			if s := status(); s.Committed >= r || s.State == coordinator.StateEnded {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("round %d not committed (coordinator log %s)", r, logf.Name())
	}
	// Two students close their tabs after round 3.
	waitCommitted(3)
	for _, i := range []int{closer1, closer2} {
		if err := tabs[i].closeTab(); err != nil {
			t.Fatalf("closing %s's tab: %v", names[i], err)
		}
	}
	// One reloads after round 6 and trains on.
	waitCommitted(6)
	must(tabs[reloader], "reload", tabs[reloader].reload())
	must(tabs[reloader], "training after the reload", waitVisible(tabs[reloader], 120*time.Second, "#train"))

	// The projector while the class trains: the departures are in its
	// people list (gone: closed tabs; left: ran out of data).
	must(dash, "departures on the dashboard", waitFor(dash, 90*time.Second, "departures", fmt.Sprintf(`(() => {
  const cls = (n) => ([...document.querySelectorAll("#names li")].find(li => li.firstChild && li.firstChild.textContent === n) || {}).className;
  const away = (n) => ["left", "gone"].includes(cls(n));
  return document.body.dataset.view === "training" && away(%q) && away(%q) && cls(%q) === "left";
})()`, names[closer1], names[closer2], names[runsOut])))
	shot(dash, "training-projector")
	must(tabs[0], "phone training", waitFor(tabs[0], 60*time.Second, "accuracy", `document.getElementById("acc") !== null`))
	if shared {
		// The meter says how many share the noise in the current round:
		// after three left, at most eight phones, at least the threshold.
		var floor string
		must(tabs[0], "the meter", tabs[0].eval(`(document.getElementById("eps-floor") || {}).textContent || ""`, &floor))
		if k := classmatesIn(floor); len(k) != 1 || k[0]+1 < sharedClassThreshold || k[0]+1 > students-2 {
			t.Errorf("after the departures the meter says %q: want \"In this round, you and K classmates share the noise.\" with %d <= K+1 <= %d", floor, sharedClassThreshold, students-2)
		}
	}
	shot(tabs[0], "training-phone")
	mid := status()
	// A closed tab says goodbye on its way out (left); a tab that could
	// not would be gone.
	for _, i := range []int{closer1, closer2, runsOut} {
		p := person(mid, names[i])
		if p.State != "left" && !(p.State == "gone" && i != runsOut) {
			t.Errorf("%s: state %q in the status after leaving", names[i], p.State)
		}
		t.Logf("%s: %s (%s) after %d rounds", names[i], p.State, p.Why, p.Rounds)
	}

	// The session runs to its last round.
	must(dash, "summary on the dashboard", waitFor(dash, 15*time.Minute, "summary",
		`document.body.dataset.view === "summary" && document.getElementById("sum-acc").textContent.includes("%")`))
	took := time.Since(started)
	must(tabs[0], "phone: finished", waitFor(tabs[0], 90*time.Second, "finished", `document.body.innerText.includes("The session has finished")`))
	shot(dash, "end-projector")
	shot(tabs[0], "end-phone")
	if shared {
		var statuses []string
		must(tabs[0], "the status lines", tabs[0].eval(`window.__status`, &statuses))
		sharedChecks(t, statuses, students)
	}
	wg.Wait()
	select {
	case e := <-lateErr:
		t.Errorf("late student: %s", e)
	default:
	}

	end := status()
	if end.State != coordinator.StateEnded || end.Committed != rounds {
		t.Fatalf("at the end: state %q, %d rounds committed; want %q and %d", end.State, end.Committed, coordinator.StateEnded, rounds)
	}
	// The first student's last word counts the rounds the coordinator
	// included its update in, in the session's words.
	var last string
	must(tabs[0], "the last word", tabs[0].eval(`document.getElementById("status").textContent`, &last))
	if want := ui.FinishedStatus(end.Privacy.Protection, end.Privacy.Shared, person(end, names[0]).Rounds); last != want {
		t.Errorf("the first student's last word %q, want %q", last, want)
	}
	var recs []classRound
	if err := getJSON(srv.URL+"/api/rounds?code="+code, &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != rounds {
		t.Fatalf("%d round records, want %d", len(recs), rounds)
	}
	for _, r := range recs {
		if r.DeadlineHit == nil {
			t.Fatalf("round %d: no deadline_hit in /api/rounds", r.T)
		}
	}
	if p := person(end, late); p.Rounds == 0 {
		t.Errorf("the late student %s took part in no round (%+v)", late, p)
	}
	if p := person(end, names[reloader]); p.Rounds == 0 {
		t.Errorf("the student who reloaded took part in no round (%+v)", p)
	}
	t.Logf("included in rounds: late %s %d (training after round %d), reloaded %s %d, %s (all along) %d",
		late, person(end, late).Rounds, lateAt, names[reloader], person(end, names[reloader]).Rounds, names[0], person(end, names[0]).Rounds)
	if end.LastEval == nil {
		t.Fatal("no evaluation at the end")
	}
	// No round waited for a student who had left.
	nickOf, there := teacherNames(t, srv.URL, code, secret)
	coord.stop()
	stopped = true
	missed := checkNoWaitForDeparted(t, filepath.Join(dataDir, "sessions"), nickOf, there)
	// The student with two batches answered two rounds and left: at
	// most 2 included, and any fewer explained by deadline rounds it was
	// asked in and missed (a late answer spends its batch too; a round
	// asked as it left counts here, and the check above judges it).
	if p, m := person(end, names[runsOut]), missed[names[runsOut]]; p.Rounds > 2 || p.Rounds+m < 2 {
		t.Errorf("the student with %d samples was included in %d rounds and missed %d at their deadline, want 2 answers", 2*batch, p.Rounds, m)
	}
	acc := end.LastEval.Accuracy
	fe := <-firstEval
	t.Logf("%s: Start to the first accuracy: %v; Start to the end of %d rounds: %v; final accuracy %.3f on 1,000 test images; %d attempts of a round discarded",
		alg, fe.Round(100*time.Millisecond), rounds, took.Round(100*time.Millisecond), acc, discarded(t, logf.Name()))
	// Stated bound: the shared-noise lesson measured a final accuracy
	// of 0.620 (Chromium), 0.627 (Firefox), 0.627 and 0.633 (WebKit) at
	// threshold 6, 0.634 and 0.636 in two runs at 7 (docs/browser.md,
	// "Classroom measurements"; docs/secagg.md); the same lesson under
	// nc, 0.556 to 0.578 in seven runs. The spread comes from the noise
	// and from which rounds the reloading and the late student take part
	// in. 0.45 is well below the lowest and far above chance (0.10): it
	// fails a session that stopped learning (a sum that lost its
	// updates, noise that does not cancel), not an unlucky draw.
	if acc < classroomMinAccuracy {
		t.Errorf("final accuracy %.3f, want >= %.2f", acc, classroomMinAccuracy)
	}
}

// phoneTab opens a tab at phone size (390x844, mobile where the engine
// emulates it; WebKit's MiniBrowser cannot be narrower than 447 px).
func phoneTab(newTab func() (tab, error)) (tab, error) {
	p, err := newTab()
	if err != nil {
		return nil, err
	}
	if _, err := p.viewport(390, 844, true); err != nil {
		return nil, err
	}
	return p, nil
}

// phoneScreenCheck returns the check of one screen of the first student's phone (in
// every engine): it opened at its top (the test
// scrolled the screen before to its bottom), its primary button lies
// inside the first screen, the lobby says "Waiting for your teacher"
// once; Firefox's and WebKit's first screens are kept as
// phone-<screen>-<engine>.png (Chromium's are TestPhoneScreens'; the
// data screen's with the pictures stored).
func phoneScreenCheck(t *testing.T, engine, shots string) func(p tab, screen, button string) error {
	return func(p tab, screen, button string) error {
		t.Helper()
		// With pictures stored ("data-ready") the test scrolled to
		// "Start helping" itself: back to the top for the picture.
		ready := screen == "data-ready"
		if ready {
			if err := p.eval(`window.scrollTo(0, 0)`, nil); err != nil {
				return err
			}
		}
		var r struct {
			ScrollY, Bottom, Inner float64
			Text                   string
		}
		if err := p.eval(fmt.Sprintf(`(b => ({scrollY, inner: innerHeight, text: document.body.innerText,
  bottom: b ? b.getBoundingClientRect().bottom + scrollY : 0}))(document.querySelector(%q || null))`, button), &r); err != nil {
			return err
		}
		if r.ScrollY != 0 && !ready {
			t.Errorf("%s: the phone's %s screen opened scrolled down by %.0f px", engine, screen, r.ScrollY)
		}
		if r.Bottom > r.Inner {
			t.Errorf("%s: the %s screen's %s ends at %.0f px, below the first %.0f px", engine, screen, button, r.Bottom, r.Inner)
		}
		if n := strings.Count(r.Text, "Waiting for your teacher"); screen == "lobby" && n != 1 {
			t.Errorf("%s: the lobby says \"Waiting for your teacher\" %d times, want once", engine, n)
		}
		if engine != "chromium" && screen != "data" {
			if err := p.screenshot(filepath.Join(shots, shotName(engine, "phone-"+strings.TrimSuffix(screen, "-ready"))), false); err != nil {
				return err
			}
		}
		return p.eval(`window.scrollTo(0, document.documentElement.scrollHeight)`, nil)
	}
}

// teacherNames maps device ids to nicknames (the teacher's status), and
// says which were still there (not left, gone or removed) at the end.
func teacherNames(t *testing.T, base, code, secret string) (map[string]string, map[string]bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/status?code="+code, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.TeacherHeader, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st view.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	names, there := map[string]string{}, map[string]bool{}
	for _, p := range st.People {
		if p.Device == "" {
			t.Fatalf("the teacher's status has no device id for %q", p.Nickname)
		}
		names[p.Device] = p.Nickname
		there[p.Device] = p.State != "left" && p.State != "gone" && p.State != "removed"
	}
	return names, there
}

// checkNoWaitForDeparted reads the session's round records from the
// stopped coordinator's store (under dir) and checks that no round
// closed at its deadline waiting only for students who had left: a
// cohort member a deadline round did not include is "late" if it took
// part in a later round or was still there at the end (there: it was
// only slow; on a loaded 2-core machine pages miss the lesson's 8 s
// deadline; logged), "departed" otherwise. A deadline round whose missing members are all departed
// waited for someone who had left (the coordinator must drop a departed
// page from its round at once): an error. (Before, any round at its
// deadline failed the test; with three engines on a busy machine, slow
// pages did.) It returns how many deadline rounds each nickname was
// asked in and not included.
func checkNoWaitForDeparted(t *testing.T, dir string, names map[string]string, there map[string]bool) map[string]int {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*", "session.db"))
	if err != nil || len(paths) != 1 {
		t.Fatalf("session stores under %s: %v %v", dir, paths, err)
	}
	st, err := store.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.Rounds(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	lastIn := map[string]int{} // device -> last round it was included in
	for _, r := range recs {
		for _, id := range r.Included {
			lastIn[id] = r.T
		}
	}
	missed := map[string]int{}
	for _, r := range recs {
		if !r.DeadlineHit {
			continue
		}
		var late, departed []string
		for _, id := range r.Cohort {
			if slices.Contains(r.Included, id) {
				continue
			}
			missed[names[id]]++
			if lastIn[id] > r.T || there[id] {
				late = append(late, names[id])
			} else {
				departed = append(departed, names[id])
			}
		}
		switch {
		case len(late) == 0:
			t.Errorf("round %d (cohort %d, included %d) closed at its deadline waiting only for %q, who took part in no later round", r.T, len(r.Cohort), len(r.Included), departed)
		default:
			t.Logf("round %d closed at its deadline: %q answered late (the machine's load), %q took part in no later round", r.T, late, departed)
		}
	}
	return missed
}

// classroomMinAccuracy: see TestClassroom.
const classroomMinAccuracy = 0.45

// sharedClassThreshold is the threshold of TestClassroom's shared-noise
// lesson (see TestClassroom: above half the class of ten, one below the
// default).
const sharedClassThreshold = 6

// classmatesRE reads the page's words on how many classmates share the
// noise in a round (ui.Classmates).
var classmatesRE = regexp.MustCompile(`you and (\d+) classmates? share the noise`)

// classmatesIn returns each number of classmates text says share the
// noise.
func classmatesIn(text string) []int {
	var ks []int
	for _, m := range classmatesRE.FindAllStringSubmatch(text, -1) {
		k, err := strconv.Atoi(m[1])
		if err == nil {
			ks = append(ks, k)
		}
	}
	return ks
}

// sharedChecks checks the status lines the first student's page showed
// in TestClassroom's shared-noise lesson (class students): it said a
// round included its scrambled update, and how many classmates share the noise of
// a round: all the others in some round (round 1's cohort is the whole
// class), at most the eight who can be left once three have gone (seven
// and the late student) in some round, and never fewer than the
// threshold nor more than the class.
func sharedChecks(t *testing.T, statuses []string, students int) {
	t.Helper()
	all := strings.Join(statuses, "\n")
	if !strings.Contains(all, "included your scrambled update") {
		t.Errorf("no status line said a round included the page's scrambled update:\n%s", all)
	}
	ks := classmatesIn(all)
	seen := map[int]int{}
	for _, k := range ks {
		seen[k]++
		if k+1 < sharedClassThreshold || k+1 > students {
			t.Errorf("a status line says you and %d classmates share the noise: want %d to %d phones in a round", k, sharedClassThreshold, students)
		}
	}
	fewer := false
	for k := range seen {
		fewer = fewer || k+1 <= students-2
	}
	if seen[students-1] == 0 || !fewer {
		t.Errorf("the page said how many classmates share the noise %v (classmates: rounds): want %d in some round and at most %d in another, after three left",
			seen, students-1, students-3)
	}
	t.Logf("the first student's page: classmates who share the noise: rounds %v", seen)
}

// discarded counts the rounds the coordinator whose log is at path
// discarded (a shared-noise round below its threshold runs again).
func discarded(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("coordinator log: %v", err)
		return 0
	}
	return strings.Count(string(b), `msg="round discarded`)
}

// person returns the status entry of nickname.
func person(st view.Status, nickname string) view.Person {
	for _, p := range st.People {
		if p.Nickname == nickname {
			return p
		}
	}
	return view.Person{}
}

// joinTab is joinSteps in any engine: the bare URL, the code typed into
// the join box, consent with a nickname, data (the demo shard, or files
// if given), "Start helping"; then it waits for the element until (the
// lobby or the training screen). check, if not nil, is called on each
// screen once it shows, with the screen's primary button.
func joinTab(p tab, base, code, nickname string, files []string, until string, check func(p tab, screen, button string) error) error {
	if err := openTab(p, base); err != nil {
		return err
	}
	return joinOpened(p, code, nickname, files, until, check)
}

// openTab loads the page (the program compiles here, the slow part on a
// busy machine) up to the code box.
func openTab(p tab, base string) error {
	if err := p.navigate(base + "/"); err != nil {
		return fmt.Errorf("opening the page: %w", err)
	}
	if err := waitVisible(p, 90*time.Second, "#code-input"); err != nil {
		return fmt.Errorf("opening the page: %w", err)
	}
	return nil
}

// joinOpened is joinTab on a page openTab has loaded.
func joinOpened(p tab, code, nickname string, files []string, until string, check func(p tab, screen, button string) error) error {
	if check == nil {
		check = func(tab, string, string) error { return nil }
	}
	steps := []func() error{
		func() error { return check(p, "join", "#code-btn") },
		func() error { return setValue(p, "#code-input", code) },
		func() error { return p.click("#code-btn") },
		func() error { return waitVisible(p, 90*time.Second, "#consent") },
		func() error { return check(p, "consent", "#join-btn") },
		func() error { return setValue(p, "#nickname", nickname) },
		func() error { return p.click("#join-btn") },
		func() error { return waitVisible(p, 90*time.Second, "#data") },
		func() error { return check(p, "data", "") },
		func() error {
			if files != nil {
				return p.setFiles("#files", files)
			}
			return p.click("#demo-btn")
		},
		func() error {
			return waitFor(p, 2*time.Minute, "pictures stored", `Number((document.getElementById("data-count")||{}).textContent) > 0`)
		},
		func() error { return check(p, "data-ready", "#train-btn") },
		func() error { return p.click("#train-btn") },
		func() error { return waitVisible(p, 3*time.Minute, until) },
		func() error { return check(p, strings.TrimPrefix(until, "#"), "") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return nil
}

// logTail logs the last n lines of the coordinator's log at path other
// than its per-round lines: why a lesson stopped.
func logTail(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Logf("coordinator log: %v", err)
		return
	}
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, `msg="round started"`) && !strings.Contains(l, `msg="round committed"`) && !strings.Contains(l, "msg=evaluated") {
			keep = append(keep, l)
		}
	}
	keep = keep[max(0, len(keep)-n):]
	t.Logf("the coordinator's log (%s), last %d lines but the rounds':\n%s", path, len(keep), strings.Join(keep, "\n"))
}

// TestClassroomLesson measures one lesson: ten pages join the default
// demo session (cmd/coordinator -lobby with its default template: the
// "one lesson" preset sizes it at Start to M = m = 10, T = 200, 8 s
// deadline, 1 s between rounds) and train to the end. It takes minutes,
// so plain `go test ./...` skips it; `make test` (and so CI) runs it with
// BFL_LESSON=1:
//
//	BFL_LESSON=1 go test ./e2e -run TestClassroomLesson -count=1 -v -timeout 30m
//
// It logs the wall time from Start to the end and the final accuracy
// (docs/browser.md, "Classroom measurements"); it asserts only that
// the session ends with all its rounds.
//
// BFL_LESSON_GAP (a duration) replaces the coordinator's 1 s pause
// between rounds: make test sets it to 100ms, so CI's lesson runs the
// same 200 rounds with the same pages, preset and checks but does not
// spend 199 s waiting on a fixed timer (the pause is a plain sleep after
// each commit, with nothing to check; TestClassroom runs with a 500 ms
// one). Without it the lesson keeps the product's default, as measured
// in docs/browser.md.
func TestClassroomLesson(t *testing.T) {
	if os.Getenv("BFL_LESSON") != "1" {
		t.Skip("a whole lesson (minutes): set BFL_LESSON=1")
	}
	const code = "LESSON10"
	args := []string{"-lobby", "-join-code", code, "-dataset", fashionDir}
	gap := "the default"
	if g := os.Getenv("BFL_LESSON_GAP"); g != "" {
		if d, err := time.ParseDuration(g); err != nil || d < 0 {
			t.Fatalf("BFL_LESSON_GAP %q: want a duration >= 0", g)
		}
		args, gap = append(args, "-round-gap", g), g
	}
	// BFL_LESSON_ARGS adds coordinator flags: the same lesson over
	// another algorithm or features, e.g. "-features scatter -algorithm
	// shared" (docs/features.md). A measurement, as the gap.
	extra := strings.Fields(os.Getenv("BFL_LESSON_ARGS"))
	args = append(args, extra...)
	webDir := pageBuild(t)
	bin := coordinatorBinary(t)
	const students = 10
	logf, err := os.CreateTemp("", "browserfl-e2e-lesson-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dataDir := t.TempDir()
	coord := &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: dataDir, log: logf, args: args}
	coord.start()
	defer coord.stop()
	secret := teacherSecretIn(t, dataDir)
	srv := serve(t, pageHandler(webDir, proxyTo(coord.addr)))
	tabs := make([]*browser, students)
	defer func() {
		for _, s := range tabs {
			if s != nil {
				s.close()
			}
		}
	}()
	// BFL_LESSON_THROTTLE=1 makes every phone a slow one (CPU 4 times
	// slower, 150 ms latency, 1.6 Mbit/s down and 0.75 up): the command
	// that measures Start -> first accuracy with throttled phones
	// (docs/browser.md). It is a measurement, not a check.
	throttled := os.Getenv("BFL_LESSON_THROTTLE") == "1"
	phones := "phones as they are"
	if throttled {
		phones = "throttled phones (CPU x4, 150 ms, 1.6/0.75 Mbit/s)"
	}
	for i := range tabs {
		if tabs[i], err = phone(t); err != nil {
			t.Fatal(err)
		}
		if throttled {
			tabs[i].must(20*time.Second, "throttle", emulation.SetCPUThrottlingRate(4),
				network.EmulateNetworkConditions(false, 150, 1.6e6/8, 0.75e6/8))
		}
		tabs[i].must(3*time.Minute, "join",
			append(joinSteps(srv.URL, code, fmt.Sprintf("Student %d", i+1), nil), chromedp.WaitVisible("#lobby", chromedp.ByID))...)
	}
	dash := launch(t, t.TempDir())
	defer dash.close()
	dash.must(60*time.Second, "dashboard", chromedp.EmulateViewport(1920, 1080),
		chromedp.Navigate(srv.URL+"/dashboard?code="+code+"&teacher="+secret),
		chromedp.WaitVisible("#btn-start", chromedp.ByID),
		chromedp.Click("#btn-start", chromedp.ByID))
	started := time.Now()
	var st view.Status
	var firstEval time.Duration
	// A lesson that stops moving for 3 minutes has failed: say so then,
	// with what the coordinator logged, rather than at 25 minutes.
	moved, last := time.Now(), -1
	for time.Since(started) < 25*time.Minute && time.Since(moved) < 3*time.Minute {
		if err := getJSON(srv.URL+"/api/status?code="+code, &st); err != nil {
			t.Fatal(err)
		}
		if firstEval == 0 && st.LastEval != nil {
			firstEval = time.Since(started)
		}
		if st.State == coordinator.StateEnded {
			break
		}
		if st.Committed != last {
			moved, last = time.Now(), st.Committed
		}
		time.Sleep(250 * time.Millisecond)
	}
	took := time.Since(started)
	if st.State != coordinator.StateEnded || st.Committed != st.Session.Rounds {
		logTail(t, logf.Name(), 30)
		t.Fatalf("after %v: state %q, %d of %d rounds", took, st.State, st.Committed, st.Session.Rounds)
	}
	var recs []classRound
	if err := getJSON(srv.URL+"/api/rounds?code="+code, &recs); err != nil {
		t.Fatal(err)
	}
	hits := 0
	for _, r := range recs {
		if r.DeadlineHit != nil && *r.DeadlineHit {
			hits++
		}
	}
	acc := 0.0
	if st.LastEval != nil {
		acc = st.LastEval.Accuracy
	}
	t.Logf("one lesson, %d pages, %s: M %d, m %d, T %d, deadline %d ms, %s round gap, flags %q; Start to the end %v; first accuracy %v after Start; final accuracy %.3f; %d rounds closed at their deadline",
		students, phones, st.Session.M, st.Session.Cohort, st.Session.Rounds, st.Session.DeadlineMillis, gap, extra,
		took.Round(time.Second), firstEval.Round(100*time.Millisecond), acc, hits)
	// The figure the docs keep (docs/browser.md), on a line of its own.
	t.Logf("first accuracy after Start: %.1f s", firstEval.Seconds())
}
