package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"browserfl/coordinator/site"
	"browserfl/internal/loopback"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
	"browserfl/wasm/local"
)

// codeRouter serves two (or more) coordinators behind one origin, so that
// pages of different sessions share the origin's IndexedDB (and so the
// owner's ledger): HTTP requests go by their join code (?code= or the
// X-Join-Code header, the first coordinator without one), a websocket by
// the join code of its hello, which the router reads before it connects
// the page to that coordinator and relays the frames both ways.
type codeRouter struct {
	byCode  map[string]string // join code -> coordinator address
	first   string
	proxies map[string]http.Handler
}

func newCodeRouter(byCode map[string]string, first string) *codeRouter {
	norm := make(map[string]string, len(byCode)) // codes compared as the coordinator compares them
	for code, addr := range byCode {
		norm[wire.NormalizeJoinCode(code)] = addr
	}
	byCode, first = norm, wire.NormalizeJoinCode(first)
	r := &codeRouter{byCode: byCode, first: first, proxies: map[string]http.Handler{}}
	for _, addr := range byCode {
		r.proxies[addr] = proxyTo(addr)
	}
	return r
}

func (cr *codeRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ws" {
		cr.serveWS(w, r)
		return
	}
	code := r.URL.Query().Get("code")
	if code == "" {
		code = r.Header.Get("X-Join-Code")
	}
	addr, ok := cr.byCode[wire.NormalizeJoinCode(code)]
	if !ok {
		addr = cr.byCode[cr.first]
	}
	cr.proxies[addr].ServeHTTP(w, r)
}

func (cr *codeRouter) serveWS(w http.ResponseWriter, r *http.Request) {
	in, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer in.CloseNow()
	in.SetReadLimit(1 << 24)
	ctx := r.Context()
	typ, hello, err := in.Read(ctx)
	if err != nil {
		return
	}
	m, err := wire.DecodeControl(hello)
	h, ok := m.(wire.Hello)
	if err != nil || !ok {
		in.Close(websocket.StatusPolicyViolation, "hello expected")
		return
	}
	addr, ok := cr.byCode[wire.NormalizeJoinCode(h.JoinCode)]
	if !ok {
		addr = cr.byCode[cr.first]
	}
	// The coordinator checks the Origin against its own host: it is
	// started with -origins for the router's host.
	out, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {r.Header.Get("Origin")}}})
	if err != nil {
		in.Close(websocket.StatusTryAgainLater, "coordinator unavailable")
		return
	}
	defer out.CloseNow()
	out.SetReadLimit(1 << 24)
	if out.Write(ctx, typ, hello) != nil {
		return
	}
	relay := func(dst, src *websocket.Conn) {
		for {
			typ, b, err := src.Read(ctx)
			if err != nil {
				dst.Close(websocket.StatusNormalClosure, "")
				return
			}
			if dst.Write(ctx, typ, b) != nil {
				return
			}
		}
	}
	go relay(in, out)
	relay(out, in)
}

// TestBrowserOwnerLedgerTwoTabs: one owner, one browser, two tabs of the
// same origin in two different sessions (two coordinators behind one
// origin), each trained on the owner's own files, with the page's default
// budget (epsilon 8), where one session (epsilon 7.92) fits and two do
// not. Both tabs press "Start helping" at the same instant. Exactly one
// may pass; the owner's ledger afterwards holds exactly the reservations
// of the tabs that passed (none lost), and their sum is within the
// budget. Before the reserve step held a lock across its read and write,
// both tabs could read the same old ledger and both pass.
func TestBrowserOwnerLedgerTwoTabs(t *testing.T) {
	t.Parallel() // docs/browser.md, "Parallel browser tests"
	for _, tc := range []struct {
		name    string
		noLocks bool
	}{
		{"web locks", false},
		// A browser without navigator.locks in workers: the page's
		// worker script is served with the property hidden, and the
		// single readwrite transaction serializes the tabs alone.
		{"no web locks", true},
	} {
		t.Run(tc.name, func(t *testing.T) { ownerLedgerTwoTabs(t, tc.noLocks) })
	}
}

// noLocksWorker serves web/worker.js with navigator.locks hidden in the
// worker (as in a browser without Web Locks).
func noLocksWorker(webDir string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/web/worker.js" {
			next.ServeHTTP(w, r)
			return
		}
		b, err := os.ReadFile(filepath.Join(webDir, "worker.js"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Content-Security-Policy", site.WorkerCSP(r))
		w.Write(append([]byte(`Object.defineProperty(WorkerNavigator.prototype, "locks", {get: () => undefined});`+"\n"), b...))
	})
}

// ownerSetup starts the two coordinators behind one origin (the router)
// and returns the origin, the two join codes and the owner's files (their
// paths and bytes).
type ownerSetup struct {
	srv     *url.URL
	codes   []string
	files   []string
	im, lab []byte
}

func newOwnerSetup(t *testing.T, noLocks bool) ownerSetup {
	webDir := pageBuild(t)
	bin := coordinatorBinary(t)
	codes := []string{"OWNERA", "OWNERB"}
	routerAddr := loopback.Addr(t)
	byCode := map[string]string{}
	for _, code := range codes {
		logf, err := os.CreateTemp("", "browserfl-e2e-owner-*.log")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { logf.Close() })
		coord := &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: t.TempDir(), log: logf, args: []string{
			"-join-code", code, "-dataset", fashionDir, "-eval-every", "0", "-demo-shards", "2",
			"-round-gap", "500ms", "-T", "20", "-b", "16", "-eta", "1", "-D", "10", "-clip", "1",
			"-origins", routerAddr,
		}}
		coord.start()
		t.Cleanup(coord.stop)
		byCode[code] = coord.addr
	}
	var h http.Handler = pageHandler(webDir, newCodeRouter(byCode, codes[0]))
	if noLocks {
		h = noLocksWorker(webDir, h)
	}
	srv := serveAt(t, routerAddr, h)

	// The owner's own files: a few pictures.
	few, err := fashionTest(t).Take(64)
	if err != nil {
		t.Fatal(err)
	}
	im, lab, err := local.Encode(few)
	if err != nil {
		t.Fatal(err)
	}
	fileDir := t.TempDir()
	files := []string{filepath.Join(fileDir, "mine-images-idx3-ubyte"), filepath.Join(fileDir, "mine-labels-idx1-ubyte")}
	if os.WriteFile(files[0], im, 0o644) != nil || os.WriteFile(files[1], lab, 0o644) != nil {
		t.Fatal("writing the owner's files")
	}
	return ownerSetup{srv: srv, codes: codes, files: files, im: im, lab: lab}
}

// checkOwnerLedger checks the outcome: exactly one tab passed, the
// ledger holds exactly the reservations of the tabs that passed, and
// their sum is within the page's default budget.
func checkOwnerLedger(t *testing.T, codes []string, passed []bool, ledger local.OwnerLedger) {
	t.Helper()
	n := 0
	for i, p := range passed {
		if p {
			n++
			if !ledgerHas(ledger, codes[i]) {
				t.Errorf("tab %d (%s) trains but its reservation is not in the owner's ledger: %+v", i, codes[i], ledger)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d tabs passed the owner's budget, want exactly 1", n)
	}
	if len(ledger.Charges) != n {
		t.Errorf("the owner's ledger holds %d charges, %d tabs passed: %+v", len(ledger.Charges), n, ledger)
	}
	// The budget as the page reads it (epsilon 8 at delta 1e-5: a zCDP rho).
	budget, err := plan.DefaultBudget().Rho()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := ledger.Spent(""); err != nil || !(s.Rho <= budget) {
		t.Errorf("the owner's ledger reserves %+v (%v), above the budget's rho %v", s, err, budget)
	}
}

func ownerLedgerTwoTabs(t *testing.T, noLocks bool) {
	o := newOwnerSetup(t, noLocks)
	srv, codes, files, im, lab := o.srv, o.codes, o.files, o.im, o.lab
	// Tab 0 is driven over DevTools; tab 1 is a second tab that tab 0
	// opens (window.open, same origin) and drives through its document:
	// a second tab driven over DevTools stops answering after its first
	// navigation (see phone in class_test.go).
	b := launch(t, t.TempDir())
	defer b.close()
	b.must(90*time.Second, "tab 0: consent, the owner's files",
		chromedp.Navigate(srv.String()+"/?code="+codes[0]),
		chromedp.WaitVisible("#consent", chromedp.ByID),
		chromedp.Click("#join-btn", chromedp.ByID),
		chromedp.WaitVisible("#data", chromedp.ByID),
		chromedp.SetUploadFiles("#files", files, chromedp.ByID),
		chromedp.Poll(`Number((document.getElementById("data-count")||{}).textContent) > 0`, nil, chromedp.WithPollingTimeout(60*time.Second)))
	var opened bool
	b.must(120*time.Second, "tab 1: opened by tab 0, consent, the same files",
		chromedp.Evaluate(fmt.Sprintf(`(async () => {
			const until = async (f) => { for (let i = 0; i < 1000; i++) { const v = f(); if (v) return v; await new Promise(r => setTimeout(r, 100)); } throw new Error("timed out"); };
			const w = window.open(%q);
			window.__tab1 = w;
			const el = id => w.document && w.document.getElementById(id);
			await until(() => el("consent") && el("join-btn"));
			el("join-btn").click();
			await until(() => el("files"));
			const dt = new w.DataTransfer();
			dt.items.add(new w.File([Uint8Array.from(atob(%q), c => c.charCodeAt(0))], "mine-images-idx3-ubyte"));
			dt.items.add(new w.File([Uint8Array.from(atob(%q), c => c.charCodeAt(0))], "mine-labels-idx1-ubyte"));
			el("files").files = dt.files;
			el("files").dispatchEvent(new w.Event("change", {bubbles: true}));
			await until(() => Number((el("data-count") || {}).textContent) > 0);
			return true;
		})()`, srv.String()+"/?code="+codes[1], base64.StdEncoding.EncodeToString(im), base64.StdEncoding.EncodeToString(lab)),
			&opened, func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams {
				return p.WithAwaitPromise(true).WithUserGesture(true)
			}))
	// Tab 0 holds a readwrite transaction on the owner's ledger open
	// (requests in a chain) while both tabs press "Start helping" in the
	// same task of the event loop: both reach the reserve step while the
	// ledger is held, so neither can finish before the other has started.
	// With the lock, one holds it (its transaction waits) and the other
	// waits for it; then the hold is released. Without the lock, both
	// reads would wait behind the hold and then read the same old ledger.
	b.must(10*time.Second, "hold the owner's ledger; both tabs: Start helping",
		chromedp.Evaluate(`(async () => {
			const db = await new Promise((ok, fail) => {
				const req = indexedDB.open("browserfl-owner", 1);
				req.onupgradeneeded = () => { if (!req.result.objectStoreNames.contains("kv")) req.result.createObjectStore("kv"); };
				req.onsuccess = () => ok(req.result);
				req.onerror = () => fail(req.error);
			});
			window.__release = false;
			const st = db.transaction("kv", "readwrite").objectStore("kv");
			const hold = () => { if (!window.__release) st.get("ledger").onsuccess = hold; };
			hold();
			document.getElementById("train-btn").click();
			window.__tab1.document.getElementById("train-btn").click();
			return true;
		})()`, nil, awaitPromise))
	// Both tabs at the lock: one holds it, one waits. Without Web Locks
	// (and for an implementation without the lock) nothing shows there:
	// 5 s are left for both reads to queue behind the hold.
	var atLock bool
	for end := time.Now().Add(5 * time.Second); !atLock && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := b.run(10*time.Second, chromedp.Evaluate(`navigator.locks.query().then(q =>
			q.held.filter(l => l.name === "browserfl-owner-ledger").length === 1 &&
			q.pending.filter(l => l.name === "browserfl-owner-ledger").length === 1)`, &atLock, awaitPromise)); err != nil {
			t.Fatal(err)
		}
	}
	if atLock == noLocks {
		t.Errorf("both tabs at the owner's Web Lock: %v, want %v", atLock, !noLocks)
	}
	b.must(10*time.Second, "release the owner's ledger", chromedp.Evaluate(`window.__release = true`, nil))
	const refused = "This page will not train on your data in this session"
	passed := make([]bool, len(codes))
	for i, doc := range []string{"document", "window.__tab1.document"} {
		expr := doc + `.body.innerText.includes("` + refused + `") ? "refused" :
			/Connection\s+connected/.test(` + doc + `.body.innerText) ? "training" : ""`
		var out string
		for end := time.Now().Add(90 * time.Second); out == "" && time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			if err := b.eval(expr, &out); err != nil {
				t.Fatalf("tab %d: %v", i, err)
			}
		}
		if out == "" {
			t.Fatalf("tab %d neither reserved nor refused", i)
		}
		passed[i] = out == "training"
		t.Logf("tab %d (%s): %s", i, codes[i], out)
	}
	tabs := []*browser{b}
	checkOwnerLedger(t, codes, passed, readOwnerLedger(t, tabs[0]))
}

func ledgerHas(l local.OwnerLedger, code string) bool {
	for _, c := range l.Charges {
		if strings.HasPrefix(c.Session, code+" ") {
			return true
		}
	}
	return false
}

// readOwnerLedger reads the owner's ledger (IndexedDB "browserfl-owner",
// key "ledger") in tab b.
func readOwnerLedger(t *testing.T, b *browser) local.OwnerLedger {
	t.Helper()
	var js string
	b.must(20*time.Second, "read the owner's ledger", chromedp.Evaluate(`new Promise((ok, fail) => {
		const req = indexedDB.open("browserfl-owner");
		req.onerror = () => fail(req.error);
		req.onsuccess = () => {
			const g = req.result.transaction("kv", "readonly").objectStore("kv").get("ledger");
			g.onerror = () => fail(g.error);
			g.onsuccess = () => ok(g.result ? new TextDecoder().decode(g.result) : "");
		};
	})`, &js, awaitPromise))
	l, err := local.ParseOwnerLedger([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// serveAt serves h on addr (a free address the caller picked: the
// coordinators name it in -origins before it starts).
func serveAt(t *testing.T, addr string, h http.Handler) *url.URL {
	t.Helper()
	srv := &http.Server{Addr: addr, Handler: h}
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("router: %v", err)
		}
	})
	return &url.URL{Scheme: "http", Host: addr}
}
