package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"browserfl/shared/dataset"
	"browserfl/shared/wire"
)

// TestBrowserPageHiddenLeaves: the device runs in the page's worker, and
// a page that goes away for good still tells the coordinator: on a
// reload and on closing the tab (the pagehide event), the worker sends
// wire.Leave{stopped} and closes its websocket with 1000 before the
// browser ends it. A page that did not would leave the connection to
// end without a leave message or close frame (the coordinator would
// count the device as gone, not left).
func TestBrowserPageHiddenLeaves(t *testing.T) {
	webDir := pageBuild(t)
	all := fashionTest(t)
	shard, err := all.Take(200)
	if err != nil {
		t.Fatal(err)
	}
	const code = "BYE"
	sc := newScripted(t, e2eSession(1), code, []dataset.Set{shard}, all.Samples[:10], lies{})
	srv := serve(t, pageHandler(webDir, sc.handler()))
	b := launch(t, t.TempDir())
	defer b.close()
	openPage(t, b, srv.URL+"/?code="+code, "")
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
			if ends = sc.connEnds(); len(ends) >= n {
				break
			}
		}
		if len(ends) < n {
			t.Fatalf("%s: the page's websocket is still open (%d connections ended)", what, len(ends))
		}
		e := ends[n-1]
		if e.Leave == nil || e.Leave.Reason != wire.LeaveStopped {
			t.Errorf("%s: last message %s, want a leave with reason %q", what, describeLeave(e.Leave), wire.LeaveStopped)
		}
		if e.Status != websocket.StatusNormalClosure {
			t.Errorf("%s: websocket closed with %v, want %v", what, e.Status, websocket.StatusNormalClosure)
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
}

func describeLeave(l *wire.Leave) string {
	if l == nil {
		return "no leave"
	}
	return fmt.Sprintf("leave %q", l.Reason)
}
