package devstep

import (
	mrand "math/rand/v2"
	"runtime"
	"testing"

	"browserfl/shared/plan"
)

// BenchmarkFeaturesCPU times the scattering features of one 28 x 28
// picture (plan.Features.Picture, what a device computes for each of its
// pictures before a feature session and the page for a drawing) in CPU
// time, natively and under node as BenchmarkStepCPU does, interleaved
// with the baseline, one device step (b = 64) of the default session:
// each iteration times one picture, then one step. It reports both and
// their ratio (cpu-ms/picture, cpu-ms/step, steps/picture), so the
// figure holds on a busy machine (make bench-wasm prints both sides).
func BenchmarkFeaturesCPU(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f, err := plan.NewFeatures(plan.FeaturesScatter)
	if err != nil {
		b.Fatal(err)
	}
	d, err := New()
	if err != nil {
		b.Fatal(err)
	}
	rng := mrand.New(mrand.NewPCG(7, 8))
	pics := make([][]float32, 16)
	for i := range pics {
		pics[i] = make([]float32, f.Inputs())
		for k := range pics[i] {
			pics[i][k] = rng.Float32()
		}
	}
	for i := 0; i < 50; i++ { // warm-up (V8's optimising tier)
		if _, err := f.Picture(pics[i%len(pics)]); err != nil {
			b.Fatal(err)
		}
		if err := d.Step(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var pic, step int64
	for i := 0; i < b.N; i++ {
		t0 := cpuNow()
		if _, err := f.Picture(pics[i%len(pics)]); err != nil {
			b.Fatal(err)
		}
		t1 := cpuNow()
		if err := d.Step(); err != nil {
			b.Fatal(err)
		}
		pic, step = pic+t1-t0, step+cpuNow()-t1
	}
	b.ReportMetric(float64(pic)/float64(b.N)/1e6, "cpu-ms/picture")
	b.ReportMetric(float64(step)/float64(b.N)/1e6, "cpu-ms/step")
	b.ReportMetric(float64(pic)/float64(step), "steps/picture")
}
