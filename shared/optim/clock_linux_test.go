//go:build linux

package optim

import "browserfl/internal/cputime"

// clockNow is the benchmarks' clock: the calling thread's CPU time on
// Linux (callers lock their OS thread), wall time elsewhere (clock_other_test.go).
func clockNow() int64 { return cputime.Thread() }

const clockName = "cpu"
