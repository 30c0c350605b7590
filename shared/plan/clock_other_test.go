//go:build !(js && wasm) && !linux

package plan

import "browserfl/internal/cputime"

// cpuNow is wall time here (thread CPU time is read on Linux only).
func cpuNow() int64 { return cputime.Now() }

// processCPU is wall time here.
func processCPU() int64 { return cputime.Now() }
