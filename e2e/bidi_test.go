package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/internal/loopback"
)

// bidi is a minimal WebDriver BiDi client (the W3C protocol Firefox
// serves itself on --remote-debugging-port; no geckodriver, which Debian
// does not package): commands as JSON {id, method, params} over one
// websocket, answered by id; events are ignored. Hand-written because no
// well-kept Go BiDi client is reachable (go-rod speaks only Chrome's
// DevTools protocol; playwright-go drives its own browser builds through
// a Node driver it downloads): docs/browser.md.
type bidi struct {
	conn *websocket.Conn
	mu   sync.Mutex
	id   int
	wait map[int]chan bidiResponse
	err  error // set when the connection ended
}

type bidiResponse struct {
	ID      int             `json:"id"`
	Type    string          `json:"type"` // success, error, event
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
}

func dialBiDi(ctx context.Context, url string) (*bidi, error) {
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(256 << 20) // full-page screenshots
	b := &bidi{conn: conn, wait: map[int]chan bidiResponse{}}
	go b.readLoop()
	return b, nil
}

func (b *bidi) readLoop() {
	for {
		_, data, err := b.conn.Read(context.Background())
		if err != nil {
			b.mu.Lock()
			b.err = fmt.Errorf("bidi: connection ended: %w", err)
			for id, ch := range b.wait {
				close(ch)
				delete(b.wait, id)
			}
			b.mu.Unlock()
			return
		}
		var r bidiResponse
		if json.Unmarshal(data, &r) != nil || r.Type == "event" {
			continue
		}
		b.mu.Lock()
		ch := b.wait[r.ID]
		delete(b.wait, r.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// call sends one command and waits for its answer (at most timeout).
func (b *bidi) call(timeout time.Duration, method string, params, out any) error {
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return b.err
	}
	b.id++
	id := b.id
	ch := make(chan bidiResponse, 1)
	b.wait[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(timeout)
	defer cancel()
	if err := b.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return fmt.Errorf("bidi %s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("bidi %s: connection ended", method)
		}
		if r.Type == "error" {
			return fmt.Errorf("bidi %s: %s: %s", method, r.Error, r.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.wait, id)
		b.mu.Unlock()
		return fmt.Errorf("bidi %s: no answer within %v", method, timeout)
	}
}

// startFirefox starts one headless firefox-esr for test t with a fresh
// profile and its WebDriver BiDi server on a loopback port, and returns
// how to open a tab: each tab is a window in a user context of its own
// (separate cookies and storage: one phone each).
func startFirefox(t *testing.T) func() (tab, error) {
	b := launchFirefox(t, nil)
	return func() (tab, error) { return b.newTab("") }
}

// firefoxPrefs are the fresh profile's settings: no first-run pages,
// telemetry or update checks (nothing leaves the machine), and
// background windows' timers not slowed down (pages train side by side).
const firefoxPrefs = `user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("app.update.enabled", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("dom.timeout.enable_budget_timer_throttling", false);
user_pref("dom.min_background_timeout_value", 4);
user_pref("dom.min_background_timeout_value_without_budget_throttling", 4);
`

// launchFirefox runs firefox-esr (extra prefs appended to the fresh
// profile's) and opens a BiDi session.
func launchFirefox(t *testing.T, extraPrefs []string) *bidi {
	t.Helper()
	bin, err := exec.LookPath("firefox-esr")
	if err != nil {
		t.Fatalf("firefox-esr: %v (scripts/setup.sh --browser installs it)", err)
	}
	addr := loopback.Addr(t)
	port := addr[strings.LastIndex(addr, ":")+1:]
	profile := t.TempDir()
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(firefoxPrefs+strings.Join(extraPrefs, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	// The remote agent listens on localhost only.
	cmd := exec.Command(bin, "--headless", "--no-remote", "--profile", profile, "--remote-debugging-port", port)
	cmd.Env = append(os.Environ(), "MOZ_CRASHREPORTER_DISABLE=1")
	// Its own process group, ended as one: Firefox may start itself
	// again on a fresh profile (the first process exits), and its
	// content processes are its children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	var b *bidi
	for end := time.Now().Add(90 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		ctx, cancel := withTimeout(10 * time.Second)
		b, err = dialBiDi(ctx, "ws://127.0.0.1:"+port+"/session")
		cancel()
		if err == nil {
			break
		}
	}
	if b == nil {
		t.Fatalf("firefox: BiDi: %v", err)
	}
	t.Cleanup(func() { b.conn.Close(websocket.StatusNormalClosure, "") })
	if err := b.call(60*time.Second, "session.new", map[string]any{"capabilities": map[string]any{}}, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

// firefoxTab is one BiDi browsing context (a top-level window).
type firefoxTab struct {
	b   *bidi
	ctx string
}

// newTab opens a window in a new user context, or in userContext if set.
func (b *bidi) newTab(userContext string) (*firefoxTab, error) {
	if userContext == "" {
		var uc struct {
			UserContext string `json:"userContext"`
		}
		if err := b.call(30*time.Second, "browser.createUserContext", map[string]any{}, &uc); err != nil {
			return nil, err
		}
		userContext = uc.UserContext
	}
	var c struct {
		Context string `json:"context"`
	}
	if err := b.call(60*time.Second, "browsingContext.create", map[string]any{"type": "window", "userContext": userContext}, &c); err != nil {
		return nil, err
	}
	return &firefoxTab{b: b, ctx: c.Context}, nil
}

func (f *firefoxTab) navigate(url string) error {
	return f.b.call(90*time.Second, "browsingContext.navigate", map[string]any{"context": f.ctx, "url": url, "wait": "complete"}, nil)
}

func (f *firefoxTab) eval(expr string, out any) error {
	var r struct {
		Type   string `json:"type"`
		Result struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"result"`
		ExceptionDetails struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := f.b.call(90*time.Second, "script.evaluate", map[string]any{"expression": jsonExpr(expr),
		"target": map[string]any{"context": f.ctx}, "awaitPromise": true, "resultOwnership": "none"}, &r); err != nil {
		return err
	}
	if r.Type == "exception" {
		return fmt.Errorf("in the page: %s", r.ExceptionDetails.Text)
	}
	return unmarshalInto(r.Result.Value, out)
}

// element scrolls sel into view once it is visible and returns its BiDi
// reference.
func (f *firefoxTab) element(sel string) (map[string]any, error) {
	if err := waitVisible(f, 60*time.Second, sel); err != nil {
		return nil, err
	}
	if err := f.eval(fmt.Sprintf(`document.querySelector(%q).scrollIntoView({block: "center"})`, sel), nil); err != nil {
		return nil, err
	}
	var n struct {
		Nodes []struct {
			SharedID string `json:"sharedId"`
		} `json:"nodes"`
	}
	if err := f.b.call(30*time.Second, "browsingContext.locateNodes", map[string]any{"context": f.ctx,
		"locator": map[string]any{"type": "css", "value": sel}, "maxNodeCount": 1}, &n); err != nil {
		return nil, err
	}
	if len(n.Nodes) == 0 {
		return nil, fmt.Errorf("no element %s", sel)
	}
	return map[string]any{"sharedId": n.Nodes[0].SharedID}, nil
}

func (f *firefoxTab) click(sel string) error {
	el, err := f.element(sel)
	if err != nil {
		return err
	}
	return f.b.call(30*time.Second, "input.performActions", map[string]any{"context": f.ctx, "actions": []any{map[string]any{
		"type": "pointer", "id": "mouse", "parameters": map[string]any{"pointerType": "mouse"},
		"actions": []any{
			map[string]any{"type": "pointerMove", "x": 0, "y": 0, "origin": map[string]any{"type": "element", "element": el}},
			map[string]any{"type": "pointerDown", "button": 0},
			map[string]any{"type": "pointerUp", "button": 0},
		}}}}, nil)
}

func (f *firefoxTab) setFiles(sel string, paths []string) error {
	el, err := f.element(sel)
	if err != nil {
		return err
	}
	return f.b.call(30*time.Second, "input.setFiles", map[string]any{"context": f.ctx, "element": el, "files": paths}, nil)
}

func (f *firefoxTab) reload() error {
	return f.b.call(90*time.Second, "browsingContext.reload", map[string]any{"context": f.ctx, "wait": "complete"}, nil)
}

func (f *firefoxTab) closeTab() error {
	return f.b.call(30*time.Second, "browsingContext.close", map[string]any{"context": f.ctx}, nil)
}

// viewport sets the viewport (Firefox has no mobile emulation over
// BiDi: mobile is ignored).
func (f *firefoxTab) viewport(w, h int, mobile bool) ([2]int, error) {
	if err := f.b.call(30*time.Second, "browsingContext.setViewport", map[string]any{"context": f.ctx,
		"viewport": map[string]any{"width": w, "height": h}}, nil); err != nil {
		return [2]int{}, err
	}
	return innerSize(f)
}

func (f *firefoxTab) screenshot(path string, full bool) error {
	origin := "viewport"
	if full {
		origin = "document"
	}
	var r struct {
		Data string `json:"data"`
	}
	if err := f.b.call(60*time.Second, "browsingContext.captureScreenshot", map[string]any{"context": f.ctx, "origin": origin}, &r); err != nil {
		return err
	}
	return writePNG(path, r.Data)
}

func (f *firefoxTab) text() string {
	var s string
	f.eval(`document.body ? document.body.innerText : ""`, &s)
	return s
}
