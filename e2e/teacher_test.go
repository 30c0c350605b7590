package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"browserfl/coordinator/api"
	"browserfl/coordinator/view"
	"browserfl/internal/loopback"
	"browserfl/shared/mechanism"
	"browserfl/shared/wire"
)

// hostileDevice joins code on the websocket at wsURL with the nickname
// and answers every round with an update of 1e300 per coordinate (far
// above the norm bound). It returns the code of the error the
// coordinator closed the connection with.
func hostileDevice(ctx context.Context, wsURL, code, nickname string, dim int) <-chan string {
	out := make(chan string, 1)
	go func() {
		closed := ""
		defer func() { out <- closed }()
		ws, _, err := websocket.Dial(ctx, wsURL, nil)
		if err != nil {
			closed = "dial: " + err.Error()
			return
		}
		defer ws.CloseNow()
		ws.SetReadLimit(1 << 22)
		b, _ := wire.EncodeControl(wire.Hello{Version: wire.Version, JoinCode: code, Nickname: nickname})
		if ws.Write(ctx, websocket.MessageText, b) != nil {
			return
		}
		x := make([]float64, dim)
		for i := range x {
			x[i] = 1e300
		}
		payload, _ := mechanism.Dense64{}.Compress(nil, make([]float64, dim), x, nil)
		for {
			typ, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageText {
				if m, err := wire.DecodeControl(b); err == nil {
					if e, ok := m.(wire.Error); ok {
						closed = e.Code
					}
				}
				continue
			}
			r, err := wire.DecodeRound(b, wire.Limits{Dim: dim, MaxBytes: 1 << 22})
			if err != nil {
				continue // a round frame without x_{t-1}: answered all the same
			}
			f, _ := wire.EncodeUpdate(wire.UpdateFrame{T: r.T, Payload: payload})
			if ws.Write(ctx, websocket.MessageBinary, f) != nil {
				return
			}
		}
	}()
	return out
}

// TestBrowserTeacherRemoves: a lesson with one student's page (Ada) and
// a hostile device (Mallory) that sends updates far above the norm bound.
// The teacher's dashboard lists Mallory under "Check these devices" with
// the reason in plain words (the projector's read-only view does not);
// the teacher removes Ada with the Remove button on her name, and her
// page says "The teacher removed this device from the session."; then
// Mallory from the list, whose connection is closed with "removed". All
// against the real coordinator (cmd/coordinator -lobby).
// With -screenshots it writes docs/screenshots/teacher-*.png.
func TestBrowserTeacherRemoves(t *testing.T) {
	webDir := pageBuild(t)
	bin := coordinatorBinary(t)
	const code = "REMOVE7"
	logf, err := os.CreateTemp("", "browserfl-e2e-teacher-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	dataDir := t.TempDir()
	coord := &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: dataDir, log: logf, args: []string{
		"-lobby", "-join-code", code, "-dataset", fashionDir, "-eval-every", "5", "-eval-samples", "500",
		"-demo-shards", "4", "-deadline", "60s", "-round-gap", "500ms", "-seed", "5",
		"-T", "200", "-b", "16", "-eta", "1", "-D", "10", "-clip", "1",
	}}
	coord.start()
	defer coord.stop()
	secret := teacherSecretIn(t, dataDir)
	srv := serve(t, pageHandler(webDir, proxyTo(coord.addr)))
	shots := screenshotDir(t)
	shot := func(b *browser, name string) {
		t.Helper()
		if err := b.screenshot(filepath.Join(shots, "teacher-"+name+".png")); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	ada, err := phone(t)
	if err != nil {
		t.Fatal(err)
	}
	defer ada.close()
	ada.must(3*time.Minute, "Ada: join by code, wait in the lobby",
		append(joinSteps(srv.URL, code, "Ada", nil), chromedp.WaitVisible("#lobby", chromedp.ByID))...)
	mallory := hostileDevice(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", code, "Mallory", 7850)

	dash := launch(t, t.TempDir())
	defer dash.close()
	dash.must(60*time.Second, "teacher's dashboard: Start",
		chromedp.EmulateViewport(1920, 1080),
		chromedp.Navigate(srv.URL+"/dashboard?code="+code+"&teacher="+secret),
		chromedp.Poll(`document.querySelectorAll("#names-big li.lobby").length === 2 && !document.getElementById("btn-start").hidden`,
			nil, chromedp.WithPollingTimeout(50*time.Second)),
		chromedp.Click("#btn-start", chromedp.ByID))
	dash.must(90*time.Second, "Mallory flagged with the reason in words",
		chromedp.Poll(`(() => { const li = [...document.querySelectorAll("#flaglist li")].find(l => l.textContent.startsWith("Mallory"));
			return !!li && li.textContent.includes("bigger than the session allows") && !!li.querySelector("button.remove") &&
				!document.getElementById("flags").hidden; })()`, nil, chromedp.WithPollingTimeout(80*time.Second)),
		// The page must be training too before it is removed.
		chromedp.Poll(`[...document.querySelectorAll("#names li")].some(l => l.textContent.startsWith("Ada") && l.classList.contains("active"))`,
			nil, chromedp.WithPollingTimeout(60*time.Second)))
	shot(dash, "flagged")

	// The projector's read-only view shows no flags and no Remove buttons.
	var st view.Status
	if err := getJSON(srv.URL+"/api/status?code="+code, &st); err != nil {
		t.Fatal(err)
	}
	for _, p := range st.People {
		if p.Device != "" || p.Rejected != 0 || p.Rejection != "" {
			t.Errorf("read-only status shows what only the teacher sees: %+v", p)
		}
	}

	// Remove Ada with the button on her name (the confirmation accepted).
	dash.must(20*time.Second, "remove Ada",
		chromedp.Evaluate(`window.confirm = () => true`, nil),
		clickNow(`#names li.active button.remove`))
	ada.must(60*time.Second, "Ada's page says she was removed",
		chromedp.Poll(`document.body.innerText.includes("The teacher removed this device from the session.")`,
			nil, chromedp.WithPollingTimeout(50*time.Second)))
	shot(ada, "removed-phone")

	// Then Mallory, from the list of devices to check.
	dash.must(20*time.Second, "remove Mallory",
		chromedp.Evaluate(`window.confirm = () => true`, nil),
		clickNow(`#flaglist button.remove`),
		chromedp.Poll(`[...document.querySelectorAll("#names li.removed")].length === 2 &&
			document.getElementById("flaglist").textContent.includes("Removed.")`, nil, chromedp.WithPollingTimeout(15*time.Second)))
	shot(dash, "removed")
	select {
	case c := <-mallory:
		if c != wire.CodeRemoved {
			t.Errorf("Mallory's connection closed with %q, want %q", c, wire.CodeRemoved)
		}
	case <-ctx.Done():
		t.Fatal("Mallory's connection was not closed")
	}
	// A reload of Ada's page is refused with the same words.
	ada.must(60*time.Second, "Ada reloads",
		chromedp.Reload(),
		chromedp.Poll(`document.body.innerText.includes("The teacher removed this device from the session.")`,
			nil, chromedp.WithPollingTimeout(50*time.Second)))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/teacher/end", nil)
	req.Header.Set(api.TeacherHeader, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("end: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("end: %s", resp.Status)
	}
	fmt.Fprintln(logf, "test done")
}

// clickNow clicks the first element matching sel in the same script turn
// that finds it: the dashboard redraws its lists every second, so a node
// found by one DevTools call can be gone by the next (chromedp.Click's
// "Could not find node with given id").
func clickNow(sel string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`(() => { const b = document.querySelector(%q); if (!b) return false; b.click(); return true; })()`, sel),
		nil, chromedp.WithPollingTimeout(15*time.Second))
}
