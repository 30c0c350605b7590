package e2e

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"browserfl/shared/dataset"
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
// 20 rounds of b = 64 stores the first 16 rounds' pictures before it
// starts, and fetches the rest while it trains; the first fetch of the
// rest fails (503), and the page says so in plain words, tries again,
// and answers all 20 rounds with every picture of its shard, none twice.
// A page that did not fetch the rest, or gave up after a failure, would
// run out after round 16 and the session would not end.
func TestBrowserDemoChunks(t *testing.T) {
	webDir := pageBuild(t)
	all := fashionTest(t)
	p := e2eSession(1)
	shard, err := all.Take(p.Rounds * p.Batch)
	if err != nil {
		t.Fatal(err)
	}
	const code = "CHUNKS"
	sc := newScripted(t, p, code, []dataset.Set{shard}, all.Samples[9000:9200], lies{})
	// One failed chunk (images), and a pause between rounds so the retry
	// (2 s after the failure) comes within the 8 rounds the page keeps in
	// hand, as a real session's round gap and deadlines give it.
	sc.failChunks, sc.gap = 1, time.Second
	srv := serve(t, pageHandler(webDir, sc.handler()))
	b := launch(t, t.TempDir())
	defer b.close()
	b.must(10*time.Second, "observer", chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(moreWords).Do(ctx)
		return err
	}))
	openPage(t, b, srv.URL+"/?code="+code, "")
	stored := pageData(t, b, code, "demo").Len()
	if want := 16 * p.Batch; stored != want {
		t.Errorf("before training: %d example pictures stored, want the first 16 rounds' (%d)", stored, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := sc.run(ctx); err != nil {
		t.Fatalf("session: %v\npage text: %s", err, b.text())
	}
	sc.mu.Lock()
	fails, ok, updates := sc.chunkFails, sc.chunkOK, len(sc.sent)
	sc.mu.Unlock()
	if fails != 1 || ok < 2 {
		t.Errorf("chunk requests after the first: %d failed, %d served; want 1 failed, then images and labels", fails, ok)
	}
	if updates != p.Rounds {
		t.Errorf("%d updates for %d rounds", updates, p.Rounds)
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

// sampleKey identifies a sample by its label and pixels.
func sampleKey(s dataset.Sample) string {
	var b strings.Builder
	b.WriteByte(byte(s.Label))
	for _, x := range s.X {
		b.WriteByte(byte(math.Round(float64(x) * 255)))
	}
	return b.String()
}
