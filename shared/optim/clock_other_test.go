//go:build !linux

package optim

import "time"

// clockStart anchors clockNow: time.Since reads the monotonic clock
// (performance.now under node, microseconds), where time.Now().UnixNano
// would read the wall clock (milliseconds in wasm).
var clockStart = time.Now()

// clockNow is monotonic wall time where no thread CPU clock is read (wasm
// under node, other systems).
func clockNow() int64 { return time.Since(clockStart).Nanoseconds() }

const clockName = "wall"
