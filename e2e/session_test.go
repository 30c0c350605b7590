package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
	"browserfl/wasm/local"
)

const fashionDir = "/usr/share/datasets/fashion-mnist"

// fashionTest loads the Fashion-MNIST test split (10,000 samples).
func fashionTest(t testing.TB) dataset.Set {
	t.Helper()
	im, err := dataset.LoadIDXFile(filepath.Join(fashionDir, dataset.TestImagesFile+".gz"))
	if err != nil {
		t.Fatalf("%v (install dataset-fashion-mnist: scripts/setup.sh)", err)
	}
	lab, err := dataset.LoadIDXFile(filepath.Join(fashionDir, dataset.TestLabelsFile+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := dataset.FromIDX("fashion-test", im, lab, 10)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// e2eSession is the session the browser tests run: the product's default
// algorithm (nc: mu^2-SGD with noise cancellation, untrusted server) on
// logistic regression. With 5 devices, T = 20 and b = 64 each device uses
// 1,280 of its 1,300 samples once. rho_p = 2 is standard zCDP rho = 2,
// epsilon = 10.0 at delta = 1e-5 (privacy.LedgerEpsilon; 10.73 through zCDP
// and CKS alone).
func e2eSession(devices int) wire.SessionParams {
	return wire.SessionParams{
		Name: "e2e", Dim: 7850, DeadlineMillis: 20000,
		Algorithm: "nc", Model: "logreg", Features: 784, Classes: 10,
		M: devices, Cohort: devices, Rounds: 20, Batch: 64,
		Clip: 1, Eta: 1, Diameter: 10, Rho: 2,
	}
}

// budgetEpsilon is what each page's owner types on the consent screen:
// above the session's 10.0.
const budgetEpsilon = 12.0

// openPage loads the page, consents with budgetEpsilon and stores the
// demo shard; shots, if non-empty, is the directory for screenshots.
func openPage(t testing.TB, b *browser, url, shots string) {
	t.Helper()
	b.must(60*time.Second, "consent screen",
		chromedp.Navigate(url),
		chromedp.WaitVisible("#consent", chromedp.ByID),
	)
	if shots != "" {
		if err := b.screenshot(filepath.Join(shots, "consent.png")); err != nil {
			t.Fatal(err)
		}
	}
	b.must(30*time.Second, "join",
		chromedp.SetValue("#budget", strconv.FormatFloat(budgetEpsilon, 'g', -1, 64), chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("budget").dispatchEvent(new Event("input", {bubbles: true}))`, nil),
		chromedp.Click("#join-btn", chromedp.ByID),
		chromedp.WaitVisible("#data", chromedp.ByID),
		chromedp.Click("#demo-btn", chromedp.ByID),
		chromedp.Poll(`Number((document.getElementById("data-count")||{}).textContent) > 0`, nil, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if shots != "" {
		// Pick local files: an IDX images/labels pair of 20 samples
		// (gzipped images, raw labels), as a person would from disk.
		dir := t.TempDir()
		pair, err := fashionTest(t).Take(20)
		if err != nil {
			t.Fatal(err)
		}
		im, lab, err := local.Encode(pair)
		if err != nil {
			t.Fatal(err)
		}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(im)
		zw.Close()
		imPath, labPath := filepath.Join(dir, "my-images-idx3-ubyte.gz"), filepath.Join(dir, "my-labels-idx1-ubyte")
		if err := os.WriteFile(imPath, gz.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(labPath, lab, 0o644); err != nil {
			t.Fatal(err)
		}
		b.must(20*time.Second, "pick files",
			chromedp.SetUploadFiles("#files", []string{imPath, labPath}, chromedp.ByID),
			chromedp.Poll(`document.body.innerText.includes("files (20)")`, nil, chromedp.WithPollingTimeout(15*time.Second)),
		)
		// Draw a pair of trousers, label it so (class 1 of the session's
		// names) and add it, to show the drawing path in the picture.
		b.must(10*time.Second, "draw",
			chromedp.SetValue("#draw-label", "1", chromedp.ByID),
			chromedp.Evaluate(`document.getElementById("draw-label").dispatchEvent(new Event("change", {bubbles: true}))`, nil),
			drawStroke("draw", [][2]float64{{9, 24}, {11, 4}, {17, 4}, {19, 24}, {15, 24}, {14, 10}, {13, 24}, {9, 24}}),
			chromedp.Click("#draw-add", chromedp.ByID),
			chromedp.Poll(`document.body.innerText.includes("drawn (1)")`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		)
		// The next drawing stays on the canvas for the picture; the page
		// may re-create the canvas when it re-renders after the add, so
		// draw until the ink is there.
		inked := false
		for k := 0; k < 20 && !inked; k++ {
			b.must(5*time.Second, "draw again",
				drawStroke("draw", [][2]float64{{9, 24}, {11, 4}, {17, 4}, {19, 24}, {15, 24}, {14, 10}, {13, 24}, {9, 24}}),
				chromedp.Evaluate(`(() => {
  const d = document.getElementById("draw").getContext("2d").getImageData(0, 0, document.getElementById("draw").width, document.getElementById("draw").height).data;
  for (let i = 0; i < d.length; i += 4) if (d[i] > 0) return true;
  return false;
})()`, &inked))
			if !inked {
				time.Sleep(200 * time.Millisecond)
			}
		}
		if !inked {
			t.Fatal("the drawing canvas takes no ink")
		}
		if err := b.screenshot(filepath.Join(shots, "data.png")); err != nil {
			t.Fatal(err)
		}
	}
	b.must(30*time.Second, "start training",
		chromedp.Click("#train-btn", chromedp.ByID),
		chromedp.WaitVisible("#train", chromedp.ByID),
	)
}

// storedDevice reads the device runtime's state blob from the page's
// IndexedDB (from outside the application code, as any script of the
// origin could) and rebuilds its algorithm half.
func storedDevice(t *testing.T, b *browser, code string, p wire.SessionParams) (device.State, optim.Device) {
	t.Helper()
	var raw []int
	expr := fmt.Sprintf(`new Promise((ok, fail) => {
  const r = indexedDB.open(%q);
  r.onerror = () => fail(String(r.error));
  r.onsuccess = () => {
    const g = r.result.transaction("kv").objectStore("kv").get("dev/state");
    g.onsuccess = () => { const v = g.result; r.result.close(); ok(v ? Array.from(v) : []); };
    g.onerror = () => fail(String(g.error));
  };
})`, "browserfl:"+wire.NormalizeJoinCode(code))
	if err := b.run(20*time.Second, chromedp.Evaluate(expr, &raw, awaitPromise)); err != nil {
		t.Fatalf("reading the page's IndexedDB: %v", err)
	}
	blob := make([]byte, len(raw))
	for i, v := range raw {
		blob[i] = byte(v)
	}
	var st device.State
	if err := json.Unmarshal(blob, &st); err != nil {
		t.Fatalf("device state (%d bytes): %v", len(blob), err)
	}
	dv, err := device.DefaultNewDevice(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := dv.UnmarshalBinary(st.Algo); err != nil {
		t.Fatalf("device algorithm state (%d bytes, state %+v): %v", len(st.Algo), st, err)
	}
	return st, dv
}

// TestBrowserLyingCoordinator runs three pages against coordinators that
// lie (DESIGN principle 2: a coordinator that lies cannot make a device
// spend more):
//
//   - "greedy" asks its page every round although the session plans a
//     cohort of 1 in M = 4 (four times more often than planned), then
//     sends round ids beyond T;
//   - "replay" sends every round id twice;
//   - "exclude" decides "excluded" for every answer and assigns the same
//     round again, three times per round;
//   - "claim" shows the consent screen the real session but claims, in
//     the welcome, a larger rho_p (a smaller noise scale) than the owner's
//     budget allows.
//
// Every page must answer each round id at most once and none beyond T,
// noise every update, and keep its ledger within its owner's budget; the
// third must refuse the session and send no update at all.
func TestBrowserLyingCoordinator(t *testing.T) {
	webDir := pageBuild(t)
	all := fashionTest(t)
	shard, err := all.Take(1300)
	if err != nil {
		t.Fatal(err)
	}
	evalSet := all.Samples[9000:]
	p := e2eSession(4)
	p.Cohort, p.Rounds = 1, 8

	cases := []struct {
		name string
		lie  lies
	}{
		{"greedy", lies{ExtraRounds: 2}},
		{"replay", lies{ReplayRounds: true}},
		// Every round excluded and re-assigned three times before it
		// counts: the page pays for every answer; its ledger, not the
		// coordinator, bounds how often.
		{"exclude", lies{ExcludeAndReassign: 3}},
		// rho_p = 6 is zCDP rho = 18, epsilon about 46 at delta 1e-5:
		// far above the owner's 12.
		{"claim", lies{ClaimRhoPaper: 6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code := "LIE-" + tc.name
			sc := newScripted(t, p, code, []dataset.Set{shard}, evalSet, tc.lie)
			srv := serve(t, pageHandler(webDir, sc.handler()))
			b := launch(t, t.TempDir())
			defer b.close()
			openPage(t, b, srv.URL+"/?code="+code, "")

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- sc.run(ctx) }()
			// The page either finishes or stops (refusing); then the
			// coordinator has nobody left to lie to.
			b.must(2*time.Minute, "page stops",
				chromedp.Poll(`["finished", "stopped"].includes((document.getElementById("conn")||{}).textContent)`, nil,
					chromedp.WithPollingTimeout(110*time.Second)))
			cancel()
			<-done
			tasks := readTasks(t, b)
			var status, detail string
			b.eval(`document.getElementById("status").textContent`, &status)
			b.eval(`(document.getElementById("detail")||{textContent: ""}).textContent`, &detail)
			t.Logf("page status: %s (details: %s)", status, detail)

			ups := sc.updatesSeen()
			seen := map[int]int{}
			for _, u := range ups {
				seen[u.T]++
				if u.T > p.Rounds {
					t.Errorf("answered round %d beyond T = %d", u.T, p.Rounds)
				}
			}
			for r, n := range seen {
				if n > 1 && tc.lie.ExcludeAndReassign == 0 {
					t.Errorf("answered round %d %d times", r, n)
				}
			}
			if tc.lie.ClaimRhoPaper > 0 {
				if len(ups) != 0 {
					t.Errorf("sent %d updates to a coordinator whose session exceeds the budget", len(ups))
				}
				for _, f := range b.sent() {
					if f.Opcode != 1 {
						t.Errorf("sent a binary frame (%d bytes) to a coordinator it should have refused", len(f.Data))
					}
				}
				if !strings.Contains(status, "refused") {
					t.Errorf("status %q does not say the page refused", status)
				}
				return
			}
			if len(ups) == 0 {
				t.Fatal("the page sent no update at all")
			}
			checkNoised(t, ups, p)
			st, dv := storedDevice(t, b, code, p)
			led := dv.(optim.Accountant).Ledger()
			eps, err := led.Epsilon(1e-5)
			if err != nil {
				t.Fatal(err)
			}
			planned := optim.Params{Rounds: p.Rounds, Cohort: p.Cohort, M: p.M}.PlannedReleases()
			t.Logf("%s: asked %d times (plan: %d), answered %d; ledger rho %.4g = epsilon %.4g at delta 1e-5; owner's budget epsilon %g",
				st.DeviceID, sc.asked(st.DeviceID), planned, len(ups), led.Rho(), eps, budgetEpsilon)
			if eps > budgetEpsilon {
				t.Errorf("spent epsilon %.4g, above the owner's budget %g", eps, budgetEpsilon)
			}
			reportLongTasks(t, []taskReport{tasks})

			// Leaving deletes everything the page stored: with the page's
			// button, or with the browser's "clear site data" (DevTools
			// Storage.clearDataForOrigin), which the open page notices.
			// The button is clicked by the page's own click(): a click at
			// screen coordinates can land beside it when the training
			// screen redraws under a loaded machine (one CI run).
			leave := chromedp.Action(chromedp.Evaluate(`document.getElementById("forget-btn").click()`, nil))
			if tc.lie.ReplayRounds {
				leave = storage.ClearDataForOrigin(srv.URL, "indexeddb")
			}
			var dbs []string
			b.must(60*time.Second, "leave",
				chromedp.WaitVisible("#forget-btn", chromedp.ByID),
				leave,
				chromedp.WaitVisible("#left", chromedp.ByID),
				chromedp.Poll(`indexedDB.databases().then(l => l.length === 0)`, nil, chromedp.WithPollingTimeout(10*time.Second)),
				chromedp.Evaluate(`indexedDB.databases().then(l => l.map(d => d.name))`, &dbs, awaitPromise))
			if len(dbs) != 0 {
				t.Errorf("databases left after leaving: %v", dbs)
			}
		})
	}
}

// awaitPromise makes chromedp.Evaluate wait for a promise's value.
func awaitPromise(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams {
	return p.WithAwaitPromise(true)
}

// TestBrowserWrongJoinCode: the bare URL shows a box for the join code;
// a code the coordinator (the real one, -join-code RIGHT) does not know
// is final (no retry loop, nothing stored, no websocket, no demo data)
// and shows the box again with a clear message; the right code then
// opens the consent screen (and the coordinator knows no device yet). Neither reloads the page (the
// program is not fetched again); the address carries the code typed.
func TestBrowserWrongJoinCode(t *testing.T) {
	webDir := pageBuild(t)
	o := startOnePage(t, webDir, "RIGHT", "-T", "4", "-b", "16")
	b := launch(t, t.TempDir())
	defer b.close()
	// Entering a code keeps the document: a flag set on it stays.
	enter := func(what, code, cond string) {
		t.Helper()
		b.must(20*time.Second, what,
			chromedp.Evaluate(`window.__before = true`, nil),
			chromedp.SetValue("#code-input", code, chromedp.ByID),
			chromedp.Evaluate(`document.getElementById("code-input").dispatchEvent(new Event("input", {bubbles: true}))`, nil),
			chromedp.Click("#code-btn", chromedp.ByID))
		deadline := time.Now().Add(60 * time.Second)
		for {
			var ok bool
			if b.eval(`window.__before === true && location.search === "?code=`+code+`" && (`+cond+`)`, &ok) == nil && ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s not true after 60 s\npage text: %s", what, cond, b.text())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	b.must(60*time.Second, "join box on the bare URL",
		chromedp.Navigate(o.url+"/"),
		chromedp.WaitVisible("#code-input", chromedp.ByID))
	enter("wrong code", "WRONG",
		`(document.getElementById("error")||{textContent: ""}).textContent.includes("not valid") && document.getElementById("code-input") !== null`)
	var dbs []string
	b.must(10*time.Second, "databases", chromedp.Evaluate(`indexedDB.databases().then(l => l.map(d => d.name))`, &dbs, awaitPromise))
	if len(dbs) != 0 {
		t.Errorf("a wrong join code left databases %v", dbs)
	}
	if n := len(b.sent()); n != 0 {
		t.Errorf("the page opened a websocket and sent %d frames with a wrong join code", n)
	}
	if n := o.asked("/ws"); n != 0 {
		t.Errorf("the page opened %d websocket(s) with a wrong join code", n)
	}
	if n := o.asked("/api/demo"); n != 0 {
		t.Errorf("the page asked for demo data %d time(s) with a wrong join code", n)
	}
	enter("right code", "RIGHT", `document.getElementById("consent") !== null`)
	if st := o.status(); len(st.People) != 0 {
		t.Errorf("the coordinator knows %d device(s) before anyone consented: %+v", len(st.People), st.People)
	}
}
