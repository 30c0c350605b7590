package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/coordinator/site"
	"browserfl/coordinator/view"
	"browserfl/device"
	"browserfl/internal/loopback"
	"browserfl/shared/dataset"
)

// jargon are the precise terms the projector keeps behind its Details
// toggle: none may show outside it.
var jargon = []string{"zCDP", "ρ", "δ", "clipping", "Clipping", "minibatch", "schema", "browserfl.model", "m = ", "min-devices",
	"p50", "· nc ·", "logreg", "cohort"}

// projectorCoordinator starts the real coordinator (cmd/coordinator
// -lobby, the demo template's m = 10) listening at addr and returns it
// with its teacher secret.
func projectorCoordinator(t *testing.T, addr, code string, extra ...string) (*process, string) {
	t.Helper()
	logf, err := os.CreateTemp("", "browserfl-e2e-projector-*.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	dataDir := t.TempDir()
	coord := &process{t: t, bin: coordinatorBinary(t), addr: addr, dataDir: dataDir, log: logf, args: []string{
		"-lobby", "-join-code", code, "-dataset", fashionDir, "-eval-every", "1", "-eval-samples", "500",
		"-demo-shards", "4", "-deadline", "60s", "-round-gap", "600ms", "-seed", "7",
		"-m", "10", "-T", "60", "-b", "16", "-eta", "1", "-D", "10", "-clip", "1",
	}}
	coord.args = append(coord.args, extra...)
	coord.start()
	var index struct {
		TeacherSecret string `json:"teacher_secret"`
	}
	raw, err := os.ReadFile(filepath.Join(dataDir, "host.json"))
	if err != nil || json.Unmarshal(raw, &index) != nil || index.TeacherSecret == "" {
		coord.stop()
		t.Fatalf("host index: %v", err)
	}
	return coord, index.TeacherSecret
}

// screenText is what the projector shows: the body's rendered text (a
// closed <details> renders only its summary), and the Details panel's
// own text.
type screenText struct {
	Open    bool
	Outside string
	Inside  string
	Title   string
}

const screenTextJS = `(() => { const d = document.getElementById("details");
  return {Open: d.open, Outside: document.body.innerText, Inside: d.querySelector(".detailpanel").textContent,
    Title: document.getElementById("title").textContent}; })()`

// checkWords checks that the title names the task in words and that the
// jargon is inside the closed Details only.
func checkWords(t *testing.T, b *browser, where string) {
	t.Helper()
	var st screenText
	if err := b.eval(screenTextJS, &st); err != nil {
		t.Fatal(err)
	}
	if st.Title != "Learning to recognise clothing" {
		t.Errorf("%s: title %q, want the task in words", where, st.Title)
	}
	if st.Open {
		t.Errorf("%s: Details is open by default", where)
	}
	for _, term := range jargon {
		if strings.Contains(st.Outside, term) {
			t.Errorf("%s: %q shows outside Details:\n%s", where, term, st.Outside)
		}
	}
	for _, term := range []string{"zCDP", "clipping S", "minibatch b", "browserfl.model/v1", "cohort m"} {
		if !strings.Contains(st.Inside, term) {
			t.Errorf("%s: Details lacks %q:\n%s", where, term, st.Inside)
		}
	}
}

// dashState is what the test reads of the dashboard's drawing.
type dashState struct {
	View     string
	Warnings string // the warnings line, "" when hidden
	Notes    map[string]string
	YTicks   []string // the loss chart's y labels
	Tiles    []tileState
	PicsNote string
	QRShown  bool
	Local    string // the localhost-only instruction, "" when hidden
}

type tileState struct {
	Word   string
	Colors int     // distinct colours among its pixels
	Sum    float64 // sum of its pixel bytes
}

const dashStateJS = `(() => {
  const boxes = window.dashTextBoxes || {}, notes = {};
  for (const id of ["accchart", "losschart", "timeline", "sumchart"])
    notes[id] = (boxes[id] || []).filter(b => b.kind === "note").map(b => b.text).join(" ");
  const w = document.getElementById("warnings"), lo = document.getElementById("localonly");
  const qrs = [...document.querySelectorAll("img.qr")].filter(i => i.offsetParent !== null && i.complete && i.naturalWidth > 0);
  return {View: document.body.dataset.view, Warnings: w.hidden ? "" : w.textContent, Notes: notes,
    YTicks: (boxes.losschart || []).filter(b => b.kind === "y").map(b => b.text),
    Tiles: [...document.querySelectorAll("#tiles .tile")].map(t => {
      const c = t.querySelector("canvas"), d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      const set = new Set(); let sum = 0;
      for (let i = 0; i < d.length; i += 4) { set.add(d[i] << 16 | d[i + 1] << 8 | d[i + 2]); sum += d[i] + d[i + 1] + d[i + 2]; }
      return {Word: t.querySelector(".word").textContent, Colors: set.size, Sum: sum};
    }),
    PicsNote: document.getElementById("pics-note").textContent, QRShown: qrs.length > 0,
    Local: lo.offsetParent === null ? "" : lo.innerText};
})()`

func (b *browser) dash(t *testing.T) dashState {
	t.Helper()
	var d dashState
	if err := b.eval(dashStateJS, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDashboardLesson runs a lesson on the real coordinator (listening
// on loopback only, as make run does by default) with three native
// devices and watches the projector in Chromium at 1920x1080:
//
//   - the title names the task in words; the jargon is in the closed
//     Details only (lobby, training, summary);
//   - the localhost-only instruction (with the -listen command and the
//     LAN address phones would open) replaces the QR code;
//   - no warning in the lobby (the template's m = 10 against 3 devices
//     was shown before), none after Start sized the lesson to the 3,
//     and the devices warning once one of them leaves;
//   - before round 1 is done, every chart shows its sentence and the
//     pictures say when they come; then the loss axis has distinct
//     labels and the 10 class pictures (the public model's weights)
//     have non-uniform pixels and change as rounds commit;
//   - the summary's time counts from Start, not from the lobby.
//
// With -screenshots it writes docs/screenshots/projector-*.png.
func TestDashboardLesson(t *testing.T) {
	t.Parallel() // docs/browser.md, "Parallel browser tests"
	const code = "PROJ7K"
	addr := loopback.Addr(t)
	coord, secret := projectorCoordinator(t, addr, code)
	defer coord.stop()
	base := "http://" + addr
	status := func() view.Status {
		t.Helper()
		var st view.Status
		if err := getJSON(base+"/api/status?code="+code, &st); err != nil {
			t.Fatalf("status: %v", err)
		}
		return st
	}
	teacher := func(action string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/api/teacher/"+action, nil)
		req.Header.Set("X-Teacher-Secret", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", action, resp.StatusCode)
		}
	}
	shots := screenshotDir(t)
	b := launch(t, t.TempDir())
	defer b.close()
	wait := func(what, cond string, d time.Duration) {
		t.Helper()
		b.must(d+5*time.Second, what, chromedp.Poll(cond, nil, chromedp.WithPollingTimeout(d)))
	}
	shot := func(name string) {
		t.Helper()
		if err := b.screenshot(filepath.Join(shots, "projector-"+name+".png")); err != nil {
			t.Fatal(err)
		}
	}
	b.must(30*time.Second, "dashboard", chromedp.EmulateViewport(1920, 1080),
		chromedp.Navigate(base+"/dashboard?code="+code+"&teacher="+secret))
	wait("the lobby", `document.body.dataset.view === "lobby" && document.body.dataset.rendered === "1"`, 15*time.Second)

	// An empty lobby, loopback only: no warning, the instruction instead
	// of the QR code.
	st := status()
	if !st.Join.LoopbackOnly || len(st.Notices) != 0 || len(st.Warnings) != 0 {
		t.Fatalf("empty lobby: loopback %v, notices %v, warnings %q", st.Join.LoopbackOnly, st.Notices, st.Warnings)
	}
	d := b.dash(t)
	_, port, _ := strings.Cut(addr, ":")
	if d.Warnings != "" || d.QRShown || !strings.Contains(d.Local, "added to the flags you gave it, so that phones can reach it:\n-listen :"+port+"\n") ||
		!strings.Contains(d.Local, `make run RUNFLAGS="-listen :`+port+`"`) {
		t.Errorf("empty lobby: warnings %q, QR shown %v, instruction %q", d.Warnings, d.QRShown, d.Local)
	}
	for _, u := range st.Join.LANURLs {
		if !strings.Contains(u, "code="+code) {
			t.Errorf("LAN URL %q without the session's code", u)
		}
	}
	if len(st.Join.LANURLs) > 0 && !strings.Contains(d.Local, strings.TrimPrefix(st.Join.LANURLs[0], "http://")) {
		t.Errorf("the instruction does not name the LAN address %s: %q", st.Join.LANURLs[0], d.Local)
	}
	checkWords(t, b, "lobby")

	// Three devices (real device runtimes on Fashion-MNIST test pictures)
	// join; each holds its first update until release is closed.
	test := fashionTest(t)
	release := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var rts []*device.Runtime
	for i := range 3 {
		rt, err := device.New(ctx, device.Config{URL: "ws://" + addr + "/ws", JoinCode: code, Nickname: nicknames[i],
			Storage: &device.MemStorage{}, Data: test.Samples[i*1000 : (i+1)*1000],
			Hooks: &device.Hooks{BeforeSend: func(int) (time.Duration, bool) {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return 0, false
			}}})
		if err != nil {
			t.Fatal(err)
		}
		rts = append(rts, rt)
		wg.Add(1)
		go func() { defer wg.Done(); rt.Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	wait("three in the lobby", `document.querySelectorAll("#names-big li").length === 3`, 30*time.Second)
	if st := status(); len(st.Notices) != 0 {
		t.Errorf("a lobby of 3 (template m = %d): notices %v", st.Session.Cohort, st.Notices)
	}
	if d := b.dash(t); d.Warnings != "" {
		t.Errorf("a lobby of 3: warnings shown %q", d.Warnings)
	}
	shot("lobby-local")

	beforeStart := time.Now()
	teacher("start")
	wait("training, round 1 open", `document.body.dataset.view === "training" && document.getElementById("round").textContent === "1"`, 30*time.Second)
	// Round 1 waits for release: nothing is committed yet.
	b.must(5*time.Second, "a redraw", chromedp.Sleep(1500*time.Millisecond))
	st = status()
	if st.Committed != 0 || st.Session.Cohort != 3 || len(st.Notices) != 0 {
		t.Errorf("after Start: committed %d, m %d, notices %v (want 0, 3, none)", st.Committed, st.Session.Cohort, st.Notices)
	}
	if st.StartedAt.Before(beforeStart.Truncate(time.Second)) || st.Join.Summary == nil || !st.Join.Summary.SessionStart.Before(beforeStart) {
		t.Errorf("lesson start %v: want after the Start request (%v), and the store's first use %v before it", st.StartedAt, beforeStart, st.Join.Summary)
	}
	d = b.dash(t)
	if d.Warnings != "" {
		t.Errorf("Start sized the lesson to 3: warnings shown %q", d.Warnings)
	}
	for id, want := range map[string]string{"accchart": "first accuracy", "losschart": "how wrong", "timeline": "round 1"} {
		if !strings.Contains(d.Notes[id], want) {
			t.Errorf("empty %s: sentence %q, want one with %q", id, d.Notes[id], want)
		}
	}
	if len(d.Tiles) != 0 || !strings.Contains(d.PicsNote, "after round 1") {
		t.Errorf("before round 1: %d tiles, note %q", len(d.Tiles), d.PicsNote)
	}
	checkWords(t, b, "training before round 1")
	shot("start")

	close(release)
	wait("10 class pictures after round 3", `window.dashModel.round >= 3 && document.querySelectorAll("#tiles canvas").length === 10`, 90*time.Second)
	first := b.dash(t)
	var r1 int
	b.eval(`window.dashModel.round`, &r1)
	labels := dataset.FashionMNISTClasses[:]
	for i, tl := range first.Tiles {
		if tl.Word != labels[i] || tl.Colors < 20 {
			t.Errorf("tile %d: word %q (want %q), %d colours", i, tl.Word, labels[i], tl.Colors)
		}
	}
	wait("three more rounds drawn", fmt.Sprintf(`window.dashModel.round >= %d`, r1+3), 60*time.Second)
	later := b.dash(t)
	changed := 0
	for i := range min(len(first.Tiles), len(later.Tiles)) {
		if first.Tiles[i].Sum != later.Tiles[i].Sum {
			changed++
		}
	}
	if len(later.Tiles) != 10 || changed < 5 {
		t.Errorf("after 3 more rounds %d of %d pictures changed", changed, len(later.Tiles))
	}
	if len(later.YTicks) < 2 || len(slices.Compact(slices.Clone(later.YTicks))) != len(later.YTicks) {
		t.Errorf("loss axis labels %q: want at least 2, all different", later.YTicks)
	}
	for id := range later.Notes {
		if id != "sumchart" && later.Notes[id] != "" {
			t.Errorf("%s still shows its empty sentence %q with data", id, later.Notes[id])
		}
	}
	checkTilesDrawModel(t, b, base, code, secret)
	checkNiceTicks(t, b)
	checkLayout(t, "lesson 1920x1080", b.layout(t), "training")
	checkWords(t, b, "training")
	if *updateShots {
		// The docs show the pictures later in the lesson.
		wait("round 36 drawn", `window.dashModel.round >= 36`, 120*time.Second)
	}
	shot("training")
	b.must(10*time.Second, "1280x720", chromedp.EmulateViewport(1280, 720), chromedp.Sleep(1500*time.Millisecond))
	checkLayout(t, "lesson 1280x720", b.layout(t), "training")
	shot("training-1280")
	b.must(10*time.Second, "1920x1080", chromedp.EmulateViewport(1920, 1080))

	// One device leaves: 2 of the 3 the lesson asks each round. The
	// warning is true now, and shown.
	rts[2].Leave("stopped")
	wait("the devices warning", `!document.getElementById("warnings").hidden`, 30*time.Second)
	if d := b.dash(t); !strings.Contains(d.Warnings, "Only 2 devices are connected, fewer than the 3") {
		t.Errorf("after a device left: warnings %q", d.Warnings)
	}
	if st := status(); len(st.Notices) != 1 || st.Notices[0].Kind != "devices" {
		t.Errorf("after a device left: notices %v", st.Notices)
	}

	teacher("end")
	wait("the summary", `document.body.dataset.view === "summary" && document.body.dataset.rendered === "1"`, 30*time.Second)
	b.must(5*time.Second, "a redraw", chromedp.Sleep(1500*time.Millisecond))
	st = status()
	var sum string
	b.eval(`document.getElementById("summary").innerText`, &sum)
	if want := "in " + fmtDuration(st.RunningSec); !strings.Contains(sum, want) || st.RunningSec <= 0 ||
		st.RunningSec > time.Since(beforeStart).Seconds()+1 {
		t.Errorf("summary: want %q (from Start, %.1f s), got:\n%s", want, st.RunningSec, sum)
	}
	checkWords(t, b, "summary")
	checkLayout(t, "summary 1920x1080", b.layout(t), "summary")
	shot("summary")
	// Details opens over the page: the layout does not move, the panel
	// lies inside the screen.
	b.must(5*time.Second, "open Details", chromedp.Click("#details summary", chromedp.ByQuery), chromedp.Sleep(300*time.Millisecond))
	checkLayout(t, "summary with Details open", b.layout(t), "summary")
	var inside bool
	b.eval(`(() => { const r = document.querySelector(".detailpanel").getBoundingClientRect();
	  return document.getElementById("details").open && r.width > 0 && r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight; })()`, &inside)
	if !inside {
		t.Error("the Details panel is not open inside the screen")
	}
	shot("details")
}

// TestDashboardJoinQR: a coordinator listening on every address shows
// the QR code of its LAN join URL, and no localhost instruction.
func TestDashboardJoinQR(t *testing.T) {
	const code = "LANQR8"
	port := strings.Split(loopback.Addr(t), ":")[1]
	coord, _ := projectorCoordinator(t, "0.0.0.0:"+port, code)
	defer coord.stop()
	base := "http://127.0.0.1:" + port
	b := launch(t, t.TempDir())
	defer b.close()
	b.must(30*time.Second, "dashboard", chromedp.EmulateViewport(1920, 1080),
		chromedp.Navigate(base+"/dashboard?code="+code),
		chromedp.Poll(`document.body.dataset.rendered === "1" && [...document.querySelectorAll("img.qr")].some(i => i.complete && i.naturalWidth > 0)`,
			nil, chromedp.WithPollingTimeout(15*time.Second)))
	var st view.Status
	if err := getJSON(base+"/api/status?code="+code, &st); err != nil {
		t.Fatal(err)
	}
	d := b.dash(t)
	if st.Join.LoopbackOnly || !d.QRShown || d.Local != "" || d.Warnings != "" {
		t.Errorf("listening on every address: loopback %v, QR shown %v, instruction %q, warnings %q", st.Join.LoopbackOnly, d.QRShown, d.Local, d.Warnings)
	}
	checkWords(t, b, "LAN lobby")
}

// fmtDuration is the dashboard's fmtDuration.
func fmtDuration(sec float64) string {
	s := int(max(0, sec))
	h, m := s/3600, s%3600/60
	s %= 60
	switch {
	case h > 0:
		return fmt.Sprintf("%d h %02d min", h, m)
	case m > 0:
		return fmt.Sprintf("%d min %02d s", m, s)
	}
	return fmt.Sprintf("%d s", s)
}

// checkTilesDrawModel pauses the lesson, waits until the dashboard drew
// the last committed model, and compares each class picture with that
// model's weights from /api/model.json (signAgree).
func checkTilesDrawModel(t *testing.T, b *browser, base, code, secret string) {
	t.Helper()
	m, resume := pausedModel(t, b, base, code, secret)
	defer resume()
	words, signs := tileSigns(t, b)
	F := m.Features
	if len(signs) != m.Classes {
		t.Fatalf("%d pictures for %d classes", len(signs), m.Classes)
	}
	for c, sg := range signs {
		if words[c] != m.Labels[c] {
			t.Errorf("picture %d is called %q, want %q", c, words[c], m.Labels[c])
		}
		if agree, n := signAgree(m.Weights[c*(F+1):c*(F+1)+F], sg); n < F/10 || float64(agree) < 0.99*float64(n) {
			t.Errorf("class %d picture: %d of %d strong weights drawn with their sign", c, agree, n)
		}
	}
}

// pausedModel pauses the lesson, waits until the dashboard drew the last
// committed model and returns that model and what resumes the lesson.
func pausedModel(t *testing.T, b *browser, base, code, secret string) (site.ModelJSON, func()) {
	t.Helper()
	post := func(action string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/teacher/"+action, nil)
		req.Header.Set("X-Teacher-Secret", secret)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", action, err, resp)
		} else {
			resp.Body.Close()
		}
	}
	post("pause")
	var m site.ModelJSON
	for range 100 {
		var st view.Status
		if err := getJSON(base+"/api/status?code="+code, &st); err != nil {
			t.Fatal(err)
		}
		if st.Round == nil && st.Committed > 0 { // the open round closed: the model stays
			b.must(20*time.Second, "the paused model drawn", chromedp.Poll(fmt.Sprintf(`window.dashModel.round === %d`, st.Committed), nil,
				chromedp.WithPollingTimeout(15*time.Second)))
			if err := getJSON(base+"/api/model.json?code="+code, &m); err != nil {
				t.Fatal(err)
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if m.Round == 0 {
		t.Fatal("the lesson did not pause between rounds")
	}
	return m, func() { post("resume") }
}

// tileSigns returns each picture's word and, per pixel, + where it is
// orange (red above blue) and - where it is blue.
func tileSigns(t *testing.T, b *browser) (words, signs []string) {
	t.Helper()
	var tiles []struct{ Word, Signs string }
	if err := b.eval(`[...document.querySelectorAll("#tiles .tile")].map(tl => {
	  const c = tl.querySelector("canvas"), d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data; let s = "";
	  for (let i = 0; i < d.length; i += 4) s += d[i] > d[i + 2] ? "+" : "-";
	  return {Word: tl.querySelector(".word").textContent, Signs: s}; })`, &tiles); err != nil {
		t.Fatal(err)
	}
	for _, tl := range tiles {
		words, signs = append(words, tl.Word), append(signs, tl.Signs)
	}
	return words, signs
}

// signAgree counts, among the weights of w in the largest fifth by size
// (n of them), those whose pixel in sg has their sign (orange positive,
// blue negative). A picture drawn from the wrong slice of the weights or
// with the colours swapped agrees on about half. The drawing maps w > 0
// to red above blue and w < 0 to blue above red, so a right picture
// disagrees only where a strong weight is below 1/200 of the colour
// scale (its bytes round to grey): the 99% bar leaves room for that and
// a wrong picture (about 50%) cannot pass it.
func signAgree(w []float64, sg string) (agree, n int) {
	mags := make([]float64, len(w))
	for i, v := range w {
		mags[i] = max(v, -v)
	}
	slices.Sort(mags)
	cut := mags[len(w)*4/5]
	for i, v := range w {
		if max(v, -v) <= cut || i >= len(sg) {
			continue
		}
		n++
		if (v > 0) == (sg[i] == '+') {
			agree++
		}
	}
	return agree, n
}

// TestDashboardMLP: for the MLP the projector draws the first layer's
// ten strongest units (largest weight norm), each from its own weights,
// and says what they are.
func TestDashboardMLP(t *testing.T) {
	const code = "MLPPIC"
	addr := loopback.Addr(t)
	coord, secret := projectorCoordinator(t, addr, code, "-model", "mlp")
	defer coord.stop()
	base := "http://" + addr
	b := launch(t, t.TempDir())
	defer b.close()
	b.must(30*time.Second, "dashboard", chromedp.EmulateViewport(1920, 1080),
		chromedp.Navigate(base+"/dashboard?code="+code+"&teacher="+secret))
	test := fashionTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i := range 2 {
		rt, err := device.New(ctx, device.Config{URL: "ws://" + addr + "/ws", JoinCode: code, Nickname: nicknames[i],
			Storage: &device.MemStorage{}, Data: test.Samples[i*1000 : (i+1)*1000]})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); rt.Run(ctx) }()
	}
	b.must(40*time.Second, "two in the lobby", chromedp.Poll(`document.querySelectorAll("#names-big li").length === 2`, nil,
		chromedp.WithPollingTimeout(30*time.Second)))
	req, _ := http.NewRequest(http.MethodPost, base+"/api/teacher/start", nil)
	req.Header.Set("X-Teacher-Secret", secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("start: %d", resp.StatusCode)
	}
	b.must(100*time.Second, "unit pictures", chromedp.Poll(`window.dashModel.round >= 2 && document.querySelectorAll("#tiles canvas").length === 10`,
		nil, chromedp.WithPollingTimeout(90*time.Second)))
	m, resume := pausedModel(t, b, base, code, secret)
	defer resume()
	F, H := m.Features, m.Hidden
	norms := make([]float64, H)
	for j := range H {
		for _, v := range m.Weights[j*F : (j+1)*F] {
			norms[j] += v * v
		}
	}
	ranked := slices.Clone(norms)
	slices.Sort(ranked)
	tenth := ranked[H-10]
	words, signs := tileSigns(t, b)
	for i, word := range words {
		var j int
		if _, err := fmt.Sscanf(word, "detector %d", &j); err != nil || j < 1 || j > H {
			t.Fatalf("picture %d is called %q", i, word)
		}
		if norms[j-1] < tenth {
			t.Errorf("%s is not among the 10 strongest units", word)
		}
		if agree, n := signAgree(m.Weights[(j-1)*F:j*F], signs[i]); n < F/10 || float64(agree) < 0.99*float64(n) {
			t.Errorf("%s: %d of %d strong weights drawn with their sign", word, agree, n)
		}
	}
	var note string
	b.eval(`document.getElementById("pics-note").textContent`, &note)
	if !strings.Contains(note, fmt.Sprintf("%d pattern detectors", H)) {
		t.Errorf("MLP note %q", note)
	}
	checkWords(t, b, "MLP training")
}

// checkNiceTicks: the charts' y ticks print differently however close
// the values (the loss once read "2.27" five times).
func checkNiceTicks(t *testing.T, b *browser) {
	t.Helper()
	for _, r := range [][2]float64{{2.2712, 2.2739}, {0.5, 0.5}, {0.0011, 0.00113}, {1, 250}, {2.05, 2.41}} {
		var labels []string
		if err := b.eval(fmt.Sprintf(`(() => { const {ticks, decimals} = niceTicks(%v, %v, 4); return ticks.map(y => y.toFixed(decimals)); })()`, r[0], r[1]), &labels); err != nil {
			t.Fatal(err)
		}
		if len(labels) < 2 || len(slices.Compact(slices.Clone(labels))) != len(labels) {
			t.Errorf("ticks for [%v, %v]: %q, want at least 2, all different", r[0], r[1], labels)
		}
	}
}
