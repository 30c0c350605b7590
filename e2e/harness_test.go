package e2e

import (
	"browserfl/coordinator/api"
	"browserfl/coordinator/site"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"browserfl"
)

// chromiumPath is Debian's chromium launcher.
const chromiumPath = "/usr/bin/chromium"

// build holds the page build shared by every test of the binary.
var build struct {
	once sync.Once
	dir  string // contains app.wasm, wasm_exec.js and the web/ assets
	err  error
	dur  time.Duration
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// pageBuild builds the wasm page once (about 20 s on two cores when the
// build cache is cold; relinked only when its build ID changed:
// goBuild) into a temporary directory together with the static assets
// of web/.
func pageBuild(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s not found: install it with scripts/setup.sh --browser (%v)", chromiumPath, err)
	}
	build.once.Do(func() {
		start := time.Now()
		dir, err := os.MkdirTemp("", "browserfl-e2e-web-")
		if err != nil {
			build.err = err
			return
		}
		build.dir = dir
		root := repoRoot()
		for out, pkg := range map[string]string{"app.wasm": "./wasm", "bench.wasm": "./wasm/bench"} {
			if err := goBuild([]string{"GOOS=js", "GOARCH=wasm"}, []string{"-trimpath", "-ldflags=-s -w"}, pkg, filepath.Join(dir, out)); err != nil {
				build.err = fmt.Errorf("building %s: %w", pkg, err)
				return
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "bench.html"), []byte(benchHTML), 0o644); err != nil {
			build.err = err
			return
		}
		goroot, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			build.err = fmt.Errorf("go env GOROOT: %w", err)
			return
		}
		// The Go runtime's loader, and every asset of web/ (its loaders
		// app.js and worker.js, style.css), as the coordinator embeds
		// them.
		copies := map[string]string{
			filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "wasm_exec.js"): "wasm_exec.js",
		}
		for _, pat := range []string{"*.js", "*.css"} {
			names, err := filepath.Glob(filepath.Join(root, "web", pat))
			if err != nil {
				build.err = err
				return
			}
			for _, n := range names {
				if b := filepath.Base(n); b != "wasm_exec.js" {
					copies[n] = b
				}
			}
		}
		for src, dst := range copies {
			b, err := os.ReadFile(src)
			if err != nil {
				build.err = err
				return
			}
			if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
				build.err = err
				return
			}
		}
		build.dur = time.Since(start)
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.dir
}

// benchHTML loads wasm/bench (see BenchmarkDeviceStepWasm).
const benchHTML = `<!doctype html><html><body><script src="/web/wasm_exec.js"></script><script>
const go = new Go();
WebAssembly.instantiateStreaming(fetch("/web/bench.wasm"), go.importObject).then((r) => go.run(r.instance));
</script></body></html>`

// pageHandler serves the page (index.html at /, assets under /web/) and
// hands everything else to backend.
func pageHandler(webDir string, backend http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// The coordinator's own policy, so every browser test runs the
		// page under it.
		w.Header().Set("Content-Security-Policy", site.PageCSP(r))
		w.Write(browserfl.IndexHTML)
	})
	web := http.StripPrefix("/web/", http.FileServerFS(site.FilesOnly(os.DirFS(webDir)))) // no directory listings, as the coordinator
	mux.Handle("GET /web/", web)
	mux.Handle("GET /web/worker.js", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The coordinator's worker policy, as for the page.
		w.Header().Set("Content-Security-Policy", site.WorkerCSP(r))
		web.ServeHTTP(w, r)
	}))
	if backend != nil {
		mux.Handle("/", backend)
	}
	return mux
}

// browser is one headless Chromium with its own profile directory.
type browser struct {
	t       testing.TB
	dataDir string
	ctx     context.Context // the tab's context
	cancel  context.CancelFunc

	mu       sync.Mutex
	frames   []frame // outgoing websocket frames
	received int     // incoming websocket frames
}

// frame is one outgoing websocket frame as Chromium reports it.
type frame struct {
	Opcode int // 1 text, 2 binary
	Data   []byte
}

// launch starts Chromium with the profile dataDir (created by the caller
// so a browser restart can reuse it) and attaches the frame recorder.
func launch(t testing.TB, dataDir string, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(dataDir),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-crash-reporter", true),
		// Background tabs must not be throttled: five pages train at once.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.WindowSize(1000, 1100),
	}
	opts = append(opts, extra...)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &browser{t: t, dataDir: dataDir, ctx: ctx}
	b.cancel = func() {
		// Close the browser gracefully and wait for it, so its profile
		// directory is complete (a restart reuses it) and removable.
		chromedp.Cancel(ctx)
		cancel()
		acancel()
	}
	// The device's websocket is the page's own (its worker's runtime
	// uses it through web/app.js's relay), so its frames are the page
	// target's.
	chromedp.ListenTarget(ctx, b.record)
	// Long Tasks API observer installed before any page script runs.
	const observer = `window.__longtasks = [];
try {
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longtasks.push({start: e.startTime, duration: e.duration}); })
    .observe({type: "longtask", buffered: true});
} catch (e) { window.__longtasks_error = String(e); }`
	if err := chromedp.Run(ctx,
		network.Enable(),
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(observer).Do(ctx)
			return err
		}),
	); err != nil {
		b.cancel()
		t.Fatalf("starting chromium: %v", err)
	}
	return b
}

// record keeps the websocket frames a page's target reports.
func (b *browser) record(ev any) {
	switch e := ev.(type) {
	case *network.EventWebSocketFrameSent:
		f := frame{Opcode: int(e.Response.Opcode)}
		if f.Opcode == 1 {
			f.Data = []byte(e.Response.PayloadData)
		} else {
			d, err := base64.StdEncoding.DecodeString(e.Response.PayloadData)
			if err != nil {
				d = []byte(e.Response.PayloadData)
			}
			f.Data = d
		}
		b.mu.Lock()
		b.frames = append(b.frames, f)
		b.mu.Unlock()
	case *network.EventWebSocketFrameReceived:
		b.mu.Lock()
		b.received++
		b.mu.Unlock()
	}
}

// close stops the browser (its profile directory stays).
func (b *browser) close() { b.cancel() }

// run runs chromedp actions with a deadline.
func (b *browser) run(timeout time.Duration, actions ...chromedp.Action) error {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	return chromedp.Run(ctx, actions...)
}

func (b *browser) must(timeout time.Duration, what string, actions ...chromedp.Action) {
	b.t.Helper()
	if err := b.run(timeout, actions...); err != nil {
		b.t.Fatalf("%s: %v\npage text: %s", what, err, b.text())
	}
}

// text returns the page's visible text (for failure messages).
func (b *browser) text() string {
	var s string
	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Second)
	defer cancel()
	chromedp.Run(ctx, chromedp.Evaluate(`document.body ? document.body.innerText : ""`, &s))
	return s
}

// eval evaluates a JavaScript expression into out.
func (b *browser) eval(expr string, out any) error {
	return b.run(10*time.Second, chromedp.Evaluate(expr, out))
}

// sent returns a copy of the outgoing frames recorded so far.
func (b *browser) sent() []frame {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]frame(nil), b.frames...)
}

// longTask is one entry of the Long Tasks API.
type longTask struct {
	Start    float64 `json:"start"`
	Duration float64 `json:"duration"`
}

func (b *browser) longTasks() ([]longTask, error) {
	var raw string
	if err := b.eval(`JSON.stringify(window.__longtasks || null)`, &raw); err != nil {
		return nil, err
	}
	var lt []longTask
	if err := json.Unmarshal([]byte(raw), &lt); err != nil {
		return nil, fmt.Errorf("long tasks %q: %w", raw, err)
	}
	return lt, nil
}

// mark returns the startTime of performance mark name (ms since
// navigation start), or an error if the page has not set it.
func (b *browser) mark(name string) (float64, error) {
	var v float64
	err := b.eval(fmt.Sprintf(`(performance.getEntriesByName(%q)[0] || {startTime: -1}).startTime`, name), &v)
	if err == nil && v < 0 {
		err = fmt.Errorf("performance mark %q not set", name)
	}
	return v, err
}

// screenshot saves a PNG of the full page to path.
func (b *browser) screenshot(path string) error {
	var png []byte
	if err := b.run(20*time.Second, chromedp.FullScreenshot(&png, 100)); err != nil { // quality 100 = PNG
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}

// drawStroke draws a polyline on canvas #id with pointer events, in
// canvas pixel coordinates (0..28).
func drawStroke(id string, pts [][2]float64) chromedp.Action {
	js, _ := json.Marshal(pts)
	return chromedp.Evaluate(fmt.Sprintf(`(() => {
  const el = document.getElementById(%q);
  const r = el.getBoundingClientRect();
  const pts = %s;
  const at = (p) => ({clientX: r.left + p[0]*r.width/28, clientY: r.top + p[1]*r.height/28, bubbles: true, pointerId: 1});
  el.dispatchEvent(new PointerEvent("pointerdown", at(pts[0])));
  for (const p of pts.slice(1)) el.dispatchEvent(new PointerEvent("pointermove", at(p)));
  el.dispatchEvent(new PointerEvent("pointerup", at(pts[pts.length-1])));
  return true;
})()`, id, js), nil)
}

// serve starts an HTTP server for h and returns its URL.
func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// teacherSecretIn reads the teacher secret a coordinator started with
// -data dataDir keeps in its host index (host.json).
func teacherSecretIn(t testing.TB, dataDir string) string {
	t.Helper()
	var index struct {
		TeacherSecret string `json:"teacher_secret"`
	}
	raw, err := os.ReadFile(filepath.Join(dataDir, "host.json"))
	if err != nil || json.Unmarshal(raw, &index) != nil || index.TeacherSecret == "" {
		t.Fatalf("host index: %v", err)
	}
	return index.TeacherSecret
}

// teacherAction sends the teacher's action (POST /api/teacher/action:
// start, pause, resume, end...) to the coordinator at addr and returns
// an error unless it succeeds.
func teacherAction(addr, code, secret, action string) error {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/teacher/"+action+"?code="+code, nil)
	if err != nil {
		return err
	}
	req.Header.Set(api.TeacherHeader, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("teacher %s: %w", action, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("teacher %s: %s", action, resp.Status)
	}
	return nil
}
