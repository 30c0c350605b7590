// Package cputime reads the calling thread's CPU time, for benchmarks that
// compare variants interleaved in one process on a shared machine (wall
// time counts the other jobs; thread CPU time does not). Linux only; the
// caller locks its OS thread (runtime.LockOSThread) around the readings.
package cputime
