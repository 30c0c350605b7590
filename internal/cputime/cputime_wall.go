//go:build !(js && wasm) && !linux

package cputime

// CPU is wall time here (thread CPU time is read on Linux only).
func CPU() int64 { return Now() }

// Process is wall time here.
func Process() int64 { return Now() }
