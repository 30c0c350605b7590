package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/coordinator/view"
	"browserfl/device"
	"browserfl/shared/wire"
)

// TestBrowserFinishedSession: a newcomer to a session that has finished
// is told so on the first screen, before consent: no shard is downloaded,
// nothing is stored, no websocket is opened. The session is the real
// coordinator's, run to its end by a native device first.
func TestBrowserFinishedSession(t *testing.T) {
	webDir := pageBuild(t)
	all := fashionTest(t)
	const code = "OVER"
	o := startOnePage(t, webDir, code, "-T", "2", "-b", "16", "-round-gap", "100ms")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt, err := device.New(ctx, device.Config{URL: "ws://" + o.coord.addr + "/ws", JoinCode: code, Nickname: "Early",
		Storage: &device.MemStorage{}, Data: all.Samples[:100]})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- rt.Run(ctx) }()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("the native device: %v (coordinator log %s)", err, o.logf.Name())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the session did not end within 3 minutes (coordinator log %s)", o.logf.Name())
	}
	if st := o.status(); !st.Finished || st.Committed != 2 {
		t.Fatalf("after the native device's session: finished %v, %d rounds committed; want finished after 2", st.Finished, st.Committed)
	}
	b := launch(t, t.TempDir())
	defer b.close()
	var text string
	b.must(60*time.Second, "finished screen",
		chromedp.Navigate(o.url+"/?code="+code),
		chromedp.WaitVisible("#closed", chromedp.ByID),
		chromedp.Text("#closed", &text, chromedp.ByID))
	if !strings.Contains(text, "has finished") {
		t.Errorf("first screen says %q, want that the session has finished", text)
	}
	var consent bool
	b.must(10*time.Second, "no consent", chromedp.Evaluate(`document.getElementById("consent") !== null`, &consent))
	if consent {
		t.Error("the consent screen is shown for a finished session")
	}
	if n := o.asked("/api/demo"); n != 0 {
		t.Errorf("%d demo shard request(s) for a finished session", n)
	}
	var dbs []string
	b.must(10*time.Second, "databases", chromedp.Evaluate(`indexedDB.databases().then(l => l.map(d => d.name))`, &dbs, awaitPromise))
	if len(dbs) != 0 {
		t.Errorf("databases created for a finished session: %v", dbs)
	}
	if n := len(b.sent()); n != 0 {
		t.Errorf("the page sent %d websocket frames to a finished session", n)
	}
	if n := o.asked("/ws"); n != 0 {
		t.Errorf("the page opened %d websocket(s) to a finished session", n)
	}
	if st := o.status(); len(st.People) != 1 {
		t.Errorf("the finished session lists %d people, want the native device only: %+v", len(st.People), st.People)
	}
}

// TestBrowserDataUsedUp runs one page on a phone-sized screen (390x844)
// in a Fashion-MNIST session of the real coordinator (one device per
// round, T = 8, b = 64) with local files holding data for two rounds
// only. When its data is used up the page sends Leave{done}, really
// closes its websocket (the coordinator counts no connected device and
// lists it as left after two rounds), and says so at the top of the
// screen with the next steps; "Draw more pictures" leads to drawing,
// whose menu offers the session's class names; one more picture makes
// one more round, which the page joins again to answer (the coordinator
// includes it in a third round), and then leaves again; "I'm done"
// thanks the student.
func TestBrowserDataUsedUp(t *testing.T) {
	webDir := pageBuild(t)
	all := fashionTest(t)
	const batch = 64
	const labels = "T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot"
	// Two rounds, and one sample too few for a third: one drawing later
	// makes the third.
	few, err := all.Take(3*batch - 1)
	if err != nil {
		t.Fatal(err)
	}
	const code = "USEDUP"
	o := startOnePage(t, webDir, code, "-T", "8", "-b", fmt.Sprint(batch), "-eta", "1", "-D", "10")
	if got := o.status().Session.Labels; got != labels {
		t.Fatalf("the coordinator's session names the classes %q, want %q", got, labels)
	}
	b := launch(t, t.TempDir())
	defer b.close()
	b.must(10*time.Second, "phone screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	openPageFiles(t, b, o.url+"/?code="+code, idxFiles(t, few), len(few.Samples))

	b.must(3*time.Minute, "used-up notice",
		chromedp.WaitVisible("#used-up", chromedp.ByID))

	// Leave{done} was the last thing sent, after both updates.
	frames := b.sent()
	bins, leaveAt := 0, -1
	for i, f := range frames {
		if f.Opcode != 1 {
			bins++
			if leaveAt >= 0 {
				t.Errorf("binary frame %d sent after the leave message", i)
			}
			continue
		}
		var env struct {
			Type wire.Type  `json:"type"`
			Body wire.Leave `json:"body"`
		}
		if json.Unmarshal(f.Data, &env) == nil && env.Type == wire.TypeLeave {
			if env.Body.Reason != wire.LeaveDone {
				t.Errorf("leave reason %q, want %q", env.Body.Reason, wire.LeaveDone)
			}
			leaveAt = i
		}
	}
	if bins != 2 || leaveAt < 0 {
		t.Errorf("sent %d updates and leave at frame %d; want 2 updates, then a leave message", bins, leaveAt)
	}
	// The socket really closed: the coordinator's side of it ended, and
	// the coordinator lists the page as left after its two rounds.
	st := o.waitStatus("the page's websocket closed", 60*time.Second, func(st view.Status) bool {
		return st.Devices.Connected == 0
	})
	if len(st.People) != 1 || st.People[0].State != "left" || st.People[0].Rounds != 2 {
		t.Errorf("the coordinator's people after the page left: %+v, want one, left, included in 2 rounds", st.People)
	}

	// The notice and its buttons are on the first screen of a phone,
	// in words a student reads.
	var pos struct {
		Bottom float64 `json:"bottom"`
		Height float64 `json:"height"`
		Text   string  `json:"text"`
	}
	var raw string
	b.must(10*time.Second, "notice position", chromedp.Evaluate(`JSON.stringify({
  bottom: document.getElementById("more-btn").getBoundingClientRect().bottom + window.scrollY,
  height: window.innerHeight,
  text: document.getElementById("used-up").innerText})`, &raw))
	if err := json.Unmarshal([]byte(raw), &pos); err != nil {
		t.Fatal(err)
	}
	if pos.Bottom > pos.Height {
		t.Errorf("the notice's buttons end at %.0f px, below the first screen of %.0f px", pos.Bottom, pos.Height)
	}
	for _, w := range []string{"All your pictures have been used", "Draw more pictures", "I'm done"} {
		if !strings.Contains(pos.Text, w) {
			t.Errorf("notice %q lacks %q", pos.Text, w)
		}
	}
	for _, w := range []string{"refused", "single pass", "device:"} {
		if strings.Contains(pos.Text, w) {
			t.Errorf("notice %q shows %q", pos.Text, w)
		}
	}
	shots := screenshotDir(t)
	if err := b.screenshot(filepath.Join(shots, "used-up-phone.png")); err != nil {
		t.Fatal(err)
	}

	// Next step: drawing, with the session's class names (not digits);
	// the used samples keep their places, so only drawing is offered.
	var opts []string
	var demo bool
	b.must(20*time.Second, "draw more",
		chromedp.Click("#more-btn", chromedp.ByID),
		chromedp.WaitVisible("#draw", chromedp.ByID),
		chromedp.Evaluate(`Array.from(document.getElementById("draw-label").options).map(o => o.text)`, &opts),
		chromedp.Evaluate(`document.getElementById("demo-btn") !== null`, &demo))
	if strings.Join(opts, ",") != labels {
		t.Errorf("drawing menu %q, want the session's classes %q", opts, labels)
	}
	if demo {
		t.Error("after samples were used, the data screen still offers the demo data")
	}

	// One drawing, labelled "Coat", completes a third batch.
	added := false
	for k := 0; k < 20 && !added; k++ {
		b.must(10*time.Second, "draw a coat",
			chromedp.SetValue("#draw-label", "4", chromedp.ByID),
			chromedp.Evaluate(`document.getElementById("draw-label").dispatchEvent(new Event("change", {bubbles: true}))`, nil),
			drawStroke("draw", [][2]float64{{8, 4}, {20, 4}, {22, 24}, {6, 24}, {8, 4}}),
			chromedp.Click("#draw-add", chromedp.ByID))
		for j := 0; j < 20 && !added; j++ {
			b.eval(`document.body.innerText.includes("drawn (1)")`, &added)
			if !added {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	if !added {
		t.Fatalf("the drawing was not added\npage text: %s", b.text())
	}
	var label string
	b.must(10*time.Second, "drawn label", chromedp.Text("#draw-add", &label, chromedp.ByID))
	if label != "Add as Coat" {
		t.Errorf("draw button says %q, want %q", label, "Add as Coat")
	}
	b.must(3*time.Minute, "help again until the data is used up again",
		chromedp.Click("#train-btn", chromedp.ByID),
		chromedp.WaitVisible("#train", chromedp.ByID),
		chromedp.Poll(`document.getElementById("used-up") !== null && document.getElementById("joined").textContent === "3"`, nil,
			chromedp.WithPollingTimeout(170*time.Second)))
	bins, leaves := 0, 0
	for _, f := range b.sent() {
		if f.Opcode != 1 {
			bins++
		} else if strings.Contains(string(f.Data), `"type":"leave"`) {
			leaves++
		}
	}
	if bins != 3 || leaves != 2 {
		t.Errorf("sent %d updates and %d leave messages in all, want 3 and 2", bins, leaves)
	}
	st = o.waitStatus("the page's second websocket closed", 60*time.Second, func(st view.Status) bool {
		return st.Devices.Connected == 0
	})
	if len(st.People) != 1 || st.People[0].State != "left" || st.People[0].Rounds != 3 || st.People[0].Rejected != 0 {
		t.Errorf("the coordinator's people after the page left again: %+v, want one, left, included in 3 rounds, none rejected", st.People)
	}
	b.must(20*time.Second, "I'm done",
		chromedp.Click("#done-btn", chromedp.ByID),
		chromedp.WaitVisible("#done", chromedp.ByID))
}
