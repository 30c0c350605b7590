//go:build !linux

package mechanism

import "time"

// clockStart anchors clockNow: time.Since reads the monotonic clock
// (performance.now under node, microseconds).
var clockStart = time.Now()

// clockNow is monotonic wall time where no thread CPU clock is read (wasm
// under node, other systems).
func clockNow() int64 { return time.Since(clockStart).Nanoseconds() }
