//go:build !(js && wasm)

package secagg

import "browserfl/internal/cputime"

// cpuNow is the calling thread's CPU time in ns on Linux (the caller
// locks its OS thread), wall time elsewhere.
func cpuNow() int64 { return cputime.Now() }
