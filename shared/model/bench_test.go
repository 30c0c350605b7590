package model

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"browserfl/internal/cputime"
	"browserfl/shared/dataset"
)

// baselineSink keeps the baseline loop from being optimised away.
var baselineSink float64

// baseline is a plain loop that reads the bytes Grad must read: every
// parameter (d float64) against the 784 float32 features, as one dot
// product over w with the features repeated. It writes nothing, so Grad
// (which also writes d float64) cannot be faster than it.
func baseline(w []float64, x []float32) float64 {
	s := 0.0
	for len(w) > 0 {
		n := min(len(w), len(x))
		r := w[:n]
		for i, v := range x[:n] {
			s += r[i] * float64(v)
		}
		w = w[n:]
	}
	return s
}

// ratioTo returns the median over 15 rounds of time(f)/time(g), each round
// timing n/15 calls (at least 8) of f and then of g back to back, in the
// thread's CPU time (cputime.Now, on a locked OS thread). It runs after the
// timed loop: on a shared machine, load changes between two separate
// benchmarks would swamp the ratio, and the median of interleaved rounds
// resists them.
func ratioTo(n int, f, g func()) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const rounds = 15
	per := max(n/rounds, 8)
	r := make([]float64, rounds)
	for k := range r {
		t0 := cputime.Now()
		for i := 0; i < per; i++ {
			f()
		}
		t1 := cputime.Now()
		for i := 0; i < per; i++ {
			g()
		}
		r[k] = float64(t1-t0) / float64(cputime.Now()-t1)
	}
	slices.Sort(r)
	return r[rounds/2]
}

// Densities: MNIST images are about 19% non-zero, Fashion-MNIST about 50%
// (measured on /usr/share/datasets/fashion-mnist train images: 0.496), and
// 1 is the worst case.
var benchDensities = []float64{0.19, 0.5, 1}

func benchModels() []Model { return []Model{NewLogReg(784, 10), NewMLP(784, 64, 10)} }

func benchSamples(density float64) []dataset.Sample {
	rng := newRand(99)
	s := make([]dataset.Sample, 64)
	for i := range s {
		s[i] = randSample(rng, 784, 10, density)
	}
	return s
}

// BenchmarkGrad measures one per-sample gradient at the papers' sizes and
// reports x-baseline, its time over the baseline loop's.
func BenchmarkGrad(b *testing.B) {
	for _, m := range benchModels() {
		for _, density := range benchDensities {
			b.Run(fmt.Sprintf("%s/d=%d/density=%v", m.Name(), m.Dim(), density), func(b *testing.B) {
				w := randParams(newRand(5), m.Dim(), 0.05)
				dst := make([]float64, m.Dim())
				samples := benchSamples(density)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					m.Grad(dst, w, samples[i%len(samples)])
				}
				b.StopTimer()
				k := 0
				b.ReportMetric(ratioTo(b.N,
					func() { m.Grad(dst, w, samples[k%len(samples)]); k++ },
					func() { baselineSink += baseline(w, samples[0].X) }), "x-baseline")
			})
		}
	}
}

// BenchmarkGradDiff measures the device correction a*grad f(wa) -
// b*grad f(wb) on one sample; x-twograds compares it with two Grad calls
// plus the combination, measured in the same run.
func BenchmarkGradDiff(b *testing.B) {
	for _, m := range benchModels() {
		for _, density := range benchDensities {
			b.Run(fmt.Sprintf("%s/d=%d/density=%v", m.Name(), m.Dim(), density), func(b *testing.B) {
				rng := newRand(6)
				wa := randParams(rng, m.Dim(), 0.05)
				wb := randParams(rng, m.Dim(), 0.05)
				dst := make([]float64, m.Dim())
				tmp := make([]float64, m.Dim())
				samples := benchSamples(density)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					GradDiff(m, dst, 7, wa, 6, wb, samples[i%len(samples)])
				}
				b.StopTimer()
				k := 0
				diff := func() { GradDiff(m, dst, 7, wa, 6, wb, samples[k%len(samples)]); k++ }
				two := func() {
					s := samples[k%len(samples)]
					m.Grad(dst, wa, s)
					m.Grad(tmp, wb, s)
					for j, v := range tmp {
						dst[j] = 7*dst[j] - 6*v
					}
					k++
				}
				b.ReportMetric(ratioTo(b.N, diff, two), "x-twograds")
				b.ReportMetric(ratioTo(b.N, diff, func() { baselineSink += baseline(wa, samples[0].X) }), "x-baseline")
			})
		}
	}
}

// BenchmarkBaseline is the baseline loop on its own, for reference.
func BenchmarkBaseline(b *testing.B) {
	for _, m := range benchModels() {
		b.Run(fmt.Sprintf("d=%d", m.Dim()), func(b *testing.B) {
			w := randParams(newRand(5), m.Dim(), 0.05)
			x := benchSamples(1)[0].X
			for i := 0; i < b.N; i++ {
				baselineSink += baseline(w, x)
			}
		})
	}
}

// BenchmarkEvaluate measures one forward pass (loss and prediction).
func BenchmarkEvaluate(b *testing.B) {
	for _, m := range benchModels() {
		b.Run(m.Name(), func(b *testing.B) {
			w := randParams(newRand(5), m.Dim(), 0.05)
			samples := benchSamples(0.19)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				Evaluate(m, w, samples[i%len(samples):i%len(samples)+1])
			}
		})
	}
}
