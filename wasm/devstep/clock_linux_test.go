//go:build linux

package devstep

import "browserfl/internal/cputime"

// cpuNow is the calling thread's CPU time in ns (the caller locks its OS
// thread).
func cpuNow() int64 { return cputime.Thread() }
