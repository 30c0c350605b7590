package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"browserfl/coordinator/view"
	"browserfl/device"
)

// TestSharedNoiseEveryEngine runs a shared-noise session (secure
// aggregation) in each engine: the page, in its Worker, and two native
// devices make the cohort of 3 (threshold 2) of the real coordinator
// (cmd/coordinator -algorithm shared), and both rounds commit with the
// page's masked release in the sum: the dashboard counts the page in 2
// rounds. The page's status line says it sent its update.
//
// The page, on a phone-sized screen (390x844), states the session's two
// figures as the dashboard's status gives them (plan.SessionFigures):
// its consent screen says both with the Join button inside the first
// screen, its meter both and how many classmates share the noise (you
// and 2), its status that the update left scrambled, "what your phone
// sent" that only a scrambled form left; no screen shows a technical
// word (ui.TechnicalWords).
func TestSharedNoiseEveryEngine(t *testing.T) {
	t.Parallel() // docs/browser.md, "Parallel browser tests"
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { t.Parallel(); sharedNoisePage(t, e) })
	}
}

func sharedNoisePage(t *testing.T, e engine) {
	webDir := pageBuild(t)
	newTab := e.start(t)
	all := fashionTest(t)
	code := "SHARED" + strings.ToUpper(e.name[:1])
	o := startOnePage(t, webDir, code, "-lobby", "-algorithm", "shared", "-threshold", "2", "-M", "3", "-m", "3",
		"-min-devices", "3", "-deadline", "20s", "-T", "2", "-b", "32", "-demo-shards", "4")
	p, err := phoneTab(newTab)
	if err != nil {
		t.Fatal(err)
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(pageFailure(p, what, err))
		}
	}
	pv := o.status().Privacy
	if !pv.Shared || pv.PromiseText == "" || pv.FloorText == "" || pv.Threshold != 2 {
		t.Fatalf("the status JSON's privacy %+v: want a shared-noise session's two figures, threshold 2", pv)
	}
	shots := screenshotDir(t)
	consent := func(p tab, screen, button string) error {
		if screen != "consent" {
			return nil
		}
		var r struct {
			Bottom, Inner float64
			Text          string
		}
		if err := p.eval(`(b => ({bottom: b.getBoundingClientRect().bottom + scrollY, inner: innerHeight,
  text: document.getElementById("consent").innerText}))(document.getElementById("join-btn"))`, &r); err != nil {
			return err
		}
		if r.Bottom > r.Inner {
			t.Errorf("the Join button ends %.0f px from the top, below the first screen (%.0f px)", r.Bottom, r.Inner)
		}
		for _, w := range []string{"If the other phones are real, this lesson uses at most ε = " + pv.PromiseText +
			"; if they were fake, at most ε = " + pv.FloorText + ".", "a scrambled form of what the page learned"} {
			if !strings.Contains(r.Text, w) {
				t.Errorf("the consent screen lacks %q:\n%s", w, r.Text)
			}
		}
		checkStudentScreen(t, p, "consent")
		shot := filepath.Join(shots, shotName(e.name, "shared-consent"))
		t.Logf("consent screenshot %s", shot)
		return p.screenshot(shot, false)
	}
	must("join", joinTab(p, o.url, code, "Ada", nil, "#lobby", consent))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i, name := range []string{"Bea", "Cy"} {
		rt, err := device.New(ctx, device.Config{URL: "ws://" + o.coord.addr + "/ws", JoinCode: code, Nickname: name,
			Storage: &device.MemStorage{}, Data: all.Samples[i*500 : (i+1)*500]})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); rt.Run(ctx) }()
	}
	o.waitStatus("three devices in the lobby", time.Minute, func(st view.Status) bool { return st.Devices.Connected >= 3 })
	must("the status recorder", p.eval(statusRecorder, nil))
	o.teacher("start")
	st := o.waitStatus("the session's end", 4*time.Minute, func(st view.Status) bool { return st.Finished })
	if st.Committed != 2 {
		t.Errorf("%d rounds committed, want 2 (coordinator log %s)", st.Committed, o.logf.Name())
	}
	for _, person := range st.People {
		if person.Rounds != 2 {
			t.Errorf("%s was included in %d rounds, want 2 (coordinator log %s)", person.Nickname, person.Rounds, o.logf.Name())
		}
	}
	var sent bool
	must("the status after a send", p.eval(`window.__status.some(s => s.startsWith("Sent a scrambled, noisy update"))`, &sent))
	if !sent {
		t.Error("the page's status line never said it sent a scrambled update")
	}
	var words struct{ Floor, Sent, Statuses string }
	must("the training screen", p.eval(`({floor: (document.getElementById("eps-floor") || {}).textContent || "",
  sent: (document.getElementById("sent-words") || {}).textContent || "", statuses: window.__status.join("\n")})`, &words))
	for _, w := range []string{"Even if the other phones were fake, your own noise keeps it at most ε = " + pv.FloorText,
		"In this round, you and 2 classmates share the noise."} {
		if !strings.Contains(words.Floor, w) {
			t.Errorf("the meter's second figure %q lacks %q", words.Floor, w)
		}
	}
	if !strings.Contains(words.Statuses, "you and 2 classmates share the noise") {
		t.Errorf("no status line said how many classmates share the noise:\n%s", words.Statuses)
	}
	if !strings.Contains(words.Sent, "Only a scrambled form of the right one left your phone") {
		t.Errorf("\"what your phone sent\" says %q", words.Sent)
	}
	checkStudentScreen(t, p, "training")
	shot := filepath.Join(shots, shotName(e.name, "shared-noise"))
	must("a screenshot", p.screenshot(shot, false))
	t.Logf("screenshot %s", shot)
}
