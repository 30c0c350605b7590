package secagg

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine they started is
// still running when they end (go.uber.org/goleak). Under js/wasm (the
// page's build, make test-wasm-features) the Go runtime's own goroutine
// for calls from JavaScript, runtime.handleEvent, is parked whenever
// goleak looks: it is the runtime's, not the package's, so it is ignored
// (natively there is no such goroutine).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("runtime.handleEvent"))
}
