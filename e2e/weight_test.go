package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"browserfl/coordinator/site"
	"browserfl/internal/loopback"
	"browserfl/wasm/local"
)

// Join weight budgets: what one student's phone downloads from
// the bare address to waiting in the lobby, and for a reload there.
const (
	joinBudget   = 2_500_000
	reloadBudget = 300_000
)

// byteCounter is a TCP relay in front of the page's server that counts
// every byte each way (headers, bodies as sent, websocket frames): what
// the phone's network carries, whichever of the page's threads asked.
type byteCounter struct {
	ln       net.Listener
	down, up atomic.Int64 // to the browser, from the browser
	wg       sync.WaitGroup
}

func newByteCounter(t *testing.T, target string) *byteCounter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &byteCounter{ln: ln}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			c.wg.Add(2)
			go c.pipe(out, in, &c.up)
			go c.pipe(in, out, &c.down)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return c
}

type countWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (cw countWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n.Add(int64(n))
	return n, err
}

func (c *byteCounter) pipe(dst, src net.Conn, n *atomic.Int64) {
	defer c.wg.Done()
	io.Copy(countWriter{dst, n}, src)
	dst.Close()
	src.Close()
}

// requestLog counts the requests by path and the response bytes (as
// sent, compressed or not) that the page's server answered.
type requestLog struct {
	mu    sync.Mutex
	count map[string]int
	bytes map[string]int64
	enc   map[string]string
}

func (l *requestLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recWriter{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		l.mu.Lock()
		l.count[r.URL.Path]++
		l.bytes[r.URL.Path] += rec.n
		if e := w.Header().Get("Content-Encoding"); e != "" {
			l.enc[r.URL.Path] = e
		}
		l.mu.Unlock()
	})
}

// take returns what was logged since the last take, and clears it.
func (l *requestLog) take() (count map[string]int, bytes map[string]int64, enc map[string]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	count, bytes, enc = l.count, l.bytes, l.enc
	l.count, l.bytes, l.enc = map[string]int{}, map[string]int64{}, map[string]string{}
	return
}

type recWriter struct {
	http.ResponseWriter
	n int64
}

func (r *recWriter) Write(p []byte) (int, error) {
	n, err := r.ResponseWriter.Write(p)
	r.n += int64(n)
	return n, err
}

func (r *recWriter) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// pageNet sums, from the browser's own network events of the page's
// target, the bytes each finished request took off the network
// (Network.loadingFinished encodedDataLength: headers and body as
// received; 0 for what came from the cache).
type pageNet struct {
	mu    sync.Mutex
	urls  map[network.RequestID]string
	total float64
	byURL map[string]float64
}

func (p *pageNet) listen(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		p.urls[e.RequestID] = e.Request.URL
	case *network.EventLoadingFinished:
		u := p.urls[e.RequestID]
		if i := strings.IndexByte(u, '?'); i >= 0 {
			u = u[:i]
		}
		p.total += e.EncodedDataLength
		p.byURL[u] += e.EncodedDataLength
	}
}

func (p *pageNet) take() (float64, map[string]float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, m := p.total, p.byURL
	p.total, p.byURL = 0, map[string]float64{}
	return t, m
}

// bootWords records, from before the page's scripts run, each text the
// page shows while its program loads (the .boot line).
const bootWords = `window.__boot = [];
new MutationObserver(() => {
  const el = document.querySelector("#vugu_mount_point .boot");
  if (el && window.__boot[window.__boot.length - 1] !== el.textContent) window.__boot.push(el.textContent);
}).observe(document, {subtree: true, childList: true, characterData: true});`

// addBootWords installs bootWords in the tab.
func addBootWords() chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(bootWords).Do(ctx)
		return err
	})
}

// checkBootWords checks that the page said, in words, how far the
// program's download was (a percentage) and then that it was starting.
func checkBootWords(t *testing.T, b *browser, what string) {
	t.Helper()
	var words []string
	b.must(10*time.Second, "boot words", chromedp.Evaluate(`window.__boot`, &words))
	t.Logf("%s: the page said %q", what, words)
	pct := regexp.MustCompile(`^Downloading the program: \d{1,2}%$`)
	var sawPct, sawStart bool
	for _, w := range words {
		sawPct = sawPct || pct.MatchString(w)
		sawStart = sawStart || (sawPct && w == "Starting the program…")
	}
	if !sawPct || !sawStart {
		t.Errorf("%s: the page did not say the download's progress, then that it starts: %q", what, words)
	}
}

// coordinatorWithPage builds cmd/coordinator with the page build of
// webDir (app.wasm, wasm_exec.js) embedded in its web/ as `make wasm`
// would put them there (wasm_exec.js as it is, app.wasm as its two
// compressed forms in web/precompressed, made here by site.Precompress;
// the tree's own forms are left out), through a build overlay: the tree
// is not touched, and a clean checkout without `make wasm` works.
func coordinatorWithPage(t testing.TB, webDir string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"app.wasm", "wasm_exec.js"} {
		b, err := os.ReadFile(filepath.Join(webDir, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(src, f), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	forms := filepath.Join(dir, "precompressed")
	if err := site.Precompress(os.DirFS(src), forms); err != nil {
		t.Fatal(err)
	}
	web := filepath.Join(repoRoot(), "web")
	replace := map[string]string{filepath.Join(web, "wasm_exec.js"): filepath.Join(webDir, "wasm_exec.js")}
	old, err := os.ReadDir(filepath.Join(web, "precompressed"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range old {
		replace[filepath.Join(web, "precompressed", e.Name())] = "" // deleted
	}
	made, err := os.ReadDir(forms)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range made {
		replace[filepath.Join(web, "precompressed", e.Name())] = filepath.Join(forms, e.Name())
	}
	ov, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), ov, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "coordinator")
	cmd := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", bin, "./cmd/coordinator")
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/coordinator with the page: %v\n%s", err, out)
	}
	return bin
}

// programFetches counts the requests for app.wasm (under any name).
func programFetches(count map[string]int) int {
	n := 0
	for p, c := range count {
		if strings.HasSuffix(p, ".wasm") {
			n += c
		}
	}
	return n
}

func report(t *testing.T, what string, count map[string]int, sent map[string]int64, enc map[string]string) {
	paths := make([]string, 0, len(count))
	for p := range count {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "\n  %-40s %2d request(s) %9d bytes %s", p, count[p], sent[p], enc[p])
	}
	t.Logf("%s, by path (response bodies as sent):%s", what, b.String())
}

// TestJoinWeight measures what one student's phone downloads, with the
// real coordinator serving the page (built with the test's page build
// embedded: coordinatorWithPage).
// Between the browser and the coordinator a TCP relay counts every byte
// (both ways, all of the page's threads and its websocket) and a request
// log counts requests by path; the page target's own network events
// (loadingFinished) are summed too. All three are printed.
//
// A student opens the bare address, types the join code into the box
// (the page does not reload), gives a nickname, picks two small picture
// files of their own (an IDX pair of 64 pictures) and presses "Start
// helping": waiting in the lobby, at most joinBudget bytes have reached
// the browser, and the program (app.wasm) was fetched once for the page
// and its worker. A reload there (same profile, warm cache) shows the
// lobby again for at most reloadBudget bytes, without fetching the
// program. A second student (own profile) takes the example pictures
// instead: the first rounds' chunk of the demo shard, compressed, one
// request for its images and one for its labels before the lobby (the
// rest comes while the device trains), within joinBudget too.
func TestJoinWeight(t *testing.T) {
	bin := coordinatorWithPage(t, pageBuild(t))
	const code = "WEIGHT7"
	logf, err := os.CreateTemp("", "browserfl-e2e-weight-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	coord := &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: t.TempDir(), log: logf, args: []string{
		"-lobby", "-join-code", code, "-dataset", fashionDir, "-demo-shards", "4",
	}}
	coord.start()
	defer coord.stop()
	reqs := &requestLog{}
	reqs.take()
	srv := serve(t, reqs.wrap(proxyTo(coord.addr)))
	wire := newByteCounter(t, strings.TrimPrefix(srv.URL, "http://"))
	base := "http://" + wire.ln.Addr().String()

	few, err := fashionTest(t).Take(64)
	if err != nil {
		t.Fatal(err)
	}
	im, lab, err := local.Encode(few)
	if err != nil {
		t.Fatal(err)
	}
	fileDir := t.TempDir()
	files := []string{filepath.Join(fileDir, "my-images-idx3-ubyte"), filepath.Join(fileDir, "my-labels-idx1-ubyte")}
	if os.WriteFile(files[0], im, 0o644) != nil || os.WriteFile(files[1], lab, 0o644) != nil {
		t.Fatal("writing the picture files")
	}

	b := launch(t, t.TempDir())
	defer b.close()
	pn := &pageNet{urls: map[network.RequestID]string{}, byURL: map[string]float64{}}
	chromedp.ListenTarget(b.ctx, pn.listen)
	b.must(10*time.Second, "phone screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), addBootWords())

	// Typing the code does not reload the page: a mark set on the window
	// survives.
	b.must(120*time.Second, "code box",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible("#code-input", chromedp.ByID),
		chromedp.Evaluate(`window.__sameDocument = true`, nil))
	steps := joinSteps(base, code, "Grace", files)[2:] // the code box is open
	b.must(180*time.Second, "join to the lobby", append(steps,
		chromedp.WaitVisible("#lobby", chromedp.ByID),
		chromedp.Poll(`document.getElementById("lobby").innerText.includes("Grace")`, nil, chromedp.WithPollingTimeout(30*time.Second)))...)
	down, up := wire.down.Swap(0), wire.up.Swap(0)
	count, sent, enc := reqs.take()
	pageBytes, byURL := pn.take()
	var same bool
	var addr string
	b.must(10*time.Second, "same document", chromedp.Evaluate(`window.__sameDocument === true`, &same), chromedp.Location(&addr))
	t.Logf("join (bare address -> lobby): %d bytes to the browser, %d from it; page target's loadingFinished: %.0f bytes; address %s",
		down, up, pageBytes, addr)
	report(t, "join", count, sent, enc)
	t.Logf("page target, by URL: %v", byURL)
	if !same {
		t.Error("typing the code reloaded the page")
	}
	checkBootWords(t, b, "join")
	if !strings.Contains(addr, "code="+code) {
		t.Errorf("the address %q does not carry the code (a reload would lose it)", addr)
	}
	if n := programFetches(count); n != 1 {
		t.Errorf("the program was fetched %d times for one page (page and worker), want 1", n)
	}
	if down > joinBudget {
		t.Errorf("join: %d bytes to the browser, budget %d", down, joinBudget)
	}

	// A reload in the lobby: everything but the page and the session's
	// few JSON answers comes from the cache.
	b.must(180*time.Second, "reload to the lobby",
		chromedp.Reload(),
		chromedp.WaitVisible("#lobby", chromedp.ByID),
		chromedp.Poll(`document.getElementById("lobby").innerText.includes("Grace")`, nil, chromedp.WithPollingTimeout(30*time.Second)))
	down, up = wire.down.Swap(0), wire.up.Swap(0)
	count, sent, enc = reqs.take()
	pageBytes, byURL = pn.take()
	checkBootWords(t, b, "reload")
	t.Logf("reload (-> lobby): %d bytes to the browser, %d from it; page target's loadingFinished: %.0f bytes", down, up, pageBytes)
	report(t, "reload", count, sent, enc)
	t.Logf("page target, by URL: %v", byURL)
	for p := range count {
		if strings.HasPrefix(p, "/web/") && strings.Count(p, ".") == 2 {
			t.Errorf("reload asked for %s again (hashed names are immutable)", p)
		}
	}
	if down > reloadBudget {
		t.Errorf("reload: %d bytes to the browser, budget %d", down, reloadBudget)
	}

	// A second student, with the example pictures.
	b2 := launch(t, t.TempDir())
	defer b2.close()
	b2.must(180*time.Second, "join with the example pictures", append(joinSteps(base, code, "Alan", nil),
		chromedp.WaitVisible("#lobby", chromedp.ByID))...)
	down, up = wire.down.Swap(0), wire.up.Swap(0)
	count, sent, enc = reqs.take()
	t.Logf("join with the example pictures (bare address -> lobby): %d bytes to the browser, %d from it", down, up)
	report(t, "join with the example pictures", count, sent, enc)
	if down > joinBudget {
		t.Errorf("join with the example pictures: %d bytes to the browser, budget %d", down, joinBudget)
	}
	if n := programFetches(count); n != 1 {
		t.Errorf("the program was fetched %d times for the second page, want 1", n)
	}
	for _, p := range []string{"/api/demo/images", "/api/demo/labels"} {
		if count[p] != 1 || enc[p] == "" {
			t.Errorf("%s: %d request(s), encoding %q: want one, compressed", p, count[p], enc[p])
		}
	}
	stored := len(pageData(t, b2, code, "demo").Samples)
	if raw := int64(16 + stored*784); stored == 0 || sent["/api/demo/images"] > raw*7/10 {
		t.Errorf("example pictures: %d bytes sent for %d pictures (%d bytes uncompressed): not compressed", sent["/api/demo/images"], stored, raw)
	}
}
