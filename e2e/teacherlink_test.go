package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/internal/loopback"
)

// TestWrongTeacherLink: the real coordinator and headless Chromium. A
// dashboard opened with a wrong teacher secret is told so once (403,
// counted), forgets the secret and goes on as the read-only dashboard,
// with a message a teacher understands and no teacher buttons; it sends
// no further guesses, so the address is not held in the backoff.
func TestWrongTeacherLink(t *testing.T) {
	bin := coordinatorBinary(t)
	logf, err := os.CreateTemp(t.TempDir(), "coordinator-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	const code = "TEACHERLINK"
	coord := &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: t.TempDir(), log: logf,
		args: []string{"-lobby", "-dataset", "none", "-join-code", code}}
	coord.start()
	defer coord.stop()
	b := launch(t, filepath.Join(t.TempDir(), "profile"))
	defer b.close()
	base := "http://" + coord.addr
	b.must(30*time.Second, "dashboard with a wrong teacher link",
		chromedp.Navigate(base+"/dashboard?code="+code+"&teacher=not-the-secret"),
		chromedp.Poll(`document.body.dataset.rendered === "1" && !document.getElementById("msg").hidden`, nil,
			chromedp.WithPollingTimeout(20*time.Second)))
	var msg string
	var controls, stored bool
	b.eval(`document.getElementById("msg").textContent`, &msg)
	b.eval(`!document.getElementById("controls").hidden`, &controls)
	b.eval(`sessionStorage.getItem("bfl-teacher") !== null`, &stored)
	if !strings.Contains(msg, "teacher link is not right") || controls || stored {
		t.Errorf("message %q, teacher buttons shown %v, secret kept %v; want the message, no buttons, no secret", msg, controls, stored)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`browserfl_rejections_total{kind="teacher_secret"} 1`, `browserfl_rejections_total{kind="teacher_throttled"} 0`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
