package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// tab is one browser tab, with storage of its own (one student's phone,
// or the projector), in any of the three engines a class brings:
// Chromium over DevTools (chromedp), Firefox ESR over WebDriver BiDi
// (bidi_test.go) and WebKitGTK, the engine of Safari, over W3C WebDriver
// (WebKitWebDriver, webkit_test.go). One test body drives all three.
type tab interface {
	// navigate opens url and waits for its load event.
	navigate(url string) error
	// eval evaluates a JavaScript expression; a promise is awaited. out
	// (if not nil) receives its value as JSON.
	eval(expr string, out any) error
	// click clicks the first element matching the CSS selector with the
	// engine's own pointer input (not a script's el.click()), once the
	// element is visible.
	click(sel string) error
	// setFiles picks files for the file input sel, as the student would.
	setFiles(sel string, paths []string) error
	reload() error
	// closeTab closes the tab as a student closing it.
	closeTab() error
	// viewport sets the page's viewport (mobile: a phone's emulation
	// where the engine has one). It returns the size the page then
	// reports (innerWidth x innerHeight), which can differ where the
	// engine cannot make a window that small.
	viewport(w, h int, mobile bool) ([2]int, error)
	// screenshot saves a PNG of the page: the whole page (full, where
	// the engine can) or what the viewport shows.
	screenshot(path string, full bool) error
	// text is the page's visible text, for failure messages.
	text() string
}

// engine starts one kind of browser for a test.
type engine struct {
	name string
	// start prepares the engine for test t (a process shared by its
	// tabs where the engine allows it, ended when t ends) and returns
	// how to open a fresh tab.
	start func(t *testing.T) func() (tab, error)
}

// engines are the three engines every cross-engine test runs in, as the
// subtests chromium, firefox and webkit. Each needs its Debian package
// (scripts/setup.sh --browser installs them): chromium and
// chromium-driver; firefox-esr; webkit2gtk-driver and xvfb.
var engines = []engine{
	{"chromium", startChromium},
	{"firefox", startFirefox},
	{"webkit", startWebKit},
}

// waitFor polls the expression in the page until it is true (every
// 100 ms, up to timeout: a generous wait for an event, not a time
// limit the test asserts).
func waitFor(p tab, timeout time.Duration, what, expr string) error {
	end := time.Now().Add(timeout)
	var last error
	for {
		var ok bool
		if last = p.eval("!!("+expr+")", &ok); last == nil && ok {
			return nil
		}
		if time.Now().After(end) {
			if last != nil {
				return fmt.Errorf("%s: not within %v: %w", what, timeout, last)
			}
			return fmt.Errorf("%s: not within %v", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// visibleJS is true when the element sel is rendered.
func visibleJS(sel string) string {
	return fmt.Sprintf(`(e => !!e && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden")(document.querySelector(%q))`, sel)
}

// waitVisible waits for the element sel to be rendered.
func waitVisible(p tab, timeout time.Duration, sel string) error {
	return waitFor(p, timeout, sel+" visible", visibleJS(sel))
}

// setValue sets an input's value and fires its input event (typing).
func setValue(p tab, sel, v string) error {
	return p.eval(fmt.Sprintf(`(e => { e.value = %q; e.dispatchEvent(new Event("input", {bubbles: true})); return true; })(document.querySelector(%q))`, v, sel), nil)
}

// pageFailure formats err with the page's text.
func pageFailure(p tab, what string, err error) string {
	return fmt.Sprintf("%s: %v\npage text: %s", what, err, p.text())
}

// chromiumTab is a tab of its own headless Chromium (launch): see phone
// in class_test.go for why not tabs of one Chromium.
type chromiumTab struct{ b *browser }

func startChromium(t *testing.T) func() (tab, error) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s: %v (scripts/setup.sh --browser installs it)", chromiumPath, err)
	}
	return func() (tab, error) {
		b := launch(t, t.TempDir())
		t.Cleanup(b.close)
		return &chromiumTab{b}, nil
	}
}

func (c *chromiumTab) navigate(url string) error {
	return c.b.run(90*time.Second, chromedp.Navigate(url))
}

func (c *chromiumTab) eval(expr string, out any) error {
	if out == nil {
		expr = "((v) => null)(" + expr + ")"
		var discard any
		out = &discard
	}
	return c.b.run(90*time.Second, chromedp.Evaluate(expr, out, awaitPromise))
}

func (c *chromiumTab) click(sel string) error {
	return c.b.run(60*time.Second, chromedp.Click(sel, chromedp.ByQuery))
}

func (c *chromiumTab) setFiles(sel string, paths []string) error {
	return c.b.run(30*time.Second, chromedp.SetUploadFiles(sel, paths, chromedp.ByQuery))
}

func (c *chromiumTab) reload() error { return c.b.run(90*time.Second, chromedp.Reload()) }

func (c *chromiumTab) closeTab() error { return c.b.run(20*time.Second, page.Close()) }

func (c *chromiumTab) viewport(w, h int, mobile bool) ([2]int, error) {
	opts := []chromedp.EmulateViewportOption{}
	if mobile {
		opts = append(opts, chromedp.EmulateMobile)
	}
	if err := c.b.run(30*time.Second, chromedp.EmulateViewport(int64(w), int64(h), opts...)); err != nil {
		return [2]int{}, err
	}
	return innerSize(c)
}

func (c *chromiumTab) screenshot(path string, full bool) error {
	if full {
		return c.b.screenshot(path)
	}
	return c.b.viewShot(path)
}

func (c *chromiumTab) text() string { return c.b.text() }

// innerSize is the page's innerWidth x innerHeight.
func innerSize(p tab) ([2]int, error) {
	var s [2]int
	err := p.eval(`[innerWidth, innerHeight]`, &s)
	return s, err
}

// writePNG saves a base64 PNG from a driver.
func writePNG(path, b64 string) error {
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	if !strings.HasPrefix(string(png), "\x89PNG") {
		return errors.New("screenshot: not a PNG")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}

// jsonExpr wraps an expression so its awaited value arrives as JSON text
// ("null" for undefined), for the engines whose protocols do not hand
// back plain JSON values.
func jsonExpr(expr string) string {
	return "(async () => { const v = await (" + expr + "); return v === undefined ? \"null\" : JSON.stringify(v); })()"
}

// unmarshalInto decodes a JSON value into out (nil: discarded).
func unmarshalInto(raw string, out any) error {
	if out == nil {
		return nil
	}
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		return fmt.Errorf("script value %.200s: %w", raw, err)
	}
	return nil
}

// withTimeout is a context for one command.
func withTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// dataTransferJS sets files (name and base64 content) on the file input
// sel through a DataTransfer and fires its change event: how a script
// picks files where the driver has no file upload.
func dataTransferJS(sel string, names, b64 []string) string {
	n, _ := json.Marshal(names)
	c, _ := json.Marshal(b64)
	return fmt.Sprintf(`((names, data) => {
  const el = document.querySelector(%q);
  const dt = new DataTransfer();
  names.forEach((n, i) => dt.items.add(new File([Uint8Array.from(atob(data[i]), c => c.charCodeAt(0))], n)));
  el.files = dt.files;
  el.dispatchEvent(new Event("change", {bubbles: true}));
  return el.files.length;
})(%s, %s)`, sel, n, c)
}
