package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/coordinator/api"
	"browserfl/coordinator/view"
	"browserfl/internal/loopback"
	"browserfl/shared/plan"
)

// TestBrowserFeatureSession: a page joins a session of the real
// coordinator (cmd/coordinator -features scatter) with the demo data,
// computes the scattering features of its pictures in WebAssembly,
// trains every round of the session on them (its stored session names
// the transform, its ledger counts every round), and "try the model"
// answers a drawing (whose features the page computes too); the
// projector's summary says the model reads features instead of drawing
// its weights as pictures.
func TestBrowserFeatureSession(t *testing.T) {
	webDir := pageBuild(t)
	bin := coordinatorBinary(t)
	const code = "FEAT1"
	const rounds = 4
	logf, err := os.CreateTemp("", "browserfl-e2e-features-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	coord := &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: t.TempDir(), log: logf, args: []string{
		"-join-code", code, "-dataset", fashionDir, "-features", "scatter",
		"-eval-every", "1", "-eval-samples", "200", "-demo-shards", "4", "-deadline", "60s", "-round-gap", "200ms",
		"-min-devices", "1", "-M", "1", "-m", "1", "-T", fmt.Sprint(rounds), "-b", "16", "-eta", "0.1", "-seed", "3",
	}}
	coord.start()
	defer coord.kill()
	srv := serve(t, pageHandler(webDir, proxyTo(coord.addr)))
	b := launch(t, t.TempDir())
	defer b.close()
	openPage(t, b, srv.URL+"/?code="+code, "")

	var pr api.Progress
	for deadline := time.Now().Add(4 * time.Minute); ; time.Sleep(300 * time.Millisecond) {
		if err := getJSON(srv.URL+"/api/progress?code="+code, &pr); err == nil && pr.Committed >= rounds {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d rounds committed after 4 minutes; page: %s; coordinator log %s", pr.Committed, rounds, b.text(), logf.Name())
		}
	}
	var st view.Status
	if err := getJSON(srv.URL+"/api/status?code="+code, &st); err != nil {
		t.Fatal(err)
	}
	if st.Session.Transform != plan.FeaturesScatter || st.Session.Features != 3969 {
		t.Fatalf("the session: transform %q, %d features; want scatter, 3969", st.Session.Transform, st.Session.Features)
	}
	dev, _ := storedDevice(t, b, code, st.Session)
	if dev.Session == nil || dev.Session.Transform != plan.FeaturesScatter || dev.Included != rounds {
		t.Errorf("the page's device: session %+v, %d rounds included; want the scatter session and %d", dev.Session, dev.Included, rounds)
	}
	if n := len(pr.Accuracy); n > 0 {
		t.Logf("coordinator's evaluation after round %d on 200 test pictures' features: %.1f%%", pr.Accuracy[n-1].Round, 100*pr.Accuracy[n-1].Accuracy)
	}
	b.must(60*time.Second, "try the model",
		chromedp.ScrollIntoView("#try", chromedp.ByID),
		drawStroke("try", [][2]float64{{10, 4}, {10, 24}, {18, 24}, {18, 4}}),
		chromedp.Click("#try-btn", chromedp.ByID),
		chromedp.Poll(`document.getElementById("prediction").textContent.startsWith("The model says")`, nil, chromedp.WithPollingTimeout(30*time.Second)))

	// The projector does not draw a feature model's weights as pictures
	// (3,969 = 63 x 63 would pass for a square picture).
	b.must(60*time.Second, "the projector's model note",
		chromedp.Navigate(srv.URL+"/dashboard?code="+code),
		chromedp.Poll(`(() => { const n = document.getElementById("sum-pics-note"), box = document.getElementById("sum-tiles");
  return n && n.textContent.includes("features computed from each picture") && box && box.children.length === 0; })()`,
			nil, chromedp.WithPollingTimeout(45*time.Second)))
}
