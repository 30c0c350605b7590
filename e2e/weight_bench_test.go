package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"browserfl/internal/loopback"
	"browserfl/wasm/local"
)

// BenchmarkJoinThrottled times one student's join and reload on a
// throttled phone, as docs/browser.md measures them: CPU 4x slower, 150 ms
// latency, 1.6 Mbit/s down and 0.75 Mbit/s up (the page's own requests;
// Chromium applies it per target, so the worker's few API calls are not
// slowed). It prints, for the first visit (bare address -> code -> own
// picture files -> lobby) and for a reload in the lobby, the seconds to
// the program's first screen (the fl-first-render mark) and to the lobby,
// and the words the page showed meanwhile. Run with
//
//	go test ./e2e/ -run '^$' -bench JoinThrottled -benchtime 1x
func BenchmarkJoinThrottled(b *testing.B) {
	bin := coordinatorWithPage(b, pageBuild(b))
	const code = "SLOWPHONE"
	logf, err := os.CreateTemp("", "browserfl-e2e-throttled-*.log")
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	few, err := fashionTest(b).Take(64)
	if err != nil {
		b.Fatal(err)
	}
	im, lab, err := local.Encode(few)
	if err != nil {
		b.Fatal(err)
	}
	fileDir := b.TempDir()
	files := []string{filepath.Join(fileDir, "my-images-idx3-ubyte"), filepath.Join(fileDir, "my-labels-idx1-ubyte")}
	if os.WriteFile(files[0], im, 0o644) != nil || os.WriteFile(files[1], lab, 0o644) != nil {
		b.Fatal("writing the picture files")
	}
	for i := 0; i < b.N; i++ {
		coord := &process{t: b, bin: bin, addr: loopback.Addr(b), dataDir: b.TempDir(), log: logf, args: []string{
			"-lobby", "-join-code", code, "-dataset", fashionDir, "-demo-shards", "2",
		}}
		coord.start()
		br := launch(b, b.TempDir())
		br.must(20*time.Second, "throttle",
			chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
			emulation.SetCPUThrottlingRate(4),
			network.EmulateNetworkConditions(false, 150, 1.6e6/8, 0.75e6/8),
			addBootWords())
		base := "http://" + coord.addr
		start := time.Now()
		br.must(10*time.Minute, "first visit to the lobby", append(joinSteps(base, code, "Slow", files),
			chromedp.WaitVisible("#lobby", chromedp.ByID))...)
		first := time.Since(start)
		render, _ := br.mark("fl-first-render")
		var words []string
		br.must(10*time.Second, "words", chromedp.Evaluate(`window.__boot`, &words))
		b.Logf("first visit: first screen %.1f s after navigation, lobby after %.1f s (with typing); the page said %s",
			render/1000, first.Seconds(), brief(words))
		start = time.Now()
		br.must(10*time.Minute, "reload to the lobby", chromedp.Reload(), chromedp.WaitVisible("#lobby", chromedp.ByID))
		reload := time.Since(start)
		render, _ = br.mark("fl-first-render")
		br.must(10*time.Second, "words", chromedp.Evaluate(`window.__boot`, &words))
		b.Logf("reload: first screen %.1f s after navigation, lobby after %.1f s; the page said %s",
			render/1000, reload.Seconds(), brief(words))
		br.close()
		coord.stop()
	}
}

// brief shows a long list of words by its first three and last two.
func brief(words []string) string {
	if len(words) <= 6 {
		return fmt.Sprintf("%q", words)
	}
	return fmt.Sprintf("%q ... (%d more) ... %q", words[:3], len(words)-5, words[len(words)-2:])
}
