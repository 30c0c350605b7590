//go:build linux

package plan

import (
	"syscall"

	"browserfl/internal/cputime"
)

// cpuNow is the calling thread's CPU time in ns (the caller locks its OS
// thread).
func cpuNow() int64 { return cputime.Thread() }

// processCPU is the process's CPU time in ns, user and system, every
// thread: for work spread over goroutines.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
