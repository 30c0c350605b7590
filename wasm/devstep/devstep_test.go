package devstep

import "testing"

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
