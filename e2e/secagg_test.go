package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"browserfl/coordinator/view"
	"browserfl/device"
)

// TestSharedNoiseEveryEngine runs a shared-noise session (secure
// aggregation) in each engine: the page, in its Worker, and two native
// devices make the cohort of 3 (threshold 2) of the real coordinator
// (cmd/coordinator -algorithm shared), and both rounds commit with the
// page's masked release in the sum: the dashboard counts the page in 2
// rounds. The page's status line says it sent its update. The lobby's
// plan is for 10 phones a round, so the default threshold (70%) is 7 of
// them on the consent screen; the teacher's Start sizes the lesson to the
// 3 devices present, threshold 3, and from then on the page says 3.
//
// The page, on a phone-sized screen (390x844), states the session's two
// figures as the dashboard's status gives them (plan.SessionFigures):
// its consent screen says both with the Join button inside the first
// screen, its meter both and how many classmates share the noise (you
// and 2), its status that the update left scrambled and its last word
// that both rounds hold it, "what your phone sent" that only a scrambled
// form left; no screen shows a technical word (ui.TechnicalWords).
func TestSharedNoiseEveryEngine(t *testing.T) {
	t.Parallel() // docs/browser.md, "Parallel browser tests"
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { t.Parallel(); sharedNoisePage(t, e) })
	}
}

func sharedNoisePage(t *testing.T, e engine) {
	webDir := pageBuild(t)
	newTab := e.start(t)
	all := fashionTest(t)
	code := "SHARED" + strings.ToUpper(e.name[:1])
	o := startOnePage(t, webDir, code, "-lobby", "-algorithm", "shared", "-M", "10", "-m", "10",
		"-min-devices", "3", "-deadline", "20s", "-T", "2", "-b", "32", "-demo-shards", "4")
	p, err := phoneTab(newTab)
	if err != nil {
		t.Fatal(err)
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(pageFailure(p, what, err))
		}
	}
	pv := o.status().Privacy
	if !pv.Shared || pv.PromiseText == "" || pv.FloorText == "" || pv.Threshold != 7 {
		t.Fatalf("the status JSON's privacy %+v: want a shared-noise session's two figures, threshold 7 (the lobby's plan)", pv)
	}
	shots := screenshotDir(t)
	consent := func(p tab, screen, button string) error {
		if screen != "consent" {
			return nil
		}
		var r struct {
			Bottom, Inner float64
			Text          string
		}
		if err := p.eval(`(b => ({bottom: b.getBoundingClientRect().bottom + scrollY, inner: innerHeight,
  text: document.getElementById("consent").innerText}))(document.getElementById("join-btn"))`, &r); err != nil {
			return err
		}
		if r.Bottom > r.Inner {
			t.Errorf("the Join button ends %.0f px from the top, below the first screen (%.0f px)", r.Bottom, r.Inner)
		}
		for _, w := range []string{"If the other phones are real, this lesson uses at most ε = " + pv.PromiseText +
			"; if they were fake, at most ε = " + pv.FloorText + ".", "a scrambled form of what the page learned"} {
			if !strings.Contains(r.Text, w) {
				t.Errorf("the consent screen lacks %q:\n%s", w, r.Text)
			}
		}
		checkStudentScreen(t, p, "consent")
		shot := filepath.Join(shots, shotName(e.name, "shared-consent"))
		t.Logf("consent screenshot %s", shot)
		return p.screenshot(shot, false)
	}
	must("join", joinTab(p, o.url, code, "Ada", nil, "#lobby", consent))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i, name := range []string{"Bea", "Cy"} {
		rt, err := device.New(ctx, device.Config{URL: "ws://" + o.coord.addr + "/ws", JoinCode: code, Nickname: name,
			Storage: &device.MemStorage{}, Data: all.Samples[i*500 : (i+1)*500]})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); rt.Run(ctx) }()
	}
	o.waitStatus("three devices in the lobby", time.Minute, func(st view.Status) bool { return st.Devices.Connected >= 3 })
	must("the status recorder", p.eval(statusRecorder, nil))
	// The meter's second figure as it changes: it says how many share the
	// noise while rounds run, and no longer once the session finished.
	must("the meter recorder", p.eval(`(() => { window.__floor = [];
  const note = () => { const e = document.getElementById("eps-floor"); const w = e ? e.textContent : "";
    if (w && window.__floor[window.__floor.length - 1] !== w) window.__floor.push(w); };
  note(); new MutationObserver(note).observe(document, {subtree: true, childList: true, characterData: true}); return true; })()`, nil))
	dash := sharedNoiseDashboard(t, newTab, o)
	// Paused at once, the session stays in the dashboard's training view
	// until the dashboard has shown it; then it runs to its end.
	o.teacher("start")
	o.teacher("pause")
	fin := o.status().Privacy // the final figures, sized at Start
	if !fin.Shared || fin.Threshold != 3 {
		t.Fatalf("after Start the status JSON's privacy %+v: want threshold 3 of the 3 devices", fin)
	}
	dash.shown()
	o.teacher("resume")
	st := o.waitStatus("the session's end", 4*time.Minute, func(st view.Status) bool { return st.Finished })
	if st.Committed != 2 {
		t.Errorf("%d rounds committed, want 2 (coordinator log %s)", st.Committed, o.logf.Name())
	}
	for _, person := range st.People {
		if person.Rounds != 2 {
			t.Errorf("%s was included in %d rounds, want 2 (coordinator log %s)", person.Nickname, person.Rounds, o.logf.Name())
		}
	}
	// The page's last word, once its runtime has heard the end, counts
	// the rounds that hold its update; the statuses of the rounds may
	// each be replaced within the page's publishing interval on a loaded
	// machine, the last word stays.
	must("the page's last word", waitFor(p, time.Minute, "the page's last word",
		`(document.getElementById("status") || {}).textContent.startsWith("The session has finished")`))
	var words struct{ Floor, Floors, Exact, Sent, Statuses, Last string }
	must("the training screen", p.eval(`({floor: (document.getElementById("eps-floor") || {}).textContent || "",
  exact: (document.getElementById("eps-exact") || {}).textContent || "", floors: window.__floor.join("\n"),
  sent: (document.getElementById("sent-words") || {}).textContent || "", statuses: window.__status.join("\n"),
  last: document.getElementById("status").textContent})`, &words))
	if w := "Even if the other phones were fake, your own noise keeps it at most ε = " + fin.FloorText; !strings.Contains(words.Floor, w) {
		t.Errorf("the meter's second figure %q lacks %q", words.Floor, w)
	}
	if w := "In this round, you and 2 classmates share the noise."; !strings.Contains(words.Floors, w) {
		t.Errorf("the meter's second figure never said %q while rounds ran:\n%s", w, words.Floors)
	}
	if strings.Contains(words.Floor, "In this round") {
		t.Errorf("the meter's second figure %q still speaks of a round after the session finished", words.Floor)
	}
	if want := "Your scrambled, noisy updates are in 2 rounds of the class model."; !strings.Contains(words.Last, want) {
		t.Errorf("the page's last word %q lacks %q", words.Last, want)
	}
	if !strings.Contains(words.Statuses, "you and 2 classmates share the noise") {
		t.Errorf("no status line said how many classmates share the noise:\n%s", words.Statuses)
	}
	if !strings.Contains(words.Sent, "Only a scrambled form of the right one left your phone") {
		t.Errorf("\"what your phone sent\" says %q", words.Sent)
	}
	// The threshold the page states is the final one, not the lobby's.
	for what, text := range map[string]string{"the meter's meaning": words.Exact, "\"what your phone sent\"": words.Sent} {
		if want := "the total of at least 3 phones"; !strings.Contains(text, want) {
			t.Errorf("%s says %q, want %q (the threshold sized at Start)", what, text, want)
		}
	}
	checkStudentScreen(t, p, "training")
	shot := filepath.Join(shots, shotName(e.name, "shared-noise"))
	must("a screenshot", p.screenshot(shot, false))
	t.Logf("screenshot %s", shot)
	dash.check(e, fin)
}

// sharedNoiseDashboard opens the teacher's dashboard of the shared-noise
// session o in its lobby, and records its privacy words as the training
// view shows them (a MutationObserver keeps the last text of each). Its
// check, called once the session ended, reads them and the summary's: the session's two figures as the status gives them (pv, from
// plan.SessionFigures), in the privacy table's worst case (the promise if
// the other devices are real, the floor from a device's own noise alone),
// the sentences of the training view and the summary (a sum of at least
// the threshold's devices, the promise, the floor) and the summary's
// figure pair, never a device-noise session's one-figure line.
func sharedNoiseDashboard(t *testing.T, newTab func() (tab, error), o *onePage) sharedDashboard {
	t.Helper()
	d, err := newTab()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.viewport(1280, 800, false); err != nil {
		t.Fatal(err)
	}
	if err := d.navigate(o.url + "/dashboard?code=" + o.code + "&teacher=" + o.secret); err != nil {
		t.Fatal(err)
	}
	if err := d.eval(`(() => { window.__priv = {table: "", words: "", views: "", overlap: null};
  const keep = () => { for (const [k, id] of [["table", "privacy"], ["words", "priv-words"]]) {
    const v = (document.getElementById(id) || {}).textContent || ""; if (v) window.__priv[k] = v; }
    const w = document.body.dataset.view || "-"; if (!window.__priv.views.endsWith(w)) window.__priv.views += " " + w;
    if (w === "summary" && !window.__priv.overlap) { const o = `+tilesOverlap+`; if (o.length) window.__priv.overlap = o; } };
  new MutationObserver(keep).observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true}); keep(); })()`, nil); err != nil {
		t.Fatalf("the dashboard's recorder: %v", err)
	}
	return sharedDashboard{t: t, d: d}
}

// tilesOverlap is a JavaScript expression: the summary's class-model
// tiles that overlap the sentence above them or leave their panel, each
// with its place.
const tilesOverlap = `(() => { const box = document.getElementById("sum-tiles");
  const note = document.getElementById("sum-pics-note").getBoundingClientRect(), side = box.parentNode.getBoundingClientRect();
  return [...box.children].flatMap((c, i) => { const r = c.getBoundingClientRect();
    return r.top < note.bottom - 1 || r.bottom > side.bottom + 1 ? ["tile " + i + " at " + Math.round(r.top) + "-" + Math.round(r.bottom) +
      " (the sentence ends at " + Math.round(note.bottom) + ", the panel at " + Math.round(side.bottom) + ")"] : []; }); })()`

// sharedDashboard is the dashboard tab of sharedNoiseDashboard.
type sharedDashboard struct {
	t *testing.T
	d tab
}

// shown waits until the dashboard has shown its training view's privacy
// table (a generous wait for a loaded machine, not a limit asserted).
func (s sharedDashboard) shown() {
	s.t.Helper()
	end := time.Now().Add(time.Minute)
	for {
		var table string
		if err := s.d.eval("window.__priv.table", &table); err != nil {
			s.t.Fatalf("reading the dashboard: %v", err)
		}
		if table != "" {
			return
		}
		if time.Now().After(end) {
			var views string
			s.d.eval("window.__priv.views", &views)
			s.t.Fatalf("the dashboard never showed its privacy table (views %s)", views)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// check reads the dashboard once the session ended and checks its
// privacy words against pv.
func (s sharedDashboard) check(e engine, pv view.PrivacyView) {
	t, d := s.t, s.d
	t.Helper()
	var r struct{ Table, Words, Summary, Eps string }
	read := `(id => ({table: window.__priv.table, words: window.__priv.words, summary: id("sum-priv-words"), eps: id("sum-eps")}))(
  id => (document.getElementById(id) || {}).textContent || "")`
	end := time.Now().Add(time.Minute) // a generous wait for a loaded machine, not a limit asserted
	for {
		if err := d.eval(read, &r); err != nil {
			t.Fatalf("reading the dashboard: %v", err)
		}
		if r.Summary != "" || time.Now().After(end) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	promise := "ε at most " + pv.PromiseText + " if the other devices are real; ε at most " + pv.FloorText + " from a device's own noise alone"
	if !strings.Contains(r.Table, promise) {
		t.Errorf("the dashboard's privacy table lacks %q:\n%s", promise, r.Table)
	}
	if strings.Contains(r.Table, "ε at most "+pv.PromiseText+" (smaller") {
		t.Errorf("the dashboard's privacy table gives a device-noise session's one figure:\n%s", r.Table)
	}
	for _, w := range []string{fmt.Sprintf("of at least %d devices", pv.Threshold), "If they are real devices, ε is at most " + pv.PromiseText + ".",
		"each device's own noise alone still keeps ε at most " + pv.FloorText + "."} {
		if !strings.Contains(r.Words, w) {
			t.Errorf("the dashboard's privacy words lack %q:\n%s", w, r.Words)
		}
		if !strings.Contains(r.Summary, w) {
			t.Errorf("the dashboard's summary privacy words lack %q:\n%s", w, r.Summary)
		}
	}
	if want := pv.PromiseText + " / " + pv.FloorText; r.Eps != want {
		t.Errorf("the dashboard's summary gives ε %q, want %q", r.Eps, want)
	}
	// The class model's tiles take the room the summary's words leave:
	// none overlaps the sentence above them or leaves the panel, at any
	// moment the summary showed (the recorder looked after each change of
	// the page) or once they are drawn.
	var tiles struct {
		N    int
		Seen []string
	}
	for end := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err := d.eval(`({n: document.getElementById("sum-tiles").children.length, seen: window.__priv.overlap || `+tilesOverlap+`})`, &tiles); err != nil {
			t.Fatalf("reading the summary's tiles: %v", err)
		}
		if tiles.N > 0 || time.Now().After(end) {
			break
		}
	}
	if tiles.N == 0 {
		t.Error("the summary never drew the class model's tiles")
	}
	for _, o := range tiles.Seen {
		t.Errorf("the summary's %s", o)
	}
	shot := filepath.Join(screenshotDir(t), shotName(e.name, "shared-dashboard"))
	if err := d.screenshot(shot, false); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard screenshot %s", shot)
	if dir := os.Getenv("BFL_KEEP_SHOTS"); dir != "" {
		b, _ := os.ReadFile(shot)
		os.WriteFile(filepath.Join(dir, filepath.Base(shot)+"-"+e.name+".png"), b, 0o644)
	}
}
