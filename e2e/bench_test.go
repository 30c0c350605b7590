package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/wasm/devstep"
)

// The wasm-vs-native comparison, in one command:
//
//	go test -run '^$' -bench DeviceStep -benchtime 40x ./e2e
//
// All three time devstep.Step (one round of the default session's device
// work) on the same inputs; the wasm side runs in headless Chromium (one
// page). BenchmarkDeviceStepRatio interleaves the two in chunks of 10
// steps so both see the same machine load (the two cores here are shared)
// and reports the throughput ratio wasm/native directly.

// warmSteps is the warm-up of both sides (see BenchmarkDeviceStepWasm).
const warmSteps = 100

func BenchmarkDeviceStepNative(b *testing.B) {
	d, err := devstep.New()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < warmSteps; i++ { // the same warm-up as the wasm side
		d.Step()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Step(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDeviceStepWasm(b *testing.B) {
	webDir := pageBuild(b)
	srv := serve(b, pageHandler(webDir, nil))
	br := launch(b, b.TempDir())
	defer br.close()
	if err := br.run(60*time.Second,
		chromedp.Navigate(srv.URL+"/web/bench.html"),
		chromedp.Poll(`typeof window.flBench === "function"`, nil, chromedp.WithPollingTimeout(50*time.Second)),
	); err != nil {
		b.Fatalf("bench page: %v", err)
	}
	// Warm-up: V8 first runs WebAssembly with its baseline compiler
	// (Liftoff) and swaps in optimised code (TurboFan) after a while; the
	// first steps run about 3x slower. 100 steps (about 1-3 s) reach the
	// optimised tier; the native side warms up with the same steps.
	var warm any
	if err := br.run(2*time.Minute, chromedp.Evaluate(fmt.Sprintf(`flBench(%d)`, warmSteps), &warm)); err != nil {
		b.Fatal(err)
	}
	if s, ok := warm.(string); ok {
		b.Fatal(s)
	}
	b.ResetTimer()
	var ms any
	// One call runs all b.N steps inside the page; the CDP round trip
	// (about a millisecond) is amortised over b.N.
	if err := br.run(10*time.Minute, chromedp.Evaluate(fmt.Sprintf(`flBench(%d)`, b.N), &ms)); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	v, ok := ms.(float64)
	if !ok {
		b.Fatalf("flBench: %v", ms)
	}
	b.ReportMetric(v/float64(b.N), "page-ms/step")
	if fi, err := os.Stat(filepath.Join(webDir, "app.wasm")); err == nil {
		b.ReportMetric(float64(fi.Size())/1e6, "app-MB")
	}
}

// BenchmarkDeviceStepRatio alternates 10 native steps and 10 steps in the
// page per iteration and reports each side's time per step and the
// throughput ratio (native time / wasm time; 1 means as fast as native).
func BenchmarkDeviceStepRatio(b *testing.B) {
	webDir := pageBuild(b)
	srv := serve(b, pageHandler(webDir, nil))
	br := launch(b, b.TempDir())
	defer br.close()
	if err := br.run(60*time.Second,
		chromedp.Navigate(srv.URL+"/web/bench.html"),
		chromedp.Poll(`typeof window.flBench === "function"`, nil, chromedp.WithPollingTimeout(50*time.Second)),
	); err != nil {
		b.Fatalf("bench page: %v", err)
	}
	d, err := devstep.New()
	if err != nil {
		b.Fatal(err)
	}
	pageSteps := func(n int) float64 {
		var ms any
		if err := br.run(5*time.Minute, chromedp.Evaluate(fmt.Sprintf(`flBench(%d)`, n), &ms)); err != nil {
			b.Fatal(err)
		}
		v, ok := ms.(float64)
		if !ok {
			b.Fatalf("flBench: %v", ms)
		}
		return v
	}
	pageSteps(warmSteps)
	for i := 0; i < warmSteps; i++ {
		d.Step()
	}
	const chunk = 10
	var nativeMS, wasmMS float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		for k := 0; k < chunk; k++ {
			if err := d.Step(); err != nil {
				b.Fatal(err)
			}
		}
		nativeMS += float64(time.Since(t0).Microseconds()) / 1000
		wasmMS += pageSteps(chunk)
	}
	b.StopTimer()
	steps := float64(b.N * chunk)
	b.ReportMetric(nativeMS/steps, "native-ms/step")
	b.ReportMetric(wasmMS/steps, "wasm-ms/step")
	b.ReportMetric(nativeMS/wasmMS, "wasm/native-throughput")
}
