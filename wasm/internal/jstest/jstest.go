//go:build js && wasm

// Package jstest holds what the page's packages' tests under node
// (make test-wasm-features) share: goleak's view of the js/wasm runtime
// and a look at the running goroutines.
package jstest

import (
	"runtime"
	"strings"

	"go.uber.org/goleak"
)

// IgnoreRuntime ignores the Go runtime's own goroutine for a call from
// JavaScript into Go (runtime.handleEvent, js/wasm only): it stays parked
// until every other goroutine is idle, so it is there whenever goleak
// looks from inside such a call (an event handler, a promise's callback,
// a timer); it is the runtime's, not ours.
func IgnoreRuntime() goleak.Option { return goleak.IgnoreAnyFunction("runtime.handleEvent") }

// Running reports whether a goroutine is running (or blocked in) fn,
// read from every goroutine's stack at once (goleak.Find would retry
// for a second or more before saying yes).
func Running(fn string) bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), fn+".")
}
