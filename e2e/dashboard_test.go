package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/view"
	"browserfl/device"
	"browserfl/internal/loopback"
)

// nicknames are the class of TestDashboardLayout (30 devices), and the
// first names of the other projector tests' devices.
var nicknames = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Linus", "Radia", "Ken",
	"Dennis", "Frances", "John", "Katherine", "Tim", "Sophie", "Guido", "Hedy", "Claude", "Annie", "Niklaus",
	"Shafi", "Leslie", "Whitfield", "Martin", "Joan", "Fernando", "Yukihiro", "Bjarne", "Anita"}

// layout is what the browser reports about the page's geometry.
type layout struct {
	ScrollW, ScrollH, InnerW, InnerH float64
	View                             string
	Outside                          []string // elements or canvas labels outside the viewport or their box
	Clipped                          []string // sections whose content is cut
	Covered                          float64  // share of the area below the header covered by visible sections
	SpanW, SpanH                     float64  // extent of the visible sections / the area below the header
	Texts                            int      // canvas labels checked
}

const layoutJS = `(() => {
  const W = innerWidth, H = innerHeight, out = [], clipped = [];
  const inside = (r, w, h) => r.left >= -0.5 && r.top >= -0.5 && r.right <= w + 0.5 && r.bottom <= h + 0.5;
  const view = document.querySelector("body").dataset.view;
  const main = document.getElementById(view === "summary" ? "summary" : view);
  let texts = 0;
  for (const c of main.querySelectorAll("canvas")) {
    const r = c.getBoundingClientRect();
    if (!inside(r, W, H)) out.push("canvas #" + c.id);
    for (const b of (window.dashTextBoxes[c.id] || [])) {
      texts++;
      if (b.x < -0.5 || b.y < -0.5 || b.x + b.w > c.clientWidth + 0.5 || b.y + b.h > c.clientHeight + 0.5)
        out.push("label '" + b.text + "' of #" + c.id);
    }
  }
  for (const el of document.querySelectorAll(".legend li, header > *, #controls button")) {
    if (el.offsetParent === null) continue;
    if (!inside(el.getBoundingClientRect(), W, H)) out.push(el.id || el.className || el.textContent);
  }
  // The view's sections, and the bands shown between the header and
  // the view (the message, the warnings, the teacher's flagged devices).
  const bands = [...document.querySelectorAll("body > .msg, body > section.flags")].filter(e => !e.hidden && e.offsetParent !== null);
  const secs = [...bands, ...main.querySelectorAll(":scope > section")];
  const top = document.querySelector("header").getBoundingClientRect().bottom;
  let area = 0, l = W, r = 0, t = H, b = 0;
  for (const s of secs) {
    const q = s.getBoundingClientRect();
    area += q.width * q.height; l = Math.min(l, q.left); r = Math.max(r, q.right); t = Math.min(t, q.top); b = Math.max(b, q.bottom);
    if (!inside(q, W, H)) out.push("section " + (s.id || s.className));
    // Content cut off: a section's own content wider or taller than it
    // (the nickname lists scroll on purpose and are not counted).
    if (s.scrollWidth > s.clientWidth + 1 || s.scrollHeight > s.clientHeight + 1) clipped.push((s.id || s.className) + " " + s.scrollWidth + "x" + s.scrollHeight + " in " + s.clientWidth + "x" + s.clientHeight);
  }
  const free = W * (H - top);
  return {ScrollW: document.documentElement.scrollWidth, ScrollH: document.documentElement.scrollHeight, InnerW: W, InnerH: H,
    View: view, Outside: out, Clipped: clipped, Covered: area / free, SpanW: (r - l) / W, SpanH: (b - t) / (H - top), Texts: texts};
})()`

func (b *browser) layout(t *testing.T) layout {
	t.Helper()
	return pageLayout(t, &chromiumTab{b})
}

func pageLayout(t *testing.T, p tab) layout {
	t.Helper()
	var l layout
	if err := p.eval(layoutJS, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func checkLayout(t *testing.T, name string, l layout, view string) {
	t.Helper()
	if l.View != view {
		t.Errorf("%s: view %q, want %q", name, l.View, view)
	}
	if l.ScrollW > l.InnerW || l.ScrollH > l.InnerH {
		t.Errorf("%s: page %vx%v overflows the %vx%v viewport", name, l.ScrollW, l.ScrollH, l.InnerW, l.InnerH)
	}
	if len(l.Outside) > 0 {
		t.Errorf("%s: outside the viewport or their canvas: %q", name, l.Outside)
	}
	if len(l.Clipped) > 0 {
		t.Errorf("%s: sections whose content is cut: %q", name, l.Clipped)
	}
	// No empty half: the sections reach across the screen and cover
	// most of it.
	if l.SpanW < 0.95 || l.SpanH < 0.9 || l.Covered < 0.7 {
		t.Errorf("%s: sections span %.0f%% x %.0f%% and cover %.0f%% of the screen below the header", name, 100*l.SpanW, 100*l.SpanH, 100*l.Covered)
	}
	if view != "lobby" && l.Texts == 0 {
		t.Errorf("%s: no canvas labels were drawn", name)
	}
}

// shotName is a screenshot's file name in docs/screenshots: Chromium's
// keep their names, the other engines' carry theirs.
func shotName(engine, name string) string {
	if engine == "chromium" {
		return name + ".png"
	}
	return name + "-" + engine + ".png"
}

// decodeQR returns what zbarimg reads from the QR codes in a PNG.
func decodeQR(t *testing.T, png string) []string {
	t.Helper()
	zbar, err := exec.LookPath("zbarimg")
	if err != nil {
		t.Fatalf("zbarimg: %v (scripts/setup.sh --browser installs zbar-tools)", err)
	}
	out, err := exec.Command(zbar, "--raw", "-q", png).Output()
	if err != nil {
		// Exit status 4: no code found.
		return nil
	}
	return strings.Fields(string(out))
}

// TestDashboardLayout loads the projector dashboard in each engine
// (subtests chromium, firefox, webkit) at 1920x1080 and 1280x720 in
// every view of a real lesson: the real coordinator (cmd/coordinator
// -lobby, listening on every address so that the dashboard shows the
// join QR code; newDashClass) with a class of 30 devices (29 native
// device runtimes with nicknames and a hostile device whose updates the
// coordinator rejects), every page request through a proxy that only
// records what the page sent (teacherLog).
//
//   - lobby, without the teacher secret: the 30 nicknames, no teacher
//     buttons;
//   - the teacher's lobby: Start shown, pressed on the page, and the
//     lesson starts;
//   - training, with the secret, once the class shows every state a
//     device can be in (active, stuck: three devices never answer,
//     left: two say they stop, gone: one drops its connection, and the
//     hostile device under "Check these devices"): the secret left the
//     address bar, is never shown and goes with every status request;
//     Pause and End shown, Start, Resume and New not; Pause pressed on
//     the page pauses the lesson;
//   - training with the devices warning (ten more devices leave: 14
//     active, fewer than the cohort of 15); Resume pressed on the page;
//   - the summary, without the secret, after the lesson ran its 40
//     rounds: the figures of the coordinator's status, the model's
//     download link.
//
// In each: nothing overflows, every chart label and legend lies inside
// the screen, the sections fill it (checkLayout); where the view shows
// the join QR code, it decodes (zbarimg) from the screenshot to the
// coordinator's join address. Screenshots: go test ./e2e -run
// TestDashboardLayout -args -screenshots writes docs/screenshots
// (Chromium's under their old names, the others' with the engine's name).
func TestDashboardLayout(t *testing.T) {
	t.Parallel() // waits on rounds most of its time (docs/browser.md, "Parallel browser tests")
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { t.Parallel(); dashboardLayout(t, e) })
	}
}

// The class of TestDashboardLayout: indices into nicknames.
const (
	dashHostile = 10 // sends updates far above the norm bound (hostileDevice)
	dashGone    = 29 // drops its connection without a word
)

var (
	dashStuck = []int{4, 15, 26}                       // never answer a round
	dashLeft  = []int{7, 20}                           // say they stop
	dashLater = []int{1, 2, 3, 5, 6, 8, 9, 11, 12, 13} // leave while paused: 14 active, fewer than the cohort of 15
)

// teacherLog passes every request to the coordinator and records the
// teacher secret each status request carried and the teacher actions
// posted (with the secret they carried and the coordinator's answer).
type teacherLog struct {
	next    http.Handler
	mu      sync.Mutex
	secrets []string // X-Teacher-Secret of each GET /api/status
	posts   []teacherPost
}

type teacherPost struct {
	Action, Secret string
	Code           int
}

// codeWriter keeps the status code of a response.
type codeWriter struct {
	http.ResponseWriter
	code int
}

func (w *codeWriter) WriteHeader(code int) { w.code = code; w.ResponseWriter.WriteHeader(code) }

func (l *teacherLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/api/status" {
		l.mu.Lock()
		l.secrets = append(l.secrets, r.Header.Get(api.TeacherHeader))
		l.mu.Unlock()
	}
	action, ok := strings.CutPrefix(r.URL.Path, "/api/teacher/")
	if !ok || r.Method != http.MethodPost {
		l.next.ServeHTTP(w, r)
		return
	}
	cw := &codeWriter{ResponseWriter: w, code: http.StatusOK}
	l.next.ServeHTTP(cw, r)
	l.mu.Lock()
	l.posts = append(l.posts, teacherPost{action, r.Header.Get(api.TeacherHeader), cw.code})
	l.mu.Unlock()
}

// sent returns the secrets of the status requests since the last call,
// and the teacher actions so far.
func (l *teacherLog) sent() ([]string, []teacherPost) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.secrets
	l.secrets = nil
	return s, append([]teacherPost(nil), l.posts...)
}

// dashClass is a lesson of the real coordinator with 30 devices.
type dashClass struct {
	t            *testing.T
	code, secret string
	addr         string // the coordinator's, 127.0.0.1:port
	base         string // the recording proxy's URL, which the dashboard loads
	log          *teacherLog
	rts          []*device.Runtime    // by index into nicknames; nil for the hostile device
	stops        []context.CancelFunc // each device's own context
}

// newDashClass starts the coordinator (the projector tests' template:
// Start sizes it to M = 30 and a cohort of 15, with 40 rounds of b = 8
// (each device holds 330 pictures, enough for them all), a 4 s
// deadline and two seconds between rounds, so that the training views
// are checked well before the last round on a busy machine: the test logs
// the round it pauses at) and the 30 devices, and waits until they are in
// the lobby.
func newDashClass(t *testing.T) *dashClass {
	t.Helper()
	const code = "LAYOUT30"
	port := strings.Split(loopback.Addr(t), ":")[1]
	coord, secret := projectorCoordinator(t, "0.0.0.0:"+port, code, "-T", "40", "-b", "8", "-deadline", "4s", "-round-gap", "2s")
	t.Cleanup(coord.stop)
	c := &dashClass{t: t, code: code, secret: secret, addr: "127.0.0.1:" + port}
	c.log = &teacherLog{next: proxyTo(c.addr)}
	c.base = serve(t, c.log).URL

	test := fashionTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	dim := c.status().Session.Dim
	ws := "ws://" + c.addr + "/ws"
	for i, name := range nicknames {
		dctx, stop := context.WithCancel(ctx)
		c.stops = append(c.stops, stop)
		if i == dashHostile {
			c.rts = append(c.rts, nil)
			hostileDevice(dctx, ws, code, name, dim)
			continue
		}
		var hooks *device.Hooks
		if slices.Contains(dashStuck, i) {
			// Connected (pings answered: blocking here instead would hold
			// the reader, and the coordinator would drop it as gone at its
			// ping timeout, a race with the checks below) but silent.
			hooks = &device.Hooks{Withhold: func(int) bool { return true }}
		}
		rt, err := device.New(dctx, device.Config{URL: ws, JoinCode: code, Nickname: name, Storage: &device.MemStorage{},
			Data: test.Samples[i*330 : (i+1)*330], Hooks: hooks})
		if err != nil {
			t.Fatal(err)
		}
		c.rts = append(c.rts, rt)
		wg.Add(1)
		go func() { defer wg.Done(); rt.Run(dctx) }()
	}
	c.waitStatus("30 devices in the lobby", time.Minute, func(st view.Status) bool {
		return len(st.People) == len(nicknames) && peopleIn(st)["lobby"] == len(nicknames)
	})
	return c
}

// status is the coordinator's status (asked directly, not through the
// recording proxy), the teacher's.
func (c *dashClass) status() view.Status {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+c.addr+"/api/status?code="+c.code, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set(api.TeacherHeader, c.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("status: %v", err)
	}
	defer resp.Body.Close()
	var st view.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		c.t.Fatalf("status: %v", err)
	}
	return st
}

// waitStatus polls the status until ok (a generous wait, not a limit
// the test asserts).
func (c *dashClass) waitStatus(what string, d time.Duration, ok func(view.Status) bool) view.Status {
	c.t.Helper()
	end := time.Now().Add(d)
	for {
		st := c.status()
		if ok(st) {
			return st
		}
		if time.Now().After(end) {
			c.t.Fatalf("%s: not within %v (state %q, %d rounds, people %v)", what, d, st.State, st.Committed, peopleIn(st))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// peopleIn counts the status's people by state.
func peopleIn(st view.Status) map[string]int {
	n := map[string]int{}
	for _, p := range st.People {
		n[p.State]++
	}
	return n
}

// dashRun loads the dashboard and checks its screenshots, for
// dashboardLayout.
type dashRun struct {
	t             *testing.T
	b             tab
	c             *dashClass
	engine, shots string
	joinURL       string // what the QR code must read
}

// load opens the dashboard at w x h and waits until view is rendered
// with its QR code loaded.
func (d *dashRun) load(w, h int, query string, view string) {
	t, b := d.t, d.b
	t.Helper()
	d.c.log.sent() // the status requests of this load only
	what := fmt.Sprintf("dashboard %dx%d", w, h)
	got, err := b.viewport(w, h, false)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got != [2]int{w, h} {
		t.Fatalf("%s: the page is %dx%d", what, got[0], got[1])
	}
	if err := b.navigate(d.c.base + "/dashboard?" + query); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	d.rendered(what, view)
}

// rendered waits until view is rendered with its QR code loaded, and
// two frames drawn after.
func (d *dashRun) rendered(what, view string) {
	t, b := d.t, d.b
	t.Helper()
	if err := waitFor(b, 60*time.Second, what, fmt.Sprintf(`document.body.dataset.view === %q && document.body.dataset.rendered === "1" &&
			[...document.querySelectorAll("img.qr")].some(i => i.complete && i.naturalWidth > 0)`, view)); err != nil {
		t.Fatal(pageFailure(b, what, err))
	}
	if err := b.eval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, nil); err != nil {
		t.Fatal(err)
	}
}

// shoot saves a screenshot (kept in docs/screenshots when keep) and,
// where the view shows the join QR code (qr), checks that it scans to
// the join address.
func (d *dashRun) shoot(name string, keep, qr bool) {
	t := d.t
	t.Helper()
	dir := d.shots
	if !keep {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, shotName(d.engine, name))
	if err := d.b.screenshot(path, true); err != nil {
		t.Fatal(err)
	}
	if !qr {
		return
	}
	got := decodeQR(t, path)
	if len(got) == 0 {
		t.Errorf("%s: no QR code could be read from the screenshot %s", name, path)
	}
	for _, g := range got {
		if g != d.joinURL {
			t.Errorf("%s: the QR code reads %q, want %q", name, g, d.joinURL)
		}
	}
}

// buttons says which teacher buttons are shown, by action.
func (d *dashRun) buttons() map[string]bool {
	var shown map[string]bool
	if err := d.b.eval(`Object.fromEntries([...document.querySelectorAll("#controls button")].map(b => [b.dataset.action, !b.hidden && b.offsetParent !== null]))`, &shown); err != nil {
		d.t.Fatal(err)
	}
	return shown
}

// press clicks the teacher's button for action and checks that the
// page posted it with the secret and the coordinator accepted it.
func (d *dashRun) press(action string) {
	t := d.t
	t.Helper()
	if err := d.b.click("#btn-" + action); err != nil {
		t.Fatal(pageFailure(d.b, action, err))
	}
	end := time.Now().Add(30 * time.Second)
	for {
		_, posts := d.c.log.sent()
		if i := slices.IndexFunc(posts, func(p teacherPost) bool { return p.Action == action }); i >= 0 {
			if p := posts[i]; p.Secret != d.c.secret || p.Code != http.StatusOK {
				t.Errorf("%s: posted with secret %q, answered %d", action, p.Secret, p.Code)
			}
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: the page posted no %s (posts %v)", action, action, posts)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var dashSizes = [][2]int{{1920, 1080}, {1280, 720}}

func dashboardLayout(t *testing.T, e engine) {
	c := newDashClass(t)
	st := c.status()
	if st.Join.LoopbackOnly || len(st.Join.URLs) == 0 || !strings.HasSuffix(st.Join.URLs[0], "/?code="+c.code) {
		t.Fatalf("listening on every address: loopback only %v, join URLs %q", st.Join.LoopbackOnly, st.Join.URLs)
	}
	b, err := e.start(t)()
	if err != nil {
		t.Fatal(err)
	}
	d := &dashRun{t: t, b: b, c: c, engine: e.name, shots: screenshotDir(t), joinURL: st.Join.URLs[0]}
	dashLobby(d)
	dashTraining(d)
	dashSummary(d)
}

// dashLobby checks the lobby without the secret, then Starts the lesson
// from the teacher's lobby.
func dashLobby(d *dashRun) {
	t, b, c := d.t, d.b, d.c
	for _, size := range dashSizes {
		name := fmt.Sprintf("lobby %dx%d", size[0], size[1])
		d.load(size[0], size[1], "code="+c.code, "lobby")
		checkLayout(t, name, pageLayout(t, b), "lobby")
		var names int
		if err := b.eval(`document.querySelectorAll("#names-big li").length`, &names); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if names != len(nicknames) {
			t.Errorf("%s: %d nicknames shown, want %d", name, names, len(nicknames))
		}
		var controls bool
		if err := b.eval(`!document.getElementById("controls").hidden`, &controls); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if controls {
			t.Errorf("%s: without the secret the teacher's buttons show", name)
		}
		d.shoot(map[int]string{1920: "dashboard-lobby", 1280: "dashboard-lobby-1280"}[size[0]], size[0] == 1920, true)
	}
	d.load(1920, 1080, "code="+c.code+"&teacher="+c.secret, "lobby")
	if shown := d.buttons(); !shown["start"] || shown["pause"] || shown["resume"] || shown["new"] {
		t.Errorf("teacher's lobby: buttons shown %v", shown)
	}
	d.press("start")
	d.rendered("training after Start", "training")
}

// dashTraining checks the training view while the class trains (every
// device state on the screen), Pause, the devices warning, Resume.
func dashTraining(d *dashRun) {
	t, b, c := d.t, d.b, d.c
	// By name: a device that answers can be counted stuck for a while
	// too (a round closes once it has its target, so the extra devices
	// it asked may miss it).
	are := func(st view.Status, state string, who ...int) bool {
		return !slices.ContainsFunc(who, func(i int) bool { return person(st, nicknames[i]).State != state })
	}
	c.waitStatus("three devices stuck", 3*time.Minute, func(st view.Status) bool {
		return st.Committed >= 3 && are(st, "stuck", dashStuck...)
	})
	for _, i := range dashLeft {
		c.rts[i].Leave("stopped")
	}
	c.stops[dashGone]()
	c.waitStatus("every state in the class", time.Minute, func(st view.Status) bool {
		return are(st, "left", dashLeft...) && are(st, "gone", dashGone) && are(st, "stuck", dashStuck...) &&
			person(st, nicknames[dashHostile]).Rejected > 0
	})
	for _, size := range dashSizes {
		name := fmt.Sprintf("training %dx%d", size[0], size[1])
		d.load(size[0], size[1], "code="+c.code+"&teacher="+c.secret, "training")
		if err := waitFor(b, 30*time.Second, name+": every state and the flagged device drawn", `(() => {
  const cls = new Set([...document.querySelectorAll("#names li")].map(li => li.classList[0]));
  return ["active", "stuck", "left", "gone"].every(s => cls.has(s)) && !document.getElementById("flags").hidden; })()`); err != nil {
			t.Error(pageFailure(b, name, err))
		}
		// The projector says how long the lesson has left (from the
		// pace of its rounds) and what a blind guess would score.
		if err := waitFor(b, 30*time.Second, name+": time left and a guess's accuracy", `/about .* left$/.test(document.getElementById("running").textContent) &&
  document.getElementById("acc-kv").textContent === "test accuracy · a guess would be 10 %"`); err != nil {
			t.Error(pageFailure(b, name, err))
		}
		checkLayout(t, name, pageLayout(t, b), "training")
		d.shoot(fmt.Sprintf("dashboard-%d", size[0]), true, true)
		// The class is in view without scrolling: at 1920x1080 all 30
		// names; at every size the stuck devices, listed first (the
		// ones a teacher may have to walk over to).
		var cut []string
		if err := b.eval(`(() => {
  const ul = document.getElementById("names"), box = ul.getBoundingClientRect();
  return [...ul.querySelectorAll("li")].filter(li => { const r = li.getBoundingClientRect(); return r.top < box.top - 1 || r.bottom > box.bottom + 1; })
    .map(li => li.classList[0] + ":" + li.firstChild.textContent); })()`, &cut); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if size[0] == 1920 && len(cut) > 0 || slices.ContainsFunc(cut, func(s string) bool { return strings.HasPrefix(s, "stuck:") }) {
			t.Errorf("%s: names out of view in the class list: %v", name, cut)
		}
		t.Logf("%s: %d names out of view in the class list", name, len(cut))
		// The secret left the address bar, is not on the screen, and
		// went with every status request.
		var href, text string
		if err := b.eval(`location.href`, &href); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := b.eval(`document.documentElement.outerHTML + document.body.innerText`, &text); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(href, c.secret) || strings.Contains(text, c.secret) {
			t.Errorf("%s: the teacher secret is visible (address %q)", name, href)
		}
		if seen, _ := c.log.sent(); len(seen) == 0 || slices.ContainsFunc(seen, func(s string) bool { return s != c.secret }) {
			t.Errorf("%s: status requests carried secrets %q", name, seen)
		}
		if shown := d.buttons(); !shown["pause"] || !shown["end"] || shown["start"] || shown["resume"] || shown["new"] {
			t.Errorf("%s: teacher buttons shown while running: %v", name, shown)
		}
	}

	// Pause on the page pauses the lesson; the view follows.
	d.press("pause")
	if err := waitFor(b, 30*time.Second, "paused", `!document.getElementById("btn-resume").hidden`); err != nil {
		t.Fatal(pageFailure(b, "pause", err))
	}
	paused := c.waitStatus("paused", 30*time.Second, func(st view.Status) bool { return st.State == coordinator.StatePaused })
	t.Logf("paused after %d of %d rounds", paused.Committed, paused.Session.Rounds)

	// Ten more leave: 14 active devices, fewer than the cohort.
	for _, i := range dashLater {
		c.rts[i].Leave("stopped")
	}
	st := c.waitStatus("the devices warning", time.Minute, func(st view.Status) bool { return len(st.Notices) > 0 })
	if st.Notices[0].Kind != "devices" || st.Session.Cohort != 15 {
		t.Errorf("after %d left: cohort %d, notices %v", len(dashLeft)+len(dashLater), st.Session.Cohort, st.Notices)
	}
	for _, size := range dashSizes {
		name := fmt.Sprintf("training with the warning %dx%d", size[0], size[1])
		d.load(size[0], size[1], "code="+c.code, "training")
		if err := waitFor(b, 30*time.Second, name, `!document.getElementById("warnings").hidden &&
  document.getElementById("warnings").textContent.includes("fewer than the 15")`); err != nil {
			t.Error(pageFailure(b, name, err))
		}
		checkLayout(t, name, pageLayout(t, b), "training")
		d.shoot(fmt.Sprintf("dashboard-warning-%d", size[0]), false, true)
	}
	d.press("resume")
	c.waitStatus("running again", 30*time.Second, func(st view.Status) bool { return st.State != coordinator.StatePaused })
}

// dashSummary lets the resumed lesson commit a round, ends it with the
// page's End (the teacher's early end: the 30-odd rounds left would take
// two to three minutes per engine, each waiting for its deadline with
// fewer devices than the cohort; the natural end is checked in every
// engine by TestClassroom) and checks the summary without the secret.
func dashSummary(d *dashRun) {
	t, b, c := d.t, d.b, d.c
	before := c.status().Committed
	c.waitStatus("a round after Resume", 2*time.Minute, func(st view.Status) bool { return st.Committed > before })
	// The page asks "End the session for everyone?" first: say yes.
	if err := b.eval(`window.confirm = () => true`, nil); err != nil {
		t.Fatal(err)
	}
	// End reads ended at once and then commits the round it found open;
	// meanwhile the page keeps the training view and says so, so that no
	// summary shows one round fewer (the window is too short to catch
	// reliably: the page's own rule is asked).
	var ending struct {
		Open, Closed string
	}
	if err := b.eval(`({open: viewOf({state: "ended", round: {t: 7}}), closed: viewOf({state: "ended"})})`, &ending); err != nil {
		t.Fatal(err)
	}
	if ending.Open != "training" || ending.Closed != "summary" {
		t.Errorf("ended with a round still open: view %q, want training; with none: %q, want summary", ending.Open, ending.Closed)
	}
	// The time left is estimated only while the lesson can move: not
	// between rounds with fewer devices ready than a round needs (a
	// class gone, or a coordinator back from a restart), nor paused.
	var left struct{ Moving, Waiting, Round, Paused *float64 }
	if err := b.eval(`(() => { const rs = [0, 10, 20].map(x => ({started: new Date(Date.UTC(2026, 0, 1, 0, 0, x)).toISOString()}));
  const s = (o) => Object.assign({state: "running", round: null, devices: {eligible: 2}, min_devices: 2, session: {rounds: 30}, committed: 3}, o);
  return {moving: timeLeftFor(s({}), rs), waiting: timeLeftFor(s({devices: {eligible: 1}}), rs),
    round: timeLeftFor(s({devices: {eligible: 0}, round: {t: 4}}), rs), paused: timeLeftFor(s({state: "paused"}), rs)}; })()`, &left); err != nil {
		t.Fatal(err)
	}
	if left.Moving == nil || *left.Moving != 270 || left.Round == nil || left.Waiting != nil || left.Paused != nil {
		t.Errorf("time left: %v s moving (want 270), %v s in a round (want 270), %v waiting for devices and %v paused (want none)",
			ptrText(left.Moving), ptrText(left.Round), ptrText(left.Waiting), ptrText(left.Paused))
	}
	d.press("end")
	// Wait for End's round too: the summary read below counts it.
	st := c.waitStatus("the end of the lesson", time.Minute, func(st view.Status) bool { return st.State == coordinator.StateEnded && st.Round == nil })
	if st.Committed <= before || st.Committed >= st.Session.Rounds || st.Join.Summary == nil || st.Join.Summary.Participants < 10 {
		t.Fatalf("at the end: %d of %d rounds (%d before Resume's round), summary %+v", st.Committed, st.Session.Rounds, before, st.Join.Summary)
	}
	// Without the secret: the tab kept it (sessionStorage), so forget it.
	if err := b.eval(`sessionStorage.clear()`, nil); err != nil {
		t.Fatal(err)
	}
	for _, size := range dashSizes {
		name := fmt.Sprintf("summary %dx%d", size[0], size[1])
		d.load(size[0], size[1], "code="+c.code, "summary")
		checkLayout(t, name, pageLayout(t, b), "summary")
		var dl, sum string
		var controls bool
		if err := b.eval(`document.getElementById("download").getAttribute("href")`, &dl); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := b.eval(`document.getElementById("summary").innerText`, &sum); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := b.eval(`!document.getElementById("controls").hidden`, &controls); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if dl != "/api/model.json?code="+c.code {
			t.Errorf("%s: download link %q", name, dl)
		}
		if controls {
			t.Errorf("%s: without the secret the teacher's buttons show", name)
		}
		var rounds string
		if err := b.eval(`document.getElementById("sum-rounds").textContent`, &rounds); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rounds != fmt.Sprint(st.Committed) {
			t.Errorf("%s: %q rounds shown, want the %d committed", name, rounds, st.Committed)
		}
		// The final accuracy is the last committed round's (End
		// evaluates it), beside what a blind guess would score.
		for _, want := range []string{fmt.Sprint(st.Join.Summary.Participants), "rounds of " + fmt.Sprint(st.Session.Rounds), st.Privacy.EpsilonText, "%",
			"in " + fmtDuration(st.RunningSec), fmt.Sprintf("final test accuracy (round %d)", st.Committed), "a guess would be 10 %"} {
			if !strings.Contains(sum, want) {
				t.Errorf("%s does not show %q:\n%s", name, want, sum)
			}
		}
		if size[0] == 1920 {
			d.shoot("dashboard-summary", true, false)
		}
	}
}

// ptrText is *x as text, or "none" for nil.
func ptrText(x *float64) string {
	if x == nil {
		return "none"
	}
	return strconv.FormatFloat(*x, 'g', -1, 64)
}
