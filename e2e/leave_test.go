package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"browserfl/shared/wire"
)

// TestBrowserPageHiddenLeaves: the device runs in the page's worker, and
// a page that goes away for good still tells the coordinator: on a
// reload and on closing the tab (the pagehide event), the worker sends
// wire.Leave{stopped} and closes its websocket with 1000 before the
// browser ends it. A page that did not would leave the connection to
// end without a leave message or close frame (the coordinator would
// count the device as gone, not left). The coordinator is the real one;
// its debug log says how each connection ended.
func TestBrowserPageHiddenLeaves(t *testing.T) {
	webDir := pageBuild(t)
	const code = "BYE"
	// The real coordinator, logging at debug level: its log then says how
	// each device connection ended (the close frame's status, or none).
	o := startOnePage(t, webDir, code, "-T", "200", "-b", "16", "-round-gap", "1s", "-log-level", "debug")
	b := launch(t, t.TempDir())
	defer b.close()
	openPage(t, b, o.url+"/?code="+code, "")
	connected := func(what string) {
		t.Helper()
		var conn string
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if b.eval(`(document.getElementById("conn")||{textContent: ""}).textContent`, &conn) == nil && conn == "connected" {
				return
			}
		}
		t.Fatalf("%s: connection %q, want connected\npage text: %s", what, conn, b.text())
	}
	connected("training") // openPage pressed "Start helping"

	// waitEnd waits until n connections have ended and checks the last.
	waitEnd := func(n int, what string) {
		t.Helper()
		var ends []connEnd
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if ends = connEnds(o.log()); len(ends) >= n {
				break
			}
		}
		if len(ends) < n {
			t.Fatalf("%s: the page's websocket is still open (%d connections ended; coordinator log %s)", what, len(ends), o.logf.Name())
		}
		e := ends[n-1]
		if e.Leave != wire.LeaveStopped {
			t.Errorf("%s: last message %s, want a leave with reason %q", what, describeLeave(e.Leave), wire.LeaveStopped)
		}
		if !strings.Contains(e.Err, "status = "+websocket.StatusNormalClosure.String()) {
			t.Errorf("%s: the connection ended with %q, want a close frame with %v", what, e.Err, websocket.StatusNormalClosure)
		}
	}

	// A reload: the page resumes training afterwards.
	b.must(2*time.Minute, "reload", chromedp.Reload())
	waitEnd(1, "reload")
	connected("after the reload")
	// Closing the tab.
	if err := b.run(30*time.Second, page.Close()); err != nil {
		t.Fatalf("closing the tab: %v", err)
	}
	waitEnd(2, "closing the tab")
	if st := o.status(); len(st.People) != 1 || st.People[0].State != "left" {
		t.Errorf("the coordinator's people after the tab closed: %+v, want one, left", st.People)
	}
}

// connEnd is how one device connection ended, read from the
// coordinator's debug log: the reason of the leave message the device
// sent on it, if any, and the error its read loop ended with (it names
// the close frame's status, or says there was none).
type connEnd struct {
	Device string
	Leave  string
	Err    string
}

// connEnds reads, in order, how the device connections in a
// coordinator's debug log ended.
func connEnds(log string) []connEnd {
	var ends []connEnd
	left := map[string]string{} // device -> leave reason on its open connection
	for _, line := range strings.Split(log, "\n") {
		rec := logRecord(line)
		switch rec["msg"] {
		case "device left":
			left[rec["device"]] = rec["reason"]
		case "device connection ended":
			ends = append(ends, connEnd{Device: rec["device"], Leave: left[rec["device"]], Err: rec["err"]})
			delete(left, rec["device"])
		}
	}
	return ends
}

// logRecord parses one line of the coordinator's log (slog's text
// format: key=value, values quoted when they need it).
func logRecord(line string) map[string]string {
	rec := map[string]string{}
	for line != "" {
		eq := strings.IndexByte(line, '=')
		if eq < 0 {
			break
		}
		key, rest := strings.TrimSpace(line[:eq]), line[eq+1:]
		var val string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			val, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else if sp := strings.IndexByte(rest, ' '); sp >= 0 {
			val, rest = rest[:sp], rest[sp:]
		} else {
			val, rest = rest, ""
		}
		rec[key] = val
		line = strings.TrimLeft(rest, " ")
	}
	return rec
}

func describeLeave(reason string) string {
	if reason == "" {
		return "no leave"
	}
	return fmt.Sprintf("leave %q", reason)
}
