//go:build js && wasm

package warm

import (
	"context"

	"browserfl/wasm/devstep"
	"browserfl/wasm/jsw"
)

// warmSteps and warmBatch size the JIT warm-up: V8 first runs
// WebAssembly with its baseline compiler and replaces hot functions with
// optimised code only after they have run for a while; measured in
// headless Chromium, the first round of the default session then takes
// 300-500 ms against 20-60 ms later. Running the same device code on
// synthetic data in small pieces (4 samples, a sixteenth of a round, with
// a browser turn after each) while the person reads the consent screen
// moves that cost out of the first round and never blocks the page for
// long. Nothing of it is stored or sent.
const (
	warmSteps = 24
	warmBatch = 4
)

// Up runs the warm-up, then calls mark("fl-warm"); it blocks (call it on
// its own goroutine) and gives up when ctx is done.
func Up(ctx context.Context, mark func(name string)) {
	d, err := devstep.NewSized(warmBatch)
	if err != nil {
		return
	}
	for i := 0; i < warmSteps; i++ {
		if jsw.Yield(ctx) != nil || d.Step() != nil {
			return
		}
	}
	mark("fl-warm")
}
