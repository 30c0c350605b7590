package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	cview "browserfl/coordinator/view"
	"browserfl/internal/loopback"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
	"browserfl/shared/wire"
	"browserfl/wasm/local"
)

// checkFill compares the meter's fill (its bar's data-fill, what its
// width shows) with the share of the session's privacy the device's
// ledger holds: ledgerRho over the session's worst case (f.WorstRho).
// Both are computed in float64 from the same numbers; 1e-9 allows only
// their rounding.
func checkFill(m meterView, ledgerRho float64, f plan.Figures) error {
	fill, err := strconv.ParseFloat(m.Fill, 64)
	if err != nil {
		return fmt.Errorf("the meter's fill %q: %w", m.Fill, err)
	}
	if want := math.Min(1, ledgerRho/f.WorstRho); math.Abs(fill-want) > 1e-9 {
		return fmt.Errorf("the meter's fill %v, the device's ledger holds %v of the lesson's rho (%v of %v)", fill, want, ledgerRho, f.WorstRho)
	}
	return nil
}

// TestPhoneScreens walks one student through the lesson on a phone
// (390x844, mobile emulation) against the real coordinator (cmd/coordinator
// -lobby as a child process) and checks what we promise of the phone's
// screens:
//
//   - primary buttons (Join on the code box and on consent, "Start
//     helping") lie inside the first 844 px, without scrolling;
//   - each new screen opens at its top (the test scrolls the old one to
//     its bottom first);
//   - "1 picture stored", never "1 pictures"; the lobby says "Waiting for
//     your teacher" once;
//   - the privacy meter shows, from the lobby on, the most this lesson can
//     use, computed by the test with plan.Budget.Progress from the
//     session's public parameters, and is coloured against that plan
//     (meter-calm); its fill is spent over that most; at the end its
//     figure is the one the page's stored ledger gives;
//   - "what your phone sent": the two pictures are drawn, differ (the
//     noise), the "sent" one is exactly local.Picture of the frame the
//     page sent for that round (captured on the websocket), and the clean
//     one matches no picture of any frame sent (it never left the page);
//   - "Try the model" keeps the drawing once the model has answered;
//   - after a reload the meter never shows "Nothing sent yet" and its
//     first figure is at least the one before the reload (every text the
//     meter shows is recorded from the new document's first script on).
//
// How long the coordinator lists the reloading student as "left" is
// logged, not asserted (no timing asserts). With -screenshots it writes
// docs/screenshots/phone-*.png.
func TestPhoneScreens(t *testing.T) {
	t.Parallel() // docs/browser.md, "Parallel browser tests"
	webDir := pageBuild(t)
	bin := coordinatorBinary(t)
	const (
		code   = "PHONE7"
		rounds = 40
		batch  = 32
	)
	logf, err := os.CreateTemp("", "browserfl-e2e-phone-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dataDir := t.TempDir()
	coord := &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: dataDir, log: logf, args: []string{
		"-lobby", "-join-code", code, "-dataset", fashionDir, "-eval-every", "1", "-eval-samples", "500",
		"-demo-shards", "4", "-deadline", "60s", "-round-gap", "700ms", "-seed", "5",
		"-T", fmt.Sprint(rounds), "-b", fmt.Sprint(batch), "-eta", "1", "-D", "10", "-clip", "1",
	}}
	coord.start()
	defer coord.stop()
	secret := teacherSecretIn(t, dataDir)
	srv := serve(t, pageHandler(webDir, proxyTo(coord.addr)))
	var sess wire.SessionParams
	if err := getJSON(srv.URL+"/api/session?code="+code, &sess); err != nil {
		t.Fatal(err)
	}
	owner := plan.DefaultBudget()
	planned, err := owner.Progress(sess, privacy.Spent{}, privacy.Spent{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	shots := screenshotDir(t)

	b, err := phone(t)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	view := func(name string) {
		t.Helper()
		if err := b.viewShot(filepath.Join(shots, "phone-"+name+".png")); err != nil {
			t.Fatal(err)
		}
	}
	// inView checks that element id lies inside the first screen.
	inView := func(id string) {
		t.Helper()
		var r struct{ Top, Bottom, Inner, Scroll float64 }
		if err := b.eval(fmt.Sprintf(`(() => { const r = document.getElementById(%q).getBoundingClientRect();
  return {top: r.top + scrollY, bottom: r.bottom + scrollY, inner: innerHeight, scroll: scrollY}; })()`, id), &r); err != nil {
			t.Fatal(err)
		}
		if r.Top < 0 || r.Bottom > r.Inner || r.Inner != 844 {
			t.Errorf("#%s at %.0f-%.0f px from the top, want inside the first %.0f px (viewport 844)", id, r.Top, r.Bottom, r.Inner)
		}
	}
	// atTop checks that the screen opened at its top.
	atTop := func(screen string) {
		t.Helper()
		var y float64
		if err := b.eval(`scrollY`, &y); err != nil {
			t.Fatal(err)
		}
		if y != 0 {
			t.Errorf("the %s screen opened scrolled down by %.0f px", screen, y)
		}
	}
	toBottom := chromedp.Evaluate(`window.scrollTo(0, document.documentElement.scrollHeight); scrollY`, nil)

	// The code box.
	b.must(60*time.Second, "join box",
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible("#code-input", chromedp.ByID))
	inView("code-btn")
	view("join")
	b.must(60*time.Second, "consent",
		chromedp.SetValue("#code-input", code, chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("code-input").dispatchEvent(new Event("input", {bubbles: true}))`, nil),
		chromedp.Click("#code-btn", chromedp.ByID),
		chromedp.WaitVisible("#consent", chromedp.ByID))
	inView("join-btn")
	view("consent")

	// Consent, scrolled to its bottom: the data screen opens at its top.
	b.must(60*time.Second, "join",
		chromedp.SetValue("#nickname", "Ada", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("nickname").dispatchEvent(new Event("input", {bubbles: true}))`, nil),
		toBottom,
		chromedp.Click("#join-btn", chromedp.ByID),
		chromedp.WaitVisible("#data", chromedp.ByID))
	atTop("data")
	inView("train-btn")
	// One drawing: "1 picture stored".
	b.must(60*time.Second, "one drawing",
		drawStroke("draw", [][2]float64{{8, 6}, {14, 6}, {20, 6}, {20, 14}, {14, 22}, {8, 22}}),
		chromedp.Click("#draw-add", chromedp.ByID),
		chromedp.Poll(`document.getElementById("data-count").textContent === "1"`, nil, chromedp.WithPollingTimeout(30*time.Second)))
	var line string
	if err := b.eval(`document.getElementById("data-count").parentElement.textContent`, &line); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, "1 picture stored") || strings.Contains(line, "1 pictures") {
		t.Errorf("after one drawing the page says %q", line)
	}
	b.must(90*time.Second, "example pictures",
		chromedp.Click("#demo-btn", chromedp.ByID),
		chromedp.Poll(`Number(document.getElementById("data-count").textContent) > 1`, nil, chromedp.WithPollingTimeout(80*time.Second)))
	inView("train-btn")
	view("data")

	// The lobby, from the data screen scrolled to its bottom.
	b.must(60*time.Second, "lobby",
		toBottom,
		chromedp.Click("#train-btn", chromedp.ByID),
		chromedp.WaitVisible("#lobby", chromedp.ByID))
	atTop("lobby")
	var body string
	if err := b.eval(`document.body.innerText`, &body); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(body, "Waiting for your teacher"); n != 1 {
		t.Errorf("the lobby says \"Waiting for your teacher\" %d times", n)
	}
	wantPlan := "By the end of this lesson, at most ε = " + plan.FormatEpsilon(planned.Most) + " of your limit of 8 is used."
	m := b.meter()
	if w, err := strconv.ParseFloat(strings.TrimSuffix(m.Width, "%"), 64); m.Plan != wantPlan || !strings.Contains(m.Class, "meter-calm") || err != nil || w != 0 {
		t.Errorf("lobby meter %+v, want plan %q, calm, empty", m, wantPlan)
	}
	view("lobby")

	// The teacher starts.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/teacher/start?code="+code, nil)
	req.Header.Set(api.TeacherHeader, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("start: %s", resp.Status)
	}
	var st cview.Status
	if err := getJSON(srv.URL+"/api/status?code="+code, &st); err != nil {
		t.Fatal(err)
	}
	final := st.Session
	most, err := owner.Progress(final, privacy.Spent{}, privacy.Spent{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b.must(2*time.Minute, "what your phone sent, after round 3",
		chromedp.Poll(`(() => { const s = document.getElementById("phone-sent"); return s !== null && Number(s.dataset.round) >= 3 &&
  document.getElementById("acc") !== null; })()`, nil, chromedp.WithPollingTimeout(110*time.Second)))
	checkMeter(t, b.meter(), most.Most)
	checkSentPictures(t, b, final)

	// Try the model: the drawing stays beside the answer.
	b.must(60*time.Second, "try the model",
		chromedp.ScrollIntoView("#try", chromedp.ByID),
		drawStroke("try", [][2]float64{{10, 4}, {10, 24}, {18, 24}, {18, 4}}),
		chromedp.Click("#try-btn", chromedp.ByID),
		chromedp.Poll(`document.getElementById("prediction").textContent.startsWith("The model says")`, nil, chromedp.WithPollingTimeout(30*time.Second)))
	var lit int
	if err := b.eval(`(() => { const c = document.getElementById("try"); const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] > 128) n++; return n; })()`, &lit); err != nil {
		t.Fatal(err)
	}
	if lit == 0 {
		t.Error("the try canvas was cleared when the model answered")
	}
	if err := b.eval(`window.scrollTo(0, 0)`, nil); err != nil {
		t.Fatal(err)
	}
	view("training")
	if err := b.screenshot(filepath.Join(shots, "phone-training-full.png")); err != nil {
		t.Fatal(err)
	}

	// Reload: every text the meter shows from the new document on.
	b.must(20*time.Second, "meter recorder", chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(`window.__meter = [];
new MutationObserver(() => { const e = document.getElementById("eps");
  if (e && (window.__meter.length === 0 || window.__meter[window.__meter.length-1] !== e.textContent)) window.__meter.push(e.textContent); })
  .observe(document, {subtree: true, childList: true, characterData: true});`).Do(ctx)
		return err
	}))
	reload := func(how string) {
		t.Helper()
		before := epsOf(t, b.meter().Label)
		reloaded := time.Now()
		leftFor := make(chan leftReport, 1)
		onTrain := make(chan struct{})
		go func() { leftFor <- watchLeft(srv.URL, code, "Ada", onTrain) }()
		b.must(2*time.Minute, "reload ("+how+")", chromedp.Reload(), chromedp.WaitVisible("#train", chromedp.ByID))
		shown := time.Since(reloaded)
		close(onTrain)
		var seen []string
		if err := b.eval(`window.__meter`, &seen); err != nil {
			t.Fatal(err)
		}
		if len(seen) == 0 {
			t.Fatalf("reload (%s): the meter recorder saw nothing", how)
		}
		for _, s := range seen {
			if strings.Contains(s, "Nothing sent yet") || epsOf(t, s) < before {
				t.Errorf("reload (%s): the meter showed %q (before the reload: ε = %s); all: %q", how, s, plan.FormatEpsilon(before), seen)
			}
		}
		lr := <-leftFor
		if lr.err != nil {
			t.Error(lr.err)
		}
		t.Logf("reload (%s): the meter's first text %q (before: ε = %s); training screen %v after the reload; the coordinator listed the student as %v, away for %v, active again %v after the reload",
			how, seen[0], plan.FormatEpsilon(before), shown.Round(100*time.Millisecond), lr.states, lr.away.Round(100*time.Millisecond), lr.back.Round(100*time.Millisecond))
	}
	reload("as it is")
	// The same with the phone's CPU 4x slower and 150 ms more latency
	// (Chromium's emulation on the page; the test server sends the
	// program uncompressed and without caching headers, so no bandwidth
	// limit is set: that part is the page's loading work).
	b.must(20*time.Second, "throttle", emulation.SetCPUThrottlingRate(4), network.EmulateNetworkConditions(false, 150, -1, -1))
	reload("CPU x4, 150 ms")
	b.must(20*time.Second, "unthrottle", emulation.SetCPUThrottlingRate(1), network.EmulateNetworkConditions(false, 0, -1, -1))

	// The end: the meter's figure is the stored ledger's.
	b.must(3*time.Minute, "phone: finished",
		chromedp.Poll(`document.body.innerText.includes("The session has finished")`, nil, chromedp.WithPollingTimeout(170*time.Second)))
	_, dv := storedDevice(t, b, code, final)
	acc, ok := dv.(optim.Accountant)
	if !ok {
		t.Fatal("stored device is no accountant")
	}
	l := acc.Ledger()
	end, err := owner.Progress(final, privacy.Spent{}, l.Spent(), acc.Participations())
	if err != nil {
		t.Fatal(err)
	}
	m = b.meter()
	if !strings.HasPrefix(m.Label, "Used so far: ε = "+plan.FormatEpsilon(end.Spent)+" ") {
		t.Errorf("at the end the meter says %q; the stored ledger gives ε = %s", m.Label, plan.FormatEpsilon(end.Spent))
	}
	checkMeter(t, m, most.Most)
	// The bar's fill is the stored ledger's share of the lesson's rho.
	if f, err := plan.SessionFigures(final, owner.Delta); err != nil {
		t.Fatal(err)
	} else if err := checkFill(m, l.Rho(), f); err != nil {
		t.Errorf("at the end: %v", err)
	}
	view("end")
}

// meterView is what the privacy meter shows.
type meterView struct {
	Plan, Label, Class, Width, Fill string
}

func (b *browser) meter() meterView {
	b.t.Helper()
	var m meterView
	if err := b.eval(`(() => { const t = (id) => (document.getElementById(id) || {}).textContent || "";
  const f = document.querySelector("#meter .meter-fill");
  return {plan: t("eps-plan"), label: t("eps"), class: (document.getElementById("meter") || {}).className || "", width: f ? f.style.width : "",
  fill: f ? f.dataset.fill || "" : ""}; })()`, &m); err != nil {
		b.t.Fatal(err)
	}
	return m
}

var epsRe = regexp.MustCompile(`ε = ([0-9.]+)`)

// epsOf reads the epsilon a meter label states.
func epsOf(t *testing.T, label string) float64 {
	t.Helper()
	if strings.Contains(label, "Nothing sent yet") {
		return 0
	}
	m := epsRe.FindStringSubmatch(label)
	if m == nil {
		t.Fatalf("no ε in the meter's %q", label)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkMeter: the meter reads against the lesson's most: the label
// states epsilon and the share of the lesson's privacy the bar shows
// (its fill, whose width it is), the colour is calm.
func checkMeter(t *testing.T, m meterView, most float64) {
	t.Helper()
	spent := epsOf(t, m.Label)
	if spent <= 0 || spent > most+0.01 {
		t.Errorf("meter %+v: spent %v, want in (0, %v]", m, spent, most)
		return
	}
	fill, err := strconv.ParseFloat(m.Fill, 64)
	if err != nil || !(fill > 0 && fill <= 1) {
		t.Errorf("meter fill %q, want in (0, 1]", m.Fill)
		return
	}
	var pct float64
	if _, err := fmt.Sscanf(m.Label[strings.Index(m.Label, "(")+1:], "%f%%", &pct); err != nil {
		t.Errorf("meter label %q: no share of the lesson's privacy", m.Label)
	}
	// The label's share is the fill's, rounded down to a whole percent.
	if pct != math.Floor(100*fill) {
		t.Errorf("meter label %q: %v%%, want the fill's %v", m.Label, pct, fill)
	}
	w, err := strconv.ParseFloat(strings.TrimSuffix(m.Width, "%"), 64)
	if err != nil || math.Abs(w-100*fill) > 0.006 {
		t.Errorf("meter bar width %q, want the fill's %.2f%%", m.Width, 100*fill)
	}
	if !strings.Contains(m.Class, "meter-calm") {
		t.Errorf("meter class %q within the plan, want meter-calm", m.Class)
	}
	if !strings.Contains(m.Plan, "at most ε = "+plan.FormatEpsilon(most)+" of your limit of 8") {
		t.Errorf("meter plan %q, want the lesson's most %s", m.Plan, plan.FormatEpsilon(most))
	}
}

// checkSentPictures reads the two pictures of "what your phone sent" from
// their canvases (the centre of each of the 28x28 cells) and compares
// them with the update frames the page sent.
//
// False failures and power. In this session (nc, S = 1, b = 32, rho_p
// 1.5, T = 40) a sent coordinate carries noise of standard deviation
// about 0.1-0.2 against clean values of a few hundredths (the clean
// update has norm at most S over 7,850 coordinates), so the sent picture
// is mostly noise scaled to its own maximum: about 25 grey levels from
// 128 per cell, whatever the clean picture is; the mean difference of the
// two pictures was 38-49 in the runs, far from the 5 asserted. A noised
// frame matches the clean picture's exact grey level in a cell with
// probability of the order of 1/50, so matching more than half of the 784
// cells by chance has a probability far below 1e-100; the clean update
// sent as it is would match all 784 (and the sent picture would equal
// the clean one: mutation phone-sent-shows-clean).
func checkSentPictures(t *testing.T, b *browser, p wire.SessionParams) {
	t.Helper()
	var got struct {
		Round        int
		Words        string
		Clean, Noisy []int
	}
	if err := b.eval(`(() => { const read = (id) => { const c = document.getElementById(id); const x = c.getContext("2d");
  const out = []; for (let i = 0; i < 28; i++) for (let j = 0; j < 28; j++)
    out.push(x.getImageData(Math.floor((j + 0.5) * c.width / 28), Math.floor((i + 0.5) * c.height / 28), 1, 1).data[0]);
  return out; };
  const s = document.getElementById("phone-sent");
  return {round: Number(s.dataset.round), words: document.getElementById("sent-words").textContent, clean: read("sent-clean"), noisy: read("sent-noisy")}; })()`, &got); err != nil {
		t.Fatal(err)
	}
	names := p.LabelNames()
	row := -1
	for i, n := range names {
		if strings.Contains(got.Words, "about “"+n+"”") {
			row = i
		}
	}
	if row < 0 || len(got.Clean) != local.Features || len(got.Noisy) != local.Features {
		t.Fatalf("what your phone sent: row %d, %d and %d values, words %q", row, len(got.Clean), len(got.Noisy), got.Words)
	}
	diff := 0.0
	for i := range got.Clean {
		diff += math.Abs(float64(got.Clean[i] - got.Noisy[i]))
	}
	diff /= local.Features
	t.Logf("what your phone sent, round %d, about %q: mean grey difference %.1f of 255", got.Round, names[row], diff)
	if diff < 5 {
		t.Errorf("the pictures before and after the noise differ by %.1f grey levels on average: no noise to see", diff)
	}
	ups := frameUpdates(t, b.sent(), "phone", p.Dim)
	if len(ups) == 0 {
		t.Fatal("no update frames captured")
	}
	stride := local.Features + 1
	found := false
	for _, u := range ups {
		for r := range p.Classes {
			pic := local.Picture(u.Vec[r*stride : r*stride+local.Features])
			same := 0
			for i := range pic {
				if int(pic[i]) == got.Clean[i] {
					same++
				}
			}
			// A noised frame shares few grey levels with the clean
			// picture; the clean update sent would share all of them.
			if same > local.Features/2 {
				t.Errorf("round %d, row %d of a frame sent matches the clean picture in %d of %d cells", u.T, r, same, local.Features)
			}
			if u.T == got.Round && r == row {
				found = true
				for i := range pic {
					if int(pic[i]) != got.Noisy[i] {
						t.Fatalf("the picture of what was sent differs from round %d's frame at cell %d: %d, frame %d", u.T, i, got.Noisy[i], pic[i])
					}
				}
			}
		}
	}
	if !found {
		t.Errorf("no frame of round %d captured (%d frames)", got.Round, len(ups))
	}
}

// leftReport is how the coordinator listed a student around a reload.
type leftReport struct {
	states []string      // the states seen, in order, without repeats
	away   time.Duration // listed as "left" or "gone"
	back   time.Duration // from the start of the watch to "active" again
	err    error
}

// watchLeft polls the coordinator's status from just before a reload
// until the student is listed as taking part again after having been
// away, or after the page shows training again (shown closed), or 90 s;
// it reports how long it was listed as away.
func watchLeft(base, code, nickname string, shown <-chan struct{}) leftReport {
	var r leftReport
	start := time.Now()
	last := start
	for time.Since(start) < 90*time.Second {
		var st cview.Status
		if err := getJSON(base+"/api/status?code="+code, &st); err != nil {
			r.err = err
			return r
		}
		now := time.Now()
		p := person(st, nickname)
		if len(r.states) == 0 || r.states[len(r.states)-1] != p.State {
			r.states = append(r.states, p.State)
		}
		away := p.State == "left" || p.State == "gone"
		if away {
			r.away += now.Sub(last)
		}
		last = now
		back := false
		select {
		case <-shown:
			back = p.State == "active"
		default:
			back = p.State == "active" && r.away > 0
		}
		if back || st.State == coordinator.StateEnded {
			r.back = now.Sub(start)
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.err = fmt.Errorf("%s not active again within 90 s of the reload (states %v)", nickname, r.states)
	return r
}

// viewShot saves a PNG of what the viewport shows (the first screen of
// a phone, without scrolling).
func (b *browser) viewShot(path string) error {
	var png []byte
	if err := b.run(20*time.Second, chromedp.CaptureScreenshot(&png)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}
