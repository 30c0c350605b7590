//go:build !linux

package cputime

import "time"

// start anchors Now: time.Since reads the monotonic clock (performance.now
// under node, microseconds), where time.Now().UnixNano would read the
// wall clock (milliseconds in wasm).
var start = time.Now()

// Now is monotonic wall time where no thread CPU clock is read
// (WebAssembly under node, other systems).
func Now() int64 { return time.Since(start).Nanoseconds() }

// Name says what Now measures, for benchmark metric names.
const Name = "wall"
