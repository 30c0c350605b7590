//go:build js && wasm

// Command bench is a page that times devstep.Step, the browser device's
// per-round work, in the browser. It defines window.flBench(n), which
// runs n steps and returns their total time in milliseconds (or a string
// starting with "error:"). The e2e benchmark BenchmarkDeviceStepWasm
// loads it in headless Chromium; devstep.BenchmarkStep is the native twin.
package main

import (
	"syscall/js"

	"browserfl/wasm/devstep"
	"browserfl/wasm/jsw"
)

func main() {
	d, err := devstep.New()
	fn := js.FuncOf(func(_ js.Value, args []js.Value) any {
		if err != nil {
			return "error: " + err.Error()
		}
		n := 1
		if len(args) > 0 {
			n = args[0].Int()
		}
		t0 := jsw.Now()
		for i := 0; i < n; i++ {
			if err := d.Step(); err != nil {
				return "error: " + err.Error()
			}
		}
		return jsw.Now() - t0
	})
	js.Global().Set("flBench", fn)
	jsw.Mark("fl-bench-ready")
	select {} // keep the callback alive
}
