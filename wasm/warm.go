//go:build js && wasm

package main

import (
	"context"

	"browserfl/wasm/devstep"
	"browserfl/wasm/jsw"
)

// warmSteps and warmBatch size the worker's JIT warm-up: V8 first runs
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

// warmUp runs the warm-up; it blocks (call it on its own goroutine).
func warmUp(ctx context.Context, p *port) {
	d, err := devstep.NewSized(warmBatch)
	if err != nil {
		return
	}
	for i := 0; i < warmSteps; i++ {
		if jsw.Yield(ctx) != nil || d.Step() != nil {
			return
		}
	}
	p.mark("fl-warm")
}
