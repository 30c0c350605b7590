//go:build linux

package cputime

import (
	"syscall"
	"unsafe"
)

// Thread returns the calling thread's CPU time in nanoseconds
// (clock_gettime(CLOCK_THREAD_CPUTIME_ID)), 0 if the call fails.
func Thread() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return ts.Nano()
}

// Now is the benchmarks' clock: the calling thread's CPU time (Thread).
func Now() int64 { return Thread() }

// Name says what Now measures, for benchmark metric names.
const Name = "cpu"

// CPU is the calling thread's CPU time in ns (Thread; the caller locks
// its OS thread): under node, the process's (cputime_js.go).
func CPU() int64 { return Thread() }

// Process is the process's CPU time in ns, user and system, every
// thread: for work spread over goroutines.
func Process() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
