package e2e

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"browserfl/internal/loopback"
)

// webDriver is a minimal W3C WebDriver client (WebKitGTK's
// WebKitWebDriver): a session, a navigation and scripts.
type webDriver struct {
	base, session string
}

func (d *webDriver) call(method, path string, in, out any) error {
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			return err
		}
	}
	req, err := http.NewRequest(method, d.base+path, &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 4 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var v struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return fmt.Errorf("webdriver %s %s: %d: %w", method, path, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("webdriver %s %s: %d: %.500s", method, path, resp.StatusCode, v.Value)
	}
	if out != nil {
		return json.Unmarshal(v.Value, out)
	}
	return nil
}

// miniBrowser is WebKitGTK's browser for automation (webkit2gtk-driver).
const miniBrowser = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"

// startWebKit starts one Xvfb for test t (no TCP: local clients only)
// and returns how to open a tab: each tab is a WebKitWebDriver of its
// own on a loopback port with one session, so one MiniBrowser, whose
// automation session keeps its data in memory (a fresh profile each;
// WebKitWebDriver holds one session at a time).
func startWebKit(t *testing.T) func() (tab, error) {
	display := startXvfb(t)
	return func() (tab, error) { return newWebKitTab(t, display, nil) }
}

// startXvfb runs Xvfb on a free display and returns it (":N").
func startXvfb(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("Xvfb")
	if err != nil {
		t.Fatalf("Xvfb: %v (scripts/setup.sh --browser installs xvfb)", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// -displayfd 3: Xvfb picks a free display and writes its number.
	cmd := exec.Command(bin, "-displayfd", "3", "-nolisten", "tcp", "-screen", "0", "2560x1600x24")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		w.Close()
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("Xvfb: no display number: %v", err)
	}
	return ":" + strings.TrimSpace(line)
}

// webkitTab is one WebKitWebDriver session (one MiniBrowser window).
type webkitTab struct {
	d *webDriver
}

// newWebKitTab starts a WebKitWebDriver on display with one session;
// args are MiniBrowser's extra arguments.
func newWebKitTab(t *testing.T, display string, args []string) (*webkitTab, error) {
	addr := loopback.Addr(t)
	port := addr[strings.LastIndex(addr, ":")+1:]
	cmd := exec.Command("WebKitWebDriver", "--port="+port, "--host=local")
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	// Its own process group: the driver's browser ends with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("WebKitWebDriver: %w (scripts/setup.sh --browser installs webkit2gtk-driver)", err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	d := &webDriver{base: "http://" + addr}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	var err error
	for end := time.Now().Add(90 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		if err = d.call(http.MethodPost, "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
			"webkitgtk:browserOptions": map[string]any{"binary": miniBrowser, "args": append([]string{"--automation"}, args...)},
		}}}, &sess); err == nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	d.session = "/session/" + sess.SessionID
	t.Cleanup(func() { d.call(http.MethodDelete, d.session, nil, nil) })
	if err := d.call(http.MethodPost, d.session+"/timeouts", map[string]any{"script": 180000, "pageLoad": 90000}, nil); err != nil {
		return nil, err
	}
	return &webkitTab{d: d}, nil
}

func (w *webkitTab) navigate(url string) error {
	return w.d.call(http.MethodPost, w.d.session+"/url", map[string]any{"url": url}, nil)
}

func (w *webkitTab) eval(expr string, out any) error {
	var v struct {
		OK    string `json:"ok"`
		Error string `json:"error"`
	}
	script := "const done = arguments[0]; " + jsonExpr(expr) + ".then(v => done({ok: v}), e => done({error: String(e)}));"
	if err := w.d.call(http.MethodPost, w.d.session+"/execute/async", map[string]any{"script": script, "args": []any{}}, &v); err != nil {
		return err
	}
	if v.Error != "" {
		return fmt.Errorf("in the page: %s", v.Error)
	}
	return unmarshalInto(v.OK, out)
}

func (w *webkitTab) element(sel string) (string, error) {
	if err := waitVisible(w, 60*time.Second, sel); err != nil {
		return "", err
	}
	var el map[string]string
	if err := w.d.call(http.MethodPost, w.d.session+"/element", map[string]any{"using": "css selector", "value": sel}, &el); err != nil {
		return "", err
	}
	for _, id := range el { // the one key is the W3C element identifier
		return id, nil
	}
	return "", fmt.Errorf("no element %s", sel)
}

func (w *webkitTab) click(sel string) error {
	id, err := w.element(sel)
	if err != nil {
		return err
	}
	return w.d.call(http.MethodPost, w.d.session+"/element/"+id+"/click", map[string]any{}, nil)
}

// setFiles sets the files through a DataTransfer (a script): the
// driver's file upload needs the file chooser of a desktop session.
func (w *webkitTab) setFiles(sel string, paths []string) error {
	names := make([]string, len(paths))
	data := make([]string, len(paths))
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		names[i], data[i] = filepath.Base(p), base64.StdEncoding.EncodeToString(b)
	}
	if err := waitVisible(w, 60*time.Second, sel); err != nil {
		return err
	}
	return w.eval(dataTransferJS(sel, names, data), nil)
}

func (w *webkitTab) reload() error {
	return w.d.call(http.MethodPost, w.d.session+"/refresh", map[string]any{}, nil)
}

func (w *webkitTab) closeTab() error {
	return w.d.call(http.MethodDelete, w.d.session+"/window", nil, nil)
}

// viewport sizes the window so the page gets w x h (MiniBrowser's window
// has a toolbar, and it is at least 447 px wide: a narrower request
// gives a wider page; the size reached is returned). No mobile
// emulation.
func (w *webkitTab) viewport(width, height int, mobile bool) ([2]int, error) {
	var in [2]int
	var out [2]int
	for try := 0; try < 3; try++ {
		if err := w.eval(`[innerWidth, innerHeight]`, &in); err != nil {
			return in, err
		}
		if err := w.eval(`[outerWidth, outerHeight]`, &out); err != nil {
			return in, err
		}
		if in == [2]int{width, height} {
			break
		}
		if err := w.d.call(http.MethodPost, w.d.session+"/window/rect", map[string]any{
			"width": width + out[0] - in[0], "height": height + out[1] - in[1]}, nil); err != nil {
			return in, err
		}
		// The window is resized after the call returns (under Xvfb, on a
		// loaded machine): sizes read before it settles give a wrong
		// correction on the next try (a 1920x1080 request once reached
		// 2816x1430). Wait, up to 2 s, for the page to reach the size or
		// to stop changing (a size the window cannot take).
		before := in
		for wait := 0; wait < 20; wait++ {
			time.Sleep(100 * time.Millisecond)
			var now [2]int
			if err := w.eval(`[innerWidth, innerHeight]`, &now); err != nil {
				return now, err
			}
			if now == [2]int{width, height} || (now != before && now == in) {
				break
			}
			in = now
		}
	}
	return innerSize(w)
}

// screenshot saves the viewport (WebDriver has no whole-page shot: for
// full, the top of the page),
// once the page has painted what its DOM holds: two animation frames
// first (on a busy machine the driver's snapshot was an older frame:
// the dashboard still "connecting..." while its DOM showed the lobby).
func (w *webkitTab) screenshot(path string, full bool) error {
	if full { // no whole-page shot: the page's top instead
		if err := w.eval(`window.scrollTo(0, 0)`, nil); err != nil {
			return err
		}
	}
	if err := w.eval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, nil); err != nil {
		return err
	}
	var b64 string
	if err := w.d.call(http.MethodGet, w.d.session+"/screenshot", nil, &b64); err != nil {
		return err
	}
	return writePNG(path, b64)
}

func (w *webkitTab) text() string {
	var s string
	w.eval(`document.body ? document.body.innerText : ""`, &s)
	return s
}
