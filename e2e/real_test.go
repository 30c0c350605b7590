package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/coordinator/api"
	"browserfl/coordinator/sessions"
	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
	"browserfl/internal/loopback"
	"browserfl/shared/dataset"
	"browserfl/shared/wire"
	"browserfl/wasm/local"
)

// coordBin builds cmd/coordinator once per test binary (relinked only
// when its build ID changed: goBuild).
var coordBin struct {
	once sync.Once
	path string
	err  error
}

func coordinatorBinary(t testing.TB) string {
	t.Helper()
	coordBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "browserfl-e2e-bin-")
		if err != nil {
			coordBin.err = err
			return
		}
		coordBin.path = filepath.Join(dir, "coordinator")
		if err := goBuild(nil, nil, "./cmd/coordinator", coordBin.path); err != nil {
			coordBin.err = fmt.Errorf("building cmd/coordinator: %w", err)
		}
	})
	if coordBin.err != nil {
		t.Fatal(coordBin.err)
	}
	return coordBin.path
}

// process is the real coordinator running as its own process, so the
// test can kill it (SIGKILL: no shutdown path runs) and start it again on
// the same address and data directory.
type process struct {
	t       testing.TB
	bin     string
	addr    string
	dataDir string
	args    []string
	cmd     *exec.Cmd
	exited  chan error
	log     *os.File
}

func (p *process) start() {
	p.t.Helper()
	args := append([]string{"-listen", p.addr, "-data", p.dataDir}, p.args...)
	p.cmd = exec.Command(p.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.exited = make(chan error, 1)
	go func(c *exec.Cmd, ch chan error) { ch <- c.Wait() }(p.cmd, p.exited)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if r, err := http.Get("http://" + p.addr + "/healthz"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return
			}
		}
		select {
		case err := <-p.exited:
			p.t.Fatalf("coordinator exited at start: %v (log %s)", err, p.log.Name())
		case <-time.After(100 * time.Millisecond):
		}
	}
	p.t.Fatalf("coordinator not healthy after 60 s (log %s)", p.log.Name())
}

func (p *process) kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// stop ends it with SIGTERM (it finishes, then serves the dashboard).
func (p *process) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

// proxyTo forwards every request (websockets included) to addr, keeping
// the Host header so the coordinator's same-origin check sees the page's
// own origin.
func proxyTo(addr string) http.Handler {
	target := &url.URL{Scheme: "http", Host: addr}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "coordinator unavailable", http.StatusBadGateway)
		},
	}
}

// pageData reads the samples a page stored (IndexedDB), for the frame
// check: these are the bytes that must never leave. Images and labels
// are read in one transaction, as the page writes them: a page that
// stores its next chunk meanwhile is seen before or after, never half.
func pageData(t *testing.T, b *browser, code, src string) dataset.Set {
	t.Helper()
	var raw [2][]int
	expr := fmt.Sprintf(`new Promise((ok, fail) => {
  const r = indexedDB.open(%q);
  r.onerror = () => fail(String(r.error));
  r.onsuccess = () => {
    const tx = r.result.transaction("kv");
    const kv = tx.objectStore("kv");
    const out = [[], []];
    [%q, %q].forEach((key, i) => {
      const g = kv.get(key);
      g.onsuccess = () => { if (g.result) out[i] = Array.from(g.result); };
    });
    tx.oncomplete = () => { r.result.close(); ok(out); };
    tx.onerror = () => fail(String(tx.error));
  };
})`, "browserfl:"+wire.NormalizeJoinCode(code), "data/"+src+"/images", "data/"+src+"/labels")
	if err := b.run(60*time.Second, chromedp.Evaluate(expr, &raw, awaitPromise)); err != nil {
		t.Fatalf("reading the page's %s source: %v", src, err)
	}
	bytesOf := func(v []int) []byte {
		out := make([]byte, len(v))
		for i, x := range v {
			out[i] = byte(x)
		}
		return out
	}
	if len(raw[0]) == 0 {
		return local.Empty(src) // this page has no such source
	}
	s, err := local.Decode(src, bytesOf(raw[0]), bytesOf(raw[1]))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBrowserSession is item 7 of the browser issue, against the real
// coordinator (cmd/coordinator as a process): five pages, each with its
// own Chromium profile, join with the demo data and train the default
// algorithm to a stated accuracy; one page is reloaded and another's
// browser is closed and restarted mid-session; the coordinator is killed
// (SIGKILL) and restarted mid-session; afterwards every outgoing frame is
// checked for sample bytes, every update for noise, every page's stored
// noise state against what the coordinator included, and the Long Tasks
// of every page.
func TestBrowserSession(t *testing.T) {
	webDir := pageBuild(t)
	bin := coordinatorBinary(t)
	const pages = 5
	const code = "E2E5"
	p := e2eSession(pages)
	logf, err := os.CreateTemp("", "browserfl-e2e-coordinator-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	coord := &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: t.TempDir(), log: logf, args: []string{
		"-join-code", code, "-dataset", fashionDir, "-eval-every", "1", "-eval-samples", "1000",
		// Rounds wait for all the pages (-min-devices): on a busy machine
		// opening five pages one after another takes longer than the
		// whole session, which then ran with the first two only.
		"-demo-shards", "40", "-demo-alpha", "100", "-deadline", "10s", "-round-gap", "500ms", "-seed", "7",
		"-min-devices", fmt.Sprint(pages),
		"-name", p.Name, "-algorithm", p.Algorithm, "-model", p.Model,
		"-M", fmt.Sprint(p.M), "-m", fmt.Sprint(p.Cohort), "-T", fmt.Sprint(p.Rounds), "-b", fmt.Sprint(p.Batch),
		"-rho", fmt.Sprint(p.Rho), "-clip", fmt.Sprint(p.Clip), "-eta", fmt.Sprint(p.Eta), "-D", fmt.Sprint(p.Diameter),
	}}
	coord.start()
	defer func() {
		if coord.cmd.ProcessState == nil {
			coord.kill()
		}
	}()
	srv := serve(t, pageHandler(webDir, proxyTo(coord.addr)))
	pageURL := srv.URL + "/?code=" + code
	shots := screenshotDir(t)

	profiles := make([]string, pages)
	browsers := make([]*browser, pages)
	for i := range browsers {
		profiles[i] = t.TempDir()
		browsers[i] = launch(t, profiles[i])
	}
	defer func() {
		for _, b := range browsers {
			b.close()
		}
	}()
	for i, b := range browsers {
		dir := ""
		if i == 0 {
			dir = shots
		}
		openPage(t, b, pageURL, dir)
	}
	ready, err := browsers[0].mark("fl-ready")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page ready %.0f ms after navigation (wasm build %v)", ready, build.dur)

	progress := func() (committed int, acc float64) {
		var pr api.Progress
		if err := getJSON(srv.URL+"/api/progress?code="+code, &pr); err != nil {
			return -1, 0
		}
		if n := len(pr.Accuracy); n > 0 {
			acc = pr.Accuracy[n-1].Accuracy
		}
		return pr.Committed, acc
	}
	waitRound := func(r int, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for k := 0; time.Now().Before(deadline); k++ {
			if c, _ := progress(); c >= r {
				return
			}
			if k%10 == 9 && allStopped(browsers) {
				break // no page will ever answer again: fail now
			}
			time.Sleep(200 * time.Millisecond)
		}
		c, _ := progress()
		var why []string
		for i, b := range browsers {
			var st string
			b.eval(`(document.getElementById("conn")||{}).textContent + ": " + (document.getElementById("status")||{}).textContent`, &st)
			why = append(why, fmt.Sprintf("page %d: %s", i, st))
		}
		t.Fatalf("round %d not committed (stalled at %d; limit %v); coordinator log %s\n%s", r, c, within, logf.Name(), strings.Join(why, "\n"))
	}

	// Frames sent before a browser restart are kept (a reload keeps
	// recording in the same browser).
	var earlier [pages][]frame

	waitRound(5, 4*time.Minute)
	// quiet waits until page b has no update in flight: its stored
	// state has no pending release (the last one was decided) and the
	// page is not working on a round ("Learning…" or "Sent…"; the next
	// round comes 500 ms after a commit at the earliest). A frame sent by
	// a document that is being unloaded may never reach the DevTools
	// capture, and the invariant check needs every included update. (The
	// page shows the latest of its states: on a busy machine a round's
	// "included" and the next round's "Learning" can reach the screen as
	// one change, so the status line alone may never say "included".)
	quiet := func(b *browser) {
		t.Helper()
		const expr = `new Promise((ok, fail) => {
  const status = (document.getElementById("status")||{textContent: ""}).textContent;
  if (status.startsWith("Learning") || status.startsWith("Sent")) return ok(false);
  const r = indexedDB.open(%q);
  r.onerror = () => fail(String(r.error));
  r.onsuccess = () => {
    const g = r.result.transaction("kv").objectStore("kv").get("dev/state");
    g.onsuccess = () => {
      const v = g.result; r.result.close();
      if (!v) return ok(false);
      const st = JSON.parse(new TextDecoder().decode(v));
      ok(!st.pending);
    };
    g.onerror = () => fail(String(g.error));
  };
})`
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			var ok bool
			if err := b.run(20*time.Second, chromedp.Evaluate(fmt.Sprintf(expr, "browserfl:"+wire.NormalizeJoinCode(code)), &ok, awaitPromise)); err == nil && ok {
				return
			}
		}
		t.Fatalf("quiet moment: the page kept an update in flight for 90 s\npage text: %s", b.text())
	}
	// The teacher pauses the lesson for the reload and the browser
	// restart: a round that starts while a document unloads can have its
	// update reach the coordinator and not the DevTools capture (a CI run
	// lost page 1's round 6 that way, after quiet said no round was in
	// flight), so no round may start until both pages are back.
	secret := teacherSecretIn(t, coord.dataDir)
	if err := teacherAction(coord.addr, code, secret, "pause"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var st view.Status
		if err := getJSON(srv.URL+"/api/status?code="+code, &st); err == nil && st.State == "paused" && st.Round == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the paused lesson kept a round open for 2 minutes")
		}
	}
	// A page is reloaded.
	id1, _ := storedDevice(t, browsers[1], code, p)
	quiet(browsers[1])
	browsers[1].must(60*time.Second, "reload", chromedp.Reload(), chromedp.WaitVisible("#train", chromedp.ByID))
	// Another page's browser is closed and started again on its profile.
	id2, _ := storedDevice(t, browsers[2], code, p)
	quiet(browsers[2])
	earlier[2] = append(earlier[2], browsers[2].sent()...)
	browsers[2].close()
	browsers[2] = launch(t, profiles[2])
	browsers[2].must(60*time.Second, "browser restart", chromedp.Navigate(pageURL), chromedp.WaitVisible("#train", chromedp.ByID))
	resumed := map[int]string{1: id1.DeviceID, 2: id2.DeviceID}
	if err := teacherAction(coord.addr, code, secret, "resume"); err != nil {
		t.Fatal(err)
	}

	waitRound(9, 4*time.Minute)
	// The coordinator is killed and restarted on the same store, between
	// two rounds: each page's demo data holds exactly the session's rounds,
	// and a round open at the kill is lost with the samples the pages
	// spent on it (their updates were sent, so the samples stay used), so
	// the pages would run out one round before the end. The 500 ms round
	// gap is the window: the status says no round is open, then the kill.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var st view.Status
		if err := getJSON(srv.URL+"/api/status?code="+code, &st); err == nil && st.Round == nil && st.Committed >= 9 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no moment between two rounds in 2 minutes")
		}
	}
	before, _ := progress()
	coord.kill()
	// A page reloaded while the coordinator is down waits for it (it
	// retries the session parameters) and then resumes.
	id3, _ := storedDevice(t, browsers[3], code, p)
	resumed[3] = id3.DeviceID
	browsers[3].must(30*time.Second, "reload while the coordinator is down", chromedp.Reload(),
		chromedp.Poll(`(document.getElementById("error")||{textContent: ""}).textContent.includes("retrying")`, nil,
			chromedp.WithPollingTimeout(20*time.Second)))
	coord.start()
	browsers[3].must(60*time.Second, "resume after the outage", chromedp.WaitVisible("#train", chromedp.ByID))
	t.Logf("coordinator killed after round %d and restarted", before)

	// The projector dashboard while the session runs (its own browser,
	// so the pages' Long Tasks are not affected by its rendering).
	waitRound(14, 4*time.Minute)
	dash := launch(t, t.TempDir())
	dash.must(30*time.Second, "dashboard", chromedp.Navigate(srv.URL+"/dashboard?code="+code),
		chromedp.Poll(`document.body.innerText.includes("%")`, nil, chromedp.WithPollingTimeout(20*time.Second)))
	if err := dash.screenshot(filepath.Join(shots, "dashboard.png")); err != nil {
		t.Fatal(err)
	}
	dash.close()

	waitRound(p.Rounds, 6*time.Minute)
	var tasks []taskReport
	for _, b := range browsers {
		tasks = append(tasks, readTasks(t, b))
	}
	_, acc := progress()
	t.Logf("accuracy %.3f after %d rounds", acc, p.Rounds)
	// Stated goal: 0.60 on 1,000 Fashion-MNIST test images (the same
	// configuration reaches about 0.7 in the simulator).
	if acc < 0.60 {
		t.Errorf("global accuracy %.3f after %d rounds, want >= 0.60", acc, p.Rounds)
	}
	// "Try the model": draw a shape, ask the page to classify it with
	// the current global model (fetched from /api/model).
	browsers[0].must(30*time.Second, "try the model",
		chromedp.Poll(`document.getElementById("acc") !== null`, nil, chromedp.WithPollingTimeout(15*time.Second)),
		drawStroke("try", [][2]float64{{8, 4}, {20, 4}, {20, 24}, {8, 24}, {8, 4}}),
		chromedp.Click("#try-btn", chromedp.ByID),
		chromedp.Poll(`document.getElementById("prediction").textContent.startsWith("The model says")`, nil, chromedp.WithPollingTimeout(10*time.Second)),
	)
	{
		if err := browsers[0].screenshot(filepath.Join(shots, "training.png")); err != nil {
			t.Fatal(err)
		}
	}

	// The reloaded and the restarted page are still the same devices.
	for i, id := range resumed {
		st, _ := storedDevice(t, browsers[i], code, p)
		if id == "" || st.DeviceID != id {
			t.Errorf("page %d resumed as device %q, was %q", i, st.DeviceID, id)
		}
	}

	// Everything each page sent, with its samples.
	var sets []dataset.Set
	var ups []sentUpdate
	for i, b := range browsers {
		for _, src := range []string{"demo", "files", "drawn"} {
			sets = append(sets, pageData(t, b, code, src))
		}
		st, _ := storedDevice(t, b, code, p)
		frames := append(append([]frame(nil), earlier[i]...), b.sent()...)
		ups = append(ups, frameUpdates(t, frames, st.DeviceID, p.Dim)...)
	}
	for i, b := range browsers {
		earlier[i] = append(earlier[i], b.sent()...)
	}
	checkFrames(t, earlier[:], sets)

	// Inclusion as the coordinator committed it (read from its store
	// after it stopped).
	coord.stop()
	storePath, err := sessions.CurrentStorePath(coord.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(storePath)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.Rounds(0, 1000)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	inc := map[int]map[string]bool{}
	for _, r := range recs {
		inc[r.T] = map[string]bool{}
		for _, id := range r.Included {
			inc[r.T][id] = true
		}
	}
	checkInvariant(t, ups, func(r int, id string) bool { return inc[r][id] }, browsers, code, p)
	checkNoised(t, ups, p)
	reportLongTasks(t, tasks)
}

// allStopped reports whether every page's runtime has stopped.
func allStopped(bs []*browser) bool {
	for _, b := range bs {
		var conn string
		if b.eval(`(document.getElementById("conn")||{}).textContent`, &conn) != nil || conn != "stopped" {
			return false
		}
	}
	return true
}

func getJSON(u string, v any) error {
	r, err := http.Get(u)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	if r.StatusCode != 200 {
		return fmt.Errorf("%s: %s", u, r.Status)
	}
	return jsonDecode(r, v)
}

func jsonDecode(r *http.Response, v any) error { return json.NewDecoder(r.Body).Decode(v) }

// updateShots, when set, makes the browser test write its screenshots to
// docs/screenshots (go test ./e2e -run TestBrowserSession -args
// -screenshots); otherwise they go to a temporary directory.
var updateShots = flag.Bool("screenshots", false, "write screenshots to docs/screenshots")

func screenshotDir(t *testing.T) string {
	if *updateShots {
		return filepath.Join(repoRoot(), "docs", "screenshots")
	}
	return t.TempDir()
}
