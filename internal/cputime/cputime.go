// Package cputime reads the calling thread's CPU time, for benchmarks that
// compare variants interleaved in one process on a shared machine (wall
// time counts the other jobs; thread CPU time does not). Thread is Linux
// only; Now and Interleave fall back to monotonic wall time elsewhere
// (WebAssembly under node). Callers of Thread lock their OS thread
// (runtime.LockOSThread) around the readings; Interleave does so itself.
package cputime

import (
	"runtime"
	"testing"
)

// Interleave runs each of fs once per iteration, in turn, for b.N
// iterations on a locked OS thread, and returns each one's mean time per
// call in ns by Now (thread CPU time on Linux, wall time elsewhere). A
// ratio of two of its means compares variants timed in the same
// iterations, so load that comes and goes hits both sides alike.
func Interleave(b *testing.B, fs ...func()) []float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tot := make([]int64, len(fs))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, f := range fs {
			t0 := Now()
			f()
			tot[k] += Now() - t0
		}
	}
	b.StopTimer()
	out := make([]float64, len(fs))
	for k, t := range tot {
		out[k] = float64(t) / float64(b.N)
	}
	return out
}
