package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/coordinator/view"
	"browserfl/device"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
	"browserfl/shared/wire"
	"browserfl/wasm/ui"
)

// TestPrivacyWordsEveryMode opens the page against the real coordinator
// running each algorithm a page can be offered, in each engine (subtests
// chromium, firefox and webkit), and reads the privacy words a student
// sees: the status line once the update is sent, the meter (its plan
// line, label, meaning and the exact meaning behind Details), the
// training screen's Details row and "what your phone sent". Each must
// say what holds in its mode: with the devices' noise (nc, noisysgd,
// local, soteria-sgd) a noisy update and an epsilon against everyone;
// with the server's noise (trusted) an update sent without noise,
// nothing bounding the server, and the lesson's epsilon (7.92) against
// everyone else, counted from the rounds published (never "ε = 0,
// nothing sent" after a send); without noise (mu2, sgd) plainly no
// protection, and the page does not join. None of them uses the words a
// student is not expected to know.
//
// A second device that joins the lobby with the page and never answers
// holds each round open until its deadline, so the status line after the
// send stays on the screen long enough to be read.
func TestPrivacyWordsEveryMode(t *testing.T) {
	t.Parallel() // docs/browser.md, "Parallel browser tests"
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { t.Parallel(); privacyWords(t, e) })
	}
}

// privacyWordsCase is one algorithm and what its page must (and must
// not) say.
type privacyWordsCase struct {
	alg  string
	args []string
	// protection is whom the dashboard's figures (the status JSON) say
	// they hold against (plan.Figures.Protection).
	protection string
	// status is the start of the status line after the update of some
	// round is sent (every mode's starts with "Sent "; "" for a session
	// the page refuses).
	status string
	// label must appear in the meter's label once a round that holds
	// the update is published.
	label     string
	want, not []string
}

func privacyWordsCases() []privacyWordsCase {
	device := []string{"with random noise added", "counted by this page itself", "someone who sees everything this page sent",
		"at most ε = 7.92 of your limit of 8 is used."}
	deviceNot := []string{"server adds the noise", "everyone but", "no limit"}
	dev := func(alg string, args ...string) privacyWordsCase {
		return privacyWordsCase{alg: alg, args: args, protection: plan.ProtectionDevice, status: "Sent a noisy update for round ", label: "Used so far: ε = ",
			want: device, not: deviceNot}
	}
	none := func(alg string) privacyWordsCase {
		return privacyWordsCase{alg: alg, args: []string{"-epsilon", "0", "-delta", "0"}, protection: plan.ProtectionNone,
			want: []string{"This session has no privacy protection", "This page does not join it."}}
	}
	return []privacyWordsCase{
		dev("nc"),
		{alg: "trusted", protection: plan.ProtectionServer, status: "Sent an update for round ", label: "Used so far, for everyone but the server: ε = ",
			want: []string{"; the server adds the noise.", "at most ε = 7.92 of your limit of 8 is used for everyone but the teacher's server",
				"nothing limits what it can learn", "Against the teacher's server: no limit", "Against everyone else: ε = ",
				"For the teacher's server: no limit", "your phone sends it without noise and the teacher's server adds the noise"},
			not: []string{"Nothing sent yet", "ε = 0", "noisy update", "with random noise added", "someone who sees everything this page sent",
				"counted by this page itself"}},
		dev("noisysgd"),
		dev("local", "-local-steps", "2"),
		dev("soteria-sgd"),
		none("mu2"),
		none("sgd"),
	}
}

// studentText is every text of the page's screen, the closed Details and
// Settings included (a walk over its text nodes, each separated by a
// space: innerText leaves out what a closed <details> hides).
const studentText = `(() => { const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT); const out = [];
  for (let n = w.nextNode(); n; n = w.nextNode()) { const p = n.parentNode && n.parentNode.nodeName;
    if (p !== "SCRIPT" && p !== "STYLE") out.push(n.nodeValue); }
  return out.join(" "); })()`

// checkStudentScreen reads the whole of the screen p shows (studentText)
// and fails the test for each word or sign no student screen may show
// that it holds: ui.TechnicalWords, the list's one home (IDX, zCDP, rho,
// delta, sigma, clipping, the ledger, Gaussian and the signs of a
// formula), matched by ui.TechnicalIn.
func checkStudentScreen(t *testing.T, p tab, screen string) {
	t.Helper()
	var text string
	if err := p.eval(studentText, &text); err != nil {
		t.Errorf("reading the %s screen: %v", screen, err)
		return
	}
	if found := ui.TechnicalIn(text); len(found) > 0 {
		t.Errorf("the %s screen shows %q:\n%s", screen, found, strings.Join(strings.Fields(text), " "))
	}
	if len(strings.Fields(text)) < 5 {
		t.Errorf("the %s screen reads %q: too little to be the screen", screen, text)
	}
}

func privacyWords(t *testing.T, e engine) {
	webDir := pageBuild(t)
	newTab := e.start(t)
	for _, c := range privacyWordsCases() {
		t.Run(c.alg, func(t *testing.T) {
			code := strings.ToUpper(strings.ReplaceAll(c.alg, "-", "")) + "W"
			args := append([]string{"-lobby", "-algorithm", c.alg, "-M", "2", "-m", "2", "-min-devices", "1", "-deadline", "8s",
				"-T", "3", "-b", "32", "-demo-shards", "4"}, c.args...)
			o := startOnePage(t, webDir, code, args...)
			// The dashboard's figures say whom they hold against, in the
			// page's own sentence.
			if pv := o.status().Privacy; pv.Protection != c.protection ||
				(c.protection == plan.ProtectionServer && !strings.Contains(pv.Text, "against everyone but the server")) {
				t.Errorf("%s: the status JSON's privacy %+v, want protection %q", c.alg, pv, c.protection)
			}
			p, err := newTab()
			if err != nil {
				t.Fatal(err)
			}
			must := func(what string, err error) {
				t.Helper()
				if err != nil {
					t.Fatal(pageFailure(p, what, err))
				}
			}
			if c.status == "" {
				// The page refuses the session before consent.
				must("the page", openTab(p, o.url))
				must("the code", setValue(p, "#code-input", code))
				must("Join", p.click("#code-btn"))
				must("the refusal", waitFor(p, 90*time.Second, "the refusal", `(document.getElementById("error")||{}).textContent.includes("no privacy protection")`))
				checkStudentScreen(t, p, "refusal")
				var text string
				must("the page's words", p.eval(`document.body.innerText`, &text))
				for _, w := range c.want {
					if !strings.Contains(text, w) {
						t.Errorf("%s: the page lacks %q:\n%s", c.alg, w, text)
					}
				}
				if strings.Contains(text, "retrying") {
					t.Errorf("%s: the page says it is retrying:\n%s", c.alg, text)
				}
				return
			}
			// The page and the device that never answers wait in the
			// lobby; the teacher's Start sizes the session for both
			// (every device in every round) and keeps T and the
			// deadline.
			// Every screen on the way is read whole (its Details and
			// Settings too).
			screens := func(p tab, screen, _ string) error {
				checkStudentScreen(t, p, screen)
				if screen == "consent" && c.alg == "nc" {
					shot(t, p, e.name, "consent")
					// The Settings, at the bottom of the page.
					if err := p.eval(`(() => { const d = document.getElementById("settings"); d.open = true; d.scrollIntoView(); return true; })()`, nil); err != nil {
						return err
					}
					shot(t, p, e.name, "settings")
					if err := p.eval(`(() => { document.getElementById("settings").open = false; window.scrollTo(0, 0); return true; })()`, nil); err != nil {
						return err
					}
				}
				return nil
			}
			must("join", joinTab(p, o.url, code, "Ada", nil, "#lobby", screens))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			silentDevice(ctx, t, "ws://"+o.coord.addr+"/ws", code)
			o.waitStatus("two devices in the lobby", time.Minute, func(st view.Status) bool { return st.Devices.Connected >= 2 })
			// Every text the status line takes from here on is recorded:
			// the line after a send lasts until the round's end, which a
			// poll on a busy machine can miss.
			must("the status recorder", p.eval(statusRecorder, nil))
			o.teacher("start")
			var status string
			must("the status after a send", waitFor(p, 2*time.Minute, "the status after a send",
				`window.__status.some(s => s.startsWith("Sent "))`))
			must("the status", p.eval(`window.__status.find(s => s.startsWith("Sent "))`, &status))
			if !strings.HasPrefix(status, c.status) {
				t.Errorf("%s: the status after a send is %q, want %q...", c.alg, status, c.status)
			}
			// Once the session has ended every round holding the update is
			// published.
			o.waitStatus("the session's end", 3*time.Minute, func(st view.Status) bool { return st.Finished })
			must("the meter after the published rounds", waitFor(p, 30*time.Second, "the meter after the published rounds",
				fmt.Sprintf(`(document.getElementById("eps")||{}).textContent.includes(%q) && !!document.getElementById("sent-words")`, c.label)))
			var words struct{ Plan, Label, Meaning, Exact, Source, Sent string }
			must("the words", p.eval(`(id => ({plan: id("eps-plan"), label: id("eps"), meaning: id("eps-meaning"), exact: id("eps-exact"),
  source: id("privacy-source"), sent: id("sent-words")}))(i => (document.getElementById(i)||{textContent: ""}).textContent)`, &words))
			all := strings.Join([]string{status, words.Plan, words.Label, words.Meaning, words.Exact, words.Source, words.Sent}, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("%s: the page lacks %q:\n%s", c.alg, w, all)
				}
			}
			for _, w := range c.not {
				if strings.Contains(all, w) {
					t.Errorf("%s: the page says %q:\n%s", c.alg, w, all)
				}
			}
			checkStudentScreen(t, p, "training, at the end")
			// The meter's fill is the share of the lesson's privacy the
			// page's own ledger (its stored device state) holds.
			if c.protection == plan.ProtectionDevice {
				// The meter follows the stored ledger after the last
				// release's publication: read both until they agree, for
				// at most 30 s (a meter that never agrees fails).
				var m meterView
				final := o.status().Session
				f, err := plan.SessionFigures(final, plan.DefaultDelta)
				if err != nil {
					t.Fatal(err)
				}
				for end := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
					must("the meter", p.eval(`(() => { const f = document.querySelector("#meter .meter-fill");
  return {label: document.getElementById("eps").textContent, width: f.style.width, fill: f.dataset.fill || ""}; })()`, &m))
					l := tabLedger(t, p, code, final)
					err = checkFill(m, l.Rho(), f)
					if err == nil || time.Now().After(end) {
						break
					}
				}
				if err != nil {
					t.Errorf("%s: %v", c.alg, err)
				}
				t.Logf("%s: the meter's fill %s, width %s: %q", c.alg, m.Fill, m.Width, m.Label)
			}
			if c.alg == "nc" {
				shot(t, p, e.name, "training")
			}
			t.Logf("%s: %q; %q", c.alg, status, words.Label)
			// Leaving (pressed by the page's script: the session's end
			// can move the button under a click at its place), and the
			// finished session's screen.
			must("leave", p.eval(`document.getElementById("forget-btn").click()`, nil))
			must("the left screen", waitVisible(p, 30*time.Second, "#left"))
			checkStudentScreen(t, p, "left")
			if c.alg == "nc" {
				must("the page again", openTab(p, o.url))
				must("the code", setValue(p, "#code-input", code))
				must("Join", p.click("#code-btn"))
				must("the finished screen", waitVisible(p, 90*time.Second, "#closed"))
				checkStudentScreen(t, p, "finished")
			}
		})
	}
}

// statusRecorder records in window.__status each text the page's status
// line (#status) takes, in order.
const statusRecorder = `(() => { window.__status = [];
  const note = () => { const e = document.getElementById("status"); const w = e ? e.textContent : "";
    if (w && window.__status[window.__status.length - 1] !== w) window.__status.push(w); };
  note();
  new MutationObserver(note).observe(document, {subtree: true, childList: true, characterData: true});
  return true; })()`

// silentDevice joins code on the websocket at wsURL and never answers a
// round (it reads, so the coordinator's pings are answered), until ctx
// ends; it fails the test if it cannot join.
func silentDevice(ctx context.Context, t *testing.T, wsURL, code string) {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatalf("silent device: %v", err)
	}
	ws.SetReadLimit(1 << 22)
	b, _ := wire.EncodeControl(wire.Hello{Version: wire.Version, JoinCode: code, Nickname: "Silent"})
	if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("silent device: hello: %v", err)
	}
	go func() {
		defer ws.CloseNow()
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				return
			}
		}
	}()
}

// shot saves a screenshot of what p shows as student-<screen>-<engine>.png
// (docs/screenshots with -screenshots, else the test's temporary
// directory), with the page's Details and Settings opened.
func shot(t *testing.T, p tab, engine, screen string) {
	t.Helper()
	if err := p.eval(`document.querySelectorAll("#settings, #consent-details, #eps-details").forEach(d => d.open = true)`, nil); err != nil {
		t.Errorf("opening the details: %v", err)
		return
	}
	path := filepath.Join(screenshotDir(t), "student-"+screen+"-"+engine+".png")
	if err := p.screenshot(path, true); err != nil {
		t.Errorf("screenshot: %v", err)
	}
	if err := p.eval(`document.querySelectorAll("#settings, #consent-details, #eps-details").forEach(d => d.open = false)`, nil); err != nil {
		t.Errorf("closing the details: %v", err)
	}
	t.Logf("screenshot %s", path)
}

// tabLedger reads the device runtime's state blob from p's IndexedDB
// (from outside the application code, as any script of the origin
// could; a JSON device.State) and returns its algorithm half's ledger.
func tabLedger(t *testing.T, p tab, code string, sess wire.SessionParams) privacy.Ledger {
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
	if err := p.eval(expr, &raw); err != nil {
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
	dv, err := device.DefaultNewDevice(sess)
	if err != nil {
		t.Fatal(err)
	}
	if err := dv.UnmarshalBinary(st.Algo); err != nil {
		t.Fatalf("device algorithm state (%d bytes): %v", len(st.Algo), err)
	}
	acc, ok := dv.(optim.Accountant)
	if !ok {
		t.Fatalf("the %s device keeps no ledger", sess.Algorithm)
	}
	return acc.Ledger()
}
