package devstep

import (
	"runtime"
	"testing"
)

// BenchmarkStep is the native side of the wasm-vs-native comparison (the
// browser side is BenchmarkDeviceStepWasm in e2e).
func BenchmarkStep(b *testing.B) {
	d, err := New()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Step(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepCPU times Step in CPU time after 100 warm-up steps (V8
// moves hot WebAssembly to its optimising tier after a while): natively
// the thread's CPU time, under node (GOOS=js GOARCH=wasm, -exec
// go_js_wasm_exec) the node process's. CPU time, unlike wall time, does
// not count the other jobs of a busy machine, so the two figures can be
// divided even when taken minutes apart: make bench-wasm prints the ratio.
func BenchmarkStepCPU(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d, err := New()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := d.Step(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	t0 := cpuNow()
	for i := 0; i < b.N; i++ {
		if err := d.Step(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuNow()-t0)/float64(b.N)/1e6, "cpu-ms/step")
}

func TestStepRuns(t *testing.T) {
	d, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := d.Step(); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	if d.t != 3 {
		t.Fatalf("ran %d rounds, want 3", d.t)
	}
}
