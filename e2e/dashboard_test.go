package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/site"
	"browserfl/shared/wire"
)

// fakeDashboard serves the dashboard's own files (under the coordinator's
// dashboard CSP) with a status the test sets: the layout can be checked
// in every state without running a session. Like the coordinator it
// wants the join code, and it reports teacher: true only to requests
// carrying the teacher secret.
type fakeDashboard struct {
	mu      sync.Mutex
	status  map[string]any
	posts   []string // teacher actions received with the right secret
	secrets []string // X-Teacher-Secret values seen
}

const (
	fakeCode   = "K7QX2MH4PA"
	fakeSecret = "s3cret-teacher-token"
)

func (f *fakeDashboard) set(s map[string]any) { f.mu.Lock(); f.status = s; f.mu.Unlock() }

func (f *fakeDashboard) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	file := func(name, ctype string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, err := os.ReadFile(filepath.Join(repoRoot(), "coordinator", "site", name))
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Content-Security-Policy", site.DashboardCSP())
			w.Write(b)
		}
	}
	mux.HandleFunc("GET /dashboard", file("dashboard.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /dashboard.js", file("dashboard.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /dashboard.css", file("dashboard.css", "text/css; charset=utf-8"))
	code := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			c := r.Header.Get("X-Join-Code")
			if c == "" {
				c = r.URL.Query().Get("code")
			}
			if wire.NormalizeJoinCode(c) != wire.NormalizeJoinCode(fakeCode) { // as the coordinator compares
				http.Error(w, "wrong join code", http.StatusForbidden)
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /api/status", code(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		s := map[string]any{}
		for k, v := range f.status {
			s[k] = v
		}
		sec := r.Header.Get("X-Teacher-Secret")
		if sec != "" {
			f.secrets = append(f.secrets, sec)
		}
		f.mu.Unlock()
		if _, ok := s["state"]; ok {
			s["teacher"] = sec == fakeSecret
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s)
	}))
	mux.HandleFunc("GET /api/rounds", code(func(w http.ResponseWriter, r *http.Request) {
		var out []map[string]any
		if r.URL.Query().Get("after") == "0" {
			f.mu.Lock()
			n, _ := f.status["committed"].(int)
			f.mu.Unlock()
			out = fakeRounds(n)
		}
		if out == nil {
			out = []map[string]any{}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	mux.HandleFunc("GET /api/join-qr.png", code(func(w http.ResponseWriter, r *http.Request) {
		png, err := site.QRPNG("http://192.168.1.23:8080/?code=" + fakeCode)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(png)
	}))
	mux.HandleFunc("POST /api/teacher/{action}", code(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Teacher-Secret") != fakeSecret {
			http.Error(w, "teacher secret required", http.StatusForbidden)
			return
		}
		f.mu.Lock()
		f.posts = append(f.posts, r.PathValue("action"))
		if r.PathValue("action") == "pause" {
			f.status["state"] = "paused"
		}
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	return mux
}

// fakeRounds are n committed round records with an evaluation every 5.
func fakeRounds(n int) []map[string]any {
	var out []map[string]any
	for t := 1; t <= n; t++ {
		r := map[string]any{"t": t, "cohort": 10, "included": 10 - t%7/3*3, "latency_ms": 800 + 400*math.Sin(float64(t)/5)*math.Sin(float64(t)/5) + float64(t%11*90),
			"bytes_in": 314170, "bytes_out": 628170, "evaluated": t%5 == 0,
			"started": time.Now().Add(-90*time.Minute + time.Duration(t)*25*time.Second).UTC().Format(time.RFC3339Nano)}
		if t%5 == 0 {
			r["accuracy"] = 0.72 - 0.62*math.Exp(-float64(t)/35)
			r["loss"] = 0.8 + 1.5*math.Exp(-float64(t)/30)
		}
		out = append(out, r)
	}
	return out
}

var nicknames = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Linus", "Radia", "Ken",
	"Dennis", "Frances", "John", "Katherine", "Tim", "Sophie", "Guido", "Hedy", "Claude", "Annie", "Niklaus",
	"Shafi", "Leslie", "Whitfield", "Martin", "Joan", "Fernando", "Yukihiro", "Bjarne", "Anita"}

// fakeStatus is a status in the given state; extended adds the fields
// of the lobby contract (state, people, teacher).
func fakeStatus(state string, extended bool) map[string]any {
	sess := wire.SessionParams{Name: "physics-3b", Dim: 7850, DeadlineMillis: 20000, Algorithm: "nc", Model: "logreg",
		Features: 784, Classes: 10, M: 30, Cohort: 10, Rounds: 200, Batch: 32, Clip: 1, Eta: 0.02, Epsilon: 7.92, Delta: 1e-5,
		Labels: "T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot"}
	committed, finished := 142, false
	switch state {
	case "lobby":
		committed = 0
	case "ended":
		committed, finished = 200, true
	}
	acc := 0.72 - 0.62*math.Exp(-float64(committed)/35)
	s := map[string]any{
		"session": sess, "committed": committed, "finished": finished, "full": false,
		"devices":     map[string]int{"connected": 27, "known": 31, "eligible": 14, "busy": 10, "left": 2, "stuck": 1},
		"min_devices": 2,
		"privacy":     coordinator.SessionPrivacy(sess),
		"bytes_in":    44612140, "bytes_out": 89200140, "latency_p50_ms": 1180.5, "latency_p99_ms": 4210, "bad_frames": 3,
		"uptime_s": 5412.0,
		"join": map[string]any{
			"urls": []string{"http://192.168.1.23:8080/?code=" + fakeCode, "http://[2001:db8::42]:8080/?code=" + fakeCode},
			"summary": map[string]any{"session_start": time.Now().Add(-90 * time.Minute), "participants": 27, "registered": 31,
				"most_included": 58, "most_asked": 61, "worst_epsilon_text": coordinator.SessionPrivacy(sess).EpsilonText,
				"worst_text": coordinator.SessionPrivacy(sess).Text, "best_accuracy": acc + 0.004, "best_round": committed - 15,
				"final_accuracy": acc, "final_round": committed},
		},
	}
	if committed > 0 {
		s["last_eval"] = map[string]any{"t": committed - committed%5, "accuracy": acc, "loss": 0.9}
	}
	if state == "running" {
		s["round"] = map[string]any{"t": committed + 1, "cohort": 10, "received": 6, "closed": false, "deadline_left_ms": 12400}
	}
	if !extended {
		return s
	}
	s["state"] = state
	// What the coordinator says in words (coordinator/api/projector.go): the task, the
	// plan warnings (none) and the time since Start.
	s["title"], s["notices"] = api.TaskTitle(sess), []coordinator.Notice{}
	if state != "lobby" {
		s["started_at"], s["running_s"] = time.Now().Add(-83*time.Minute), 83*60.0+20
	}
	var people []map[string]any
	for i, n := range nicknames {
		st := "active"
		switch {
		case state == "lobby":
			st = "lobby"
		case i%11 == 4:
			st = "stuck"
		case i%13 == 7:
			st = "left"
		case i == 29:
			st = "gone"
		}
		people = append(people, map[string]any{"nickname": n, "state": st, "rounds": (i*7 + 13) % 59})
	}
	s["people"] = people
	return s
}

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
  const secs = [...main.querySelectorAll(":scope > section")];
  const top = document.querySelector("header").getBoundingClientRect().bottom;
  let area = 0, l = W, r = 0, t = H, b = 0;
  for (const s of secs) {
    const q = s.getBoundingClientRect();
    area += q.width * q.height; l = Math.min(l, q.left); r = Math.max(r, q.right); t = Math.min(t, q.top); b = Math.max(b, q.bottom);
    if (!inside(q, W, H)) out.push("section " + s.className);
    // Content cut off: a section's own content wider or taller than it
    // (the nickname lists scroll on purpose and are not counted).
    if (s.scrollWidth > s.clientWidth + 1 || s.scrollHeight > s.clientHeight + 1) clipped.push(s.className + " " + s.scrollWidth + "x" + s.scrollHeight + " in " + s.clientWidth + "x" + s.clientHeight);
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

// TestDashboardLayout loads the projector dashboard in each engine
// (subtests chromium, firefox, webkit) at 1920x1080 and 1280x720 in each
// state, with a fake status: nothing overflows, every chart label and
// legend lies inside the screen, the sections fill it; the join QR code
// in each screenshot decodes (zbarimg) to the join address; the
// teacher's secret leaves the address bar and is never shown, its
// buttons reach the endpoints; without the lobby fields the dashboard
// still works. Screenshots: go test ./e2e -run TestDashboardLayout -args
// -screenshots writes docs/screenshots (Chromium's under their old
// names, the others' with the engine's name).
func TestDashboardLayout(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { dashboardLayout(t, e) })
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

// dashRun loads the dashboard and checks its screenshots, for
// dashboardLayout.
type dashRun struct {
	t                   *testing.T
	b                   tab
	fake                *fakeDashboard
	base, engine, shots string
}

// load opens the dashboard at w x h and waits until view is rendered
// with its QR code loaded.
func (d *dashRun) load(w, h int, query string, view string) {
	t, b := d.t, d.b
	t.Helper()
	d.fake.mu.Lock()
	d.fake.secrets = nil
	d.fake.mu.Unlock()
	what := fmt.Sprintf("dashboard %dx%d", w, h)
	got, err := b.viewport(w, h, false)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got != [2]int{w, h} {
		t.Fatalf("%s: the page is %dx%d", what, got[0], got[1])
	}
	if err := b.navigate(d.base + "/dashboard?" + query); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := waitFor(b, 60*time.Second, what, fmt.Sprintf(`document.body.dataset.view === %q && document.body.dataset.rendered === "1" &&
			[...document.querySelectorAll("img.qr")].some(i => i.complete && i.naturalWidth > 0)`, view)); err != nil {
		t.Fatal(pageFailure(b, what, err))
	}
	// Two frames drawn after the render.
	if err := b.eval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, nil); err != nil {
		t.Fatal(err)
	}
}

// shoot saves a screenshot and, where the view shows the join QR code
// (qr), checks that it scans to the join address.
func (d *dashRun) shoot(name string, qr bool) {
	t := d.t
	t.Helper()
	dir := d.shots
	if name == "dashboard-lobby-1280" { // checked, not kept in docs/
		dir = t.TempDir()
	}
	path := filepath.Join(dir, shotName(d.engine, name))
	if err := d.b.screenshot(path, true); err != nil {
		t.Fatal(err)
	}
	if !qr {
		return
	}
	joinURL := "http://192.168.1.23:8080/?code=" + fakeCode // as fakeDashboard's QR
	got := decodeQR(t, path)
	if len(got) == 0 {
		t.Errorf("%s: no QR code could be read from the screenshot %s", name, path)
	}
	for _, g := range got {
		if g != joinURL {
			t.Errorf("%s: the QR code reads %q, want %q", name, g, joinURL)
		}
	}
}

func dashboardLayout(t *testing.T, e engine) {
	fake := &fakeDashboard{}
	fake.set(fakeStatus("running", true))
	srv := serve(t, fake.handler(t))
	b, err := e.start(t)()
	if err != nil {
		t.Fatal(err)
	}
	shots := screenshotDir(t)
	d := &dashRun{t: t, b: b, fake: fake, base: srv.URL, engine: e.name, shots: shots}
	load, shoot := d.load, d.shoot

	for _, size := range [][2]int{{1920, 1080}, {1280, 720}} {
		name := fmt.Sprintf("training %dx%d", size[0], size[1])
		fake.set(fakeStatus("running", true))
		load(size[0], size[1], "code="+fakeCode+"&teacher="+fakeSecret, "training")
		checkLayout(t, name, pageLayout(t, b), "training")
		shoot(fmt.Sprintf("dashboard-%d", size[0]), true)
		// The secret left the address bar, is not on the screen, and
		// goes with every status request.
		var href, text string
		b.eval(`location.href`, &href)
		b.eval(`document.documentElement.outerHTML + document.body.innerText`, &text)
		if strings.Contains(href, fakeSecret) || strings.Contains(text, fakeSecret) {
			t.Errorf("%s: the teacher secret is visible (address %q)", name, href)
		}
		fake.mu.Lock()
		seen := append([]string(nil), fake.secrets...)
		fake.mu.Unlock()
		if len(seen) == 0 || seen[0] != fakeSecret {
			t.Errorf("%s: status requests carried secrets %q", name, seen)
		}
		var shown map[string]bool
		b.eval(`Object.fromEntries([...document.querySelectorAll("#controls button")].map(b => [b.dataset.action, !b.hidden && b.offsetParent !== null]))`, &shown)
		if !shown["pause"] || !shown["end"] || shown["start"] || shown["resume"] || shown["new"] {
			t.Errorf("%s: teacher buttons shown while running: %v", name, shown)
		}
	}

	// Pause reaches the endpoint with the secret; the view follows.
	if err := b.click("#btn-pause"); err != nil {
		t.Fatal(pageFailure(b, "pause", err))
	}
	if err := waitFor(b, 30*time.Second, "paused", `!document.getElementById("btn-resume").hidden`); err != nil {
		t.Fatal(pageFailure(b, "pause", err))
	}
	fake.mu.Lock()
	posts := append([]string(nil), fake.posts...)
	fake.mu.Unlock()
	if len(posts) != 1 || posts[0] != "pause" {
		t.Errorf("teacher actions received: %q, want [pause]", posts)
	}

	// The lobby and the summary, at both sizes; screenshots at 1920.
	// Without the secret: the tab kept it (sessionStorage), so forget it.
	if err := b.eval(`sessionStorage.clear()`, nil); err != nil {
		t.Fatal(err)
	}
	for _, size := range [][2]int{{1920, 1080}, {1280, 720}} {
		fake.set(fakeStatus("lobby", true))
		load(size[0], size[1], "code="+fakeCode, "lobby")
		checkLayout(t, fmt.Sprintf("lobby %dx%d", size[0], size[1]), pageLayout(t, b), "lobby")
		var names int
		b.eval(`document.querySelectorAll("#names-big li").length`, &names)
		if names != len(nicknames) {
			t.Errorf("lobby: %d nicknames shown, want %d", names, len(nicknames))
		}
		var controls bool
		b.eval(`!document.getElementById("controls").hidden`, &controls)
		if controls {
			t.Error("lobby without the secret shows the teacher's buttons")
		}
		shoot(map[int]string{1920: "dashboard-lobby", 1280: "dashboard-lobby-1280"}[size[0]], true)

		fake.set(fakeStatus("ended", true))
		load(size[0], size[1], "code="+fakeCode, "summary")
		checkLayout(t, fmt.Sprintf("summary %dx%d", size[0], size[1]), pageLayout(t, b), "summary")
		var dl, sum string
		b.eval(`document.getElementById("download").getAttribute("href")`, &dl)
		b.eval(`document.getElementById("summary").innerText`, &sum)
		if dl != "/api/model.json?code="+fakeCode {
			t.Errorf("summary: download link %q", dl)
		}
		eps := coordinator.SessionPrivacy(fakeStatus("ended", false)["session"].(wire.SessionParams)).EpsilonText
		for _, want := range []string{"27", "200", eps, "%", "in 1 h 23 min"} {
			if !strings.Contains(sum, want) {
				t.Errorf("summary does not show %q:\n%s", want, sum)
			}
		}
		if size[0] == 1920 {
			shoot("dashboard-summary", false)
		}
	}

	// A coordinator without the lobby fields: the training view, device
	// counts only, no buttons.
	fake.set(fakeStatus("running", false))
	load(1280, 720, "code="+fakeCode, "training")
	checkLayout(t, "without lobby fields", pageLayout(t, b), "training")
	var counts string
	b.eval(`document.getElementById("counts").innerText`, &counts)
	if !strings.Contains(counts, "24") { // connected 27 - left 2 - stuck 1
		t.Errorf("device counts without people: %q", counts)
	}
}
