//go:build linux

package plausible

import (
	"runtime"
	"testing"

	"browserfl/internal/cputime"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
)

// BenchmarkCheckerVsDecode prices the Checker against what the
// coordinator did to every update before it (decode and norm), in
// per-thread CPU time interleaved in the same iterations: the demo
// session's "nc" (d = 7,850), a dense float32 message of an honest device,
// its history from the start with 50 messages (all six tests run).
func BenchmarkCheckerVsDecode(b *testing.B) {
	const d = 7850
	p := optim.Params{Algorithm: "nc", M: 30, Cohort: 10, Rounds: 200, Batch: 32, Clip: 1, Eta: 0.02, Rho: 1.5}
	c, err := NewChecker(p, d)
	if err != nil {
		b.Fatal(err)
	}
	rng := mechanism.NewStream(testSeed(5), 0)
	x := make([]float64, d)
	rng.FillNormal(x, 0.5)
	dec := make([]float64, d)
	payload, err := mechanism.Dense32{}.Compress(nil, dec, x, nil)
	if err != nil {
		b.Fatal(err)
	}
	h := History{FromStart: true}
	for range 50 {
		h.Ask()
		h.Add(make([]float64, d))
	}
	h.Ask()
	runtime.LockOSThread() // per-thread CPU time: stay on one thread
	defer runtime.UnlockOSThread()
	var tDec, tChk int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := cputime.Thread()
		norm, err := mechanism.DecodeNorm(dec, payload)
		if err != nil {
			b.Fatal(err)
		}
		t1 := cputime.Thread()
		if err := c.Check(dec, norm, &h); err != nil {
			b.Fatal(err)
		}
		t2 := cputime.Thread()
		tDec += t1 - t0
		tChk += t2 - t1
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(tDec)/n, "decode-cpu-ns")
	b.ReportMetric(float64(tChk)/n, "check-cpu-ns")
	b.ReportMetric(float64(tChk)/float64(tDec), "check/decode")
}

// BenchmarkHistoryAdd prices one inclusion's Add at d = 7,850 as the
// coordinator makes it: each iteration adds one of a round's 300 decoded
// updates to another of 3,000 histories, both long out of the cache
// (about 94 MB of float32 sums and 19 MB of updates), in per-thread CPU
// time.
func BenchmarkHistoryAdd(b *testing.B) {
	const d, n, m = 7850, 3000, 300
	hs := make([]History, n)
	xs := make([][]float64, m)
	for j := range xs {
		xs[j] = make([]float64, d)
		for i := range xs[j] {
			xs[j][i] = float64((i+j)%17) - 8
		}
	}
	for i := range hs {
		hs[i].Add(xs[i%m])
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	t0 := cputime.Thread()
	for i := 0; i < b.N; i++ {
		hs[(i*7)%n].Add(xs[(i*13)%m])
	}
	b.ReportMetric(float64(cputime.Thread()-t0)/float64(b.N), "cpu-ns/add")
}
