package e2e

import (
	"context"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"browserfl/coordinator/view"
	"browserfl/shared/dataset"
	"browserfl/wasm/local"
)

// moreWords records, from before the page's scripts run, each text of
// the page's "more example pictures" line (#more-pictures).
const moreWords = `window.__more = [];
new MutationObserver(() => {
  const el = document.getElementById("more-pictures");
  const w = el ? el.textContent : "";
  if (w && window.__more[window.__more.length - 1] !== w) window.__more.push(w);
}).observe(document, {subtree: true, childList: true, characterData: true});`

// TestBrowserDemoChunks: a page on the example pictures of a session of
// the real coordinator, 20 rounds of b = 64, stores the first 12 rounds'
// pictures before it starts and fetches the rest while it trains; the
// first fetch of the rest fails (503, a fault between the page and the
// coordinator: the page server answers it), and the page says so in
// plain words, tries again, and answers all 20 rounds with every picture
// of its shard, none twice. A page that did not fetch the rest, or gave
// up after a failure, would run out after round 16 and the session would
// not end.
func TestBrowserDemoChunks(t *testing.T) {
	t.Parallel() // docs/browser.md, "Parallel browser tests"
	webDir := pageBuild(t)
	const code, rounds, batch = "CHUNKS", 20, 64
	// One demo shard (sized for the 20 rounds), a pause between rounds
	// so the retry (2 s after the failure) comes within the 12 rounds'
	// pictures the page has before it starts, as a session's round gap
	// and deadlines give it.
	o := startOnePage(t, webDir, code, "-T", strconv.Itoa(rounds), "-b", strconv.Itoa(batch), "-demo-shards", "1",
		"-round-gap", "1s", "-clip", "1", "-eta", "1", "-D", "10", "-rho", "2")
	var mu sync.Mutex
	fails, later := 0, 0 // chunk requests after the first: failed, served
	o.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/api/demo/images" && r.URL.Path != "/api/demo/labels" {
			return false
		}
		if from, _ := strconv.Atoi(r.URL.Query().Get("from")); from == 0 {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if fails == 0 && r.URL.Path == "/api/demo/images" {
			fails++
			http.Error(w, "the network failed", http.StatusServiceUnavailable)
			return true
		}
		later++
		return false
	})
	b := launch(t, t.TempDir())
	defer b.close()
	b.must(10*time.Second, "observer", chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(moreWords).Do(ctx)
		return err
	}))
	openPage(t, b, o.url+"/?code="+code, "")
	stored := pageData(t, b, code, "demo").Len()
	if want := 12 * batch; stored != want {
		t.Errorf("before training: %d example pictures stored, want the first 12 rounds' (%d)", stored, want)
	}
	// The session's end, or the page gone before it with no round open
	// (one page: nothing can include it again), which fails below at
	// once instead of when the wait runs out.
	st := o.waitStatus("the session's end or the page's leaving", 5*time.Minute, func(st view.Status) bool {
		return st.Finished || st.Round == nil && len(st.People) == 1 && (st.People[0].State == "left" || st.People[0].State == "gone")
	})
	if !st.Finished {
		t.Errorf("the page left before the session's end (state %q, %d rounds committed)", st.State, st.Committed)
	}
	if len(st.People) != 1 || st.People[0].Rounds != rounds || st.People[0].Rejected != 0 {
		t.Errorf("the page in the coordinator's status: %+v; want included in all %d rounds, none rejected", st.People, rounds)
	}
	mu.Lock()
	f, l := fails, later
	mu.Unlock()
	if f != 1 || l < 2 {
		t.Errorf("chunk requests after the first: %d failed, %d served; want 1 failed, then images and labels", f, l)
	}
	// The shard, as the coordinator serves it whole (one shard: every
	// request gets it).
	shard := wholeShard(t, o, code)
	if shard.Len() != rounds*batch {
		t.Fatalf("the coordinator's shard holds %d pictures, want %d", shard.Len(), rounds*batch)
	}
	demo := pageData(t, b, code, "demo")
	if demo.Len() != shard.Len() {
		t.Errorf("after the session: %d example pictures stored, want the whole shard (%d)", demo.Len(), shard.Len())
	}
	// Every picture of the shard once: the chunks neither overlap nor
	// skip (the page shuffles within a chunk, so compare as multisets).
	seen := map[string]int{}
	for _, s := range shard.Samples {
		seen[sampleKey(s)]++
	}
	for _, s := range demo.Samples {
		seen[sampleKey(s)]--
	}
	for k, n := range seen {
		if n != 0 {
			t.Fatalf("picture %.16q... stored %d times too few (negative: too many)", k, n)
		}
	}
	var words []string
	b.must(10*time.Second, "words", chromedp.Evaluate(`window.__more`, &words))
	t.Logf("the page said %q", words)
	said := false
	for _, w := range words {
		said = said || strings.HasPrefix(w, "Could not get more example pictures just now. Trying again in 2 seconds")
	}
	if !said {
		t.Errorf("the page did not say that it could not get more pictures and would try again: %q", words)
	}
}

// wholeShard reads the demo shard the coordinator of o serves whole
// (images and labels, decoded as the page decodes them).
func wholeShard(t *testing.T, o *onePage, code string) dataset.Set {
	t.Helper()
	get := func(part string) []byte {
		req, err := http.NewRequest(http.MethodGet, "http://"+o.coord.addr+"/api/demo/"+part+"?code="+code, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("the shard's %s: %s %v", part, resp.Status, err)
		}
		return b
	}
	s, err := local.Decode("demo", get("images"), get("labels"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sampleKey identifies a sample by its label and pixels.
func sampleKey(s dataset.Sample) string {
	var b strings.Builder
	b.WriteByte(byte(s.Label))
	for _, x := range s.X {
		b.WriteByte(byte(math.Round(float64(x) * 255)))
	}
	return b.String()
}
