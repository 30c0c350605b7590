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
	must("join", joinTab(p, o.url, code, "Ada", nil, "#lobby", nil))
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
	must("the status after a send", p.eval(`window.__status.some(s => s.startsWith("Sent "))`, &sent))
	if !sent {
		t.Error("the page's status line never said it sent an update")
	}
	shot := filepath.Join(screenshotDir(t), shotName(e.name, "shared-noise"))
	must("a screenshot", p.screenshot(shot, false))
	t.Logf("screenshot %s", shot)
}
