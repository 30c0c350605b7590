package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/coordinator/api"
	"browserfl/coordinator/view"
	"browserfl/internal/loopback"
	"browserfl/shared/dataset"
	"browserfl/wasm/local"
)

// onePage is the real coordinator (cmd/coordinator, its own process)
// sized for the small sessions of the one-page browser tests, and the
// page server in front of it (the page's files, every other request
// forwarded to the coordinator and counted by path).
type onePage struct {
	t      testing.TB
	coord  *process
	code   string
	secret string // the teacher secret (the store's host index)
	url    string // the page server
	logf   *os.File

	stopOnce sync.Once
	mu       sync.Mutex
	reqs     []string // paths the page asked the coordinator for, in order
	// fault, when set, sees each request first and may answer it itself
	// (true): a network fault between the page and the coordinator.
	fault func(w http.ResponseWriter, r *http.Request) bool
}

// setFault sets o.fault.
func (o *onePage) setFault(f func(w http.ResponseWriter, r *http.Request) bool) {
	o.mu.Lock()
	o.fault = f
	o.mu.Unlock()
}

// startOnePage starts the coordinator with join code code, one device
// per round (-M 1 -m 1 -min-devices 1), Fashion-MNIST and the extra
// flags args (later flags win), and serves the page built in webDir
// in front of it. The coordinator stops when the test ends.
func startOnePage(t testing.TB, webDir, code string, args ...string) *onePage {
	t.Helper()
	logf, err := os.CreateTemp("", "browserfl-e2e-onepage-*.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	dataDir := t.TempDir()
	all := append([]string{"-join-code", code, "-dataset", fashionDir, "-M", "1", "-m", "1", "-min-devices", "1",
		"-deadline", "60s", "-round-gap", "200ms", "-eval-every", "0"}, args...)
	o := &onePage{t: t, code: code, logf: logf,
		coord: &process{t: t, bin: coordinatorBinary(t), addr: loopback.Addr(t), dataDir: dataDir, log: logf, args: all}}
	o.coord.start()
	t.Cleanup(o.stop)
	o.secret = teacherSecretIn(t, dataDir)
	fwd := proxyTo(o.coord.addr)
	o.url = serve(t, pageHandler(webDir, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.reqs = append(o.reqs, r.URL.Path)
		fault := o.fault
		o.mu.Unlock()
		if fault != nil && fault(w, r) {
			return
		}
		fwd.ServeHTTP(w, r)
	}))).URL
	return o
}

// stop stops the coordinator (once; the test's cleanup calls it too).
func (o *onePage) stop() { o.stopOnce.Do(o.coord.stop) }

// asked counts the requests the page sent the coordinator whose path
// starts with prefix.
func (o *onePage) asked(prefix string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, p := range o.reqs {
		if strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n
}

// status is the coordinator's /api/status in the teacher's view (with
// each device's rejected updates), asked directly.
func (o *onePage) status() view.Status {
	o.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+o.coord.addr+"/api/status?code="+o.code, nil)
	if err != nil {
		o.t.Fatal(err)
	}
	req.Header.Set(api.TeacherHeader, o.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		o.t.Fatalf("status: %v (coordinator log %s)", err, o.logf.Name())
	}
	defer resp.Body.Close()
	var st view.Status
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		o.t.Fatalf("status: %s (coordinator log %s)", resp.Status, o.logf.Name())
	}
	return st
}

// waitStatus polls the status until ok (a generous wait for a loaded
// machine, not a limit the test asserts).
func (o *onePage) waitStatus(what string, d time.Duration, ok func(view.Status) bool) view.Status {
	o.t.Helper()
	end := time.Now().Add(d)
	for {
		st := o.status()
		if ok(st) {
			return st
		}
		if time.Now().After(end) {
			o.t.Fatalf("%s: not within %v (state %q, %d rounds committed, people %+v; coordinator log %s)",
				what, d, st.State, st.Committed, st.People, o.logf.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// teacher sends the teacher's action (POST /api/teacher/action: start,
// pause, resume, end...) and fails the test unless it succeeds.
func (o *onePage) teacher(action string) {
	o.t.Helper()
	if err := teacherAction(o.coord.addr, o.code, o.secret, action); err != nil {
		o.t.Fatalf("%v (coordinator log %s)", err, o.logf.Name())
	}
}

// log returns the coordinator's log so far.
func (o *onePage) log() string {
	o.t.Helper()
	b, err := os.ReadFile(o.logf.Name())
	if err != nil {
		o.t.Fatal(err)
	}
	return string(b)
}

// sentUpdates counts the binary frames (updates) the page sent.
func sentUpdates(br *browser) int {
	n := 0
	for _, f := range br.sent() {
		if f.Opcode != 1 {
			n++
		}
	}
	return n
}

// idxFiles writes set as an IDX images/labels pair (raw, as a person
// would pick from disk) and returns the two paths.
func idxFiles(t *testing.T, set dataset.Set) []string {
	t.Helper()
	im, lab, err := local.Encode(set)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "mine-images-idx3-ubyte"), filepath.Join(dir, "mine-labels-idx1-ubyte")}
	if os.WriteFile(files[0], im, 0o644) != nil || os.WriteFile(files[1], lab, 0o644) != nil {
		t.Fatal("writing the local files")
	}
	return files
}

// openPageFiles is openPage with local files (idxFiles) in place of the
// demo shard: consent with budgetEpsilon, pick the files, start
// training.
func openPageFiles(t testing.TB, b *browser, url string, files []string, n int) {
	t.Helper()
	b.must(60*time.Second, "consent screen",
		chromedp.Navigate(url),
		chromedp.WaitVisible("#consent", chromedp.ByID))
	b.must(90*time.Second, "join with files",
		chromedp.SetValue("#budget", strconv.FormatFloat(budgetEpsilon, 'g', -1, 64), chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("budget").dispatchEvent(new Event("input", {bubbles: true}))`, nil),
		chromedp.Click("#join-btn", chromedp.ByID),
		chromedp.WaitVisible("#data", chromedp.ByID),
		chromedp.SetUploadFiles("#files", files, chromedp.ByID),
		chromedp.Poll(`Number((document.getElementById("data-count")||{}).textContent) === `+strconv.Itoa(n), nil,
			chromedp.WithPollingTimeout(80*time.Second)),
		chromedp.Click("#train-btn", chromedp.ByID),
		chromedp.WaitVisible("#train", chromedp.ByID))
}
