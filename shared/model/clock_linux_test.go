//go:build linux

package model

import "browserfl/internal/cputime"

// clockNow is the benchmarks' clock: the calling thread's CPU time on
// Linux (callers lock their OS thread), wall time elsewhere.
func clockNow() int64 { return cputime.Thread() }
