package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/coordinator/view"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
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

// studentWords are words the training screen's privacy sentences never
// use.
var studentWords = []string{"zCDP", "ρ", "rho", "δ", "delta", "σ", "sigma", "clipping", "Clipping", "ledger", "Gaussian"}

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
			must("join", joinTab(p, o.url, code, "Ada", nil, "#lobby", nil))
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
			for _, w := range append(c.not, studentWords...) {
				if strings.Contains(all, w) {
					t.Errorf("%s: the page says %q:\n%s", c.alg, w, all)
				}
			}
			t.Logf("%s: %q; %q", c.alg, status, words.Label)
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
