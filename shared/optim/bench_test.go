package optim

import (
	"fmt"
	"testing"
	"time"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
)

// MNIST-shaped synthetic samples: 784 features in [0, 1], 10 classes, so
// logreg has d = 7,850 as in the papers' experiments.
func mnistLike(rng *mechanism.Stream, n int) []dataset.Sample {
	out := make([]dataset.Sample, n)
	for i := range out {
		x := make([]float32, 784)
		for j := range x {
			if rng.Intn(5) == 0 {
				x[j] = float32(rng.Float64())
			}
		}
		out[i] = dataset.Sample{X: x, Label: rng.Intn(10)}
	}
	return out
}

func table1Params(alg string, b int) Params {
	return Params{Algorithm: alg, Model: "logreg", Features: 784, Classes: 10,
		M: 100, Cohort: 50, Rounds: 1200, Batch: b, Clip: 118.1, Eta: 1e-4, Diameter: 0.1, Rho: 8}
}

// plainLoop is the baseline, measured in the same run: ns per
// multiply-add pass over n float64s, the memory a step must at least touch
// (averaged over passes for at least 20 ms).
func plainLoop(n int) float64 {
	v := make([]float64, n)
	w := make([]float64, n)
	passes := 0
	start := time.Now()
	for time.Since(start) < 20*time.Millisecond {
		for k := 0; k < 64; k++ {
			for j := range v {
				v[j] += 0.5 * w[j]
			}
		}
		passes += 64
	}
	return float64(time.Since(start).Nanoseconds()) / float64(passes)
}

// BenchmarkDeviceStep measures one "nc" device Prepare+Commit at d = 7,850
// (b gradient corrections, clipping, ChaCha20 Gaussian noise, dense float32
// encoding) and reports its ratio to a plain pass over b*d float64s.
func BenchmarkDeviceStep(b *testing.B) {
	for _, bs := range []int{1, 32} {
		for _, comp := range []string{"none", "ef+randk:0.05"} {
			b.Run(fmt.Sprintf("b=%d/%s", bs, comp), func(b *testing.B) {
				p := table1Params("nc", bs)
				p.Rounds = 1 << 30
				p.Compressor = comp
				m, _ := model.New("logreg", 784, 10)
				dv, err := NewDevice(p, m, mechanism.NewStream(testSeed(1), 0))
				if err != nil {
					b.Fatal(err)
				}
				rng := mechanism.NewStream(testSeed(2), 0)
				data := mnistLike(rng, bs)
				x := make([]float64, m.Dim())
				xp := make([]float64, m.Dim())
				rng.FillNormal(x, 0.01)
				rng.FillNormal(xp, 0.01)
				base := plainLoop(bs * m.Dim())
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := dv.Prepare(Round{T: i + 1, X: x, XPrev: xp}, data); err != nil {
						b.Fatal(err)
					}
					dv.Commit(i + 1)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/base, "x-plain")
			})
		}
	}
}

// BenchmarkServerApply measures server aggregation per message (decode
// and sum of one dense float32 update at d = 7,850, plus 1/m of the step)
// and its ratio to a plain pass over d float64s.
func BenchmarkServerApply(b *testing.B) {
	p := table1Params("nc", 1)
	p.Rounds = 1 << 30
	d := 7850
	srv, _ := NewServer(p, make([]float64, d), mechanism.NewStream(testSeed(1), 0))
	v := make([]float64, d)
	mechanism.NewStream(testSeed(3), 0).FillNormal(v, 1)
	payload, _ := mechanism.Dense32{}.Compress(nil, make([]float64, d), v, nil)
	ups := make([]Update, p.Cohort)
	base := plainLoop(d)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := srv.Next().T
		for j := range ups {
			ups[j] = Update{T: t, Payload: payload}
		}
		if err := srv.Apply(t, ups); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	perMsg := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(p.Cohort)
	b.ReportMetric(perMsg, "ns/msg")
	b.ReportMetric(perMsg/base, "x-plain")
}

// BenchmarkTable1Round runs one round of the NC paper's Table-1 setting
// (M = 100, m = 50, b = 1, d = 7,850, "nc") in-process and reports the
// extrapolated time of its T = 1,200 rounds.
func BenchmarkTable1Round(b *testing.B) {
	p := table1Params("nc", 1)
	p.Rounds = 1 << 30
	m, _ := model.New("logreg", 784, 10)
	seeds := mechanism.NewStream(testSeed(1), mechanism.PurposeSeeds)
	srv, _ := NewServer(p, make([]float64, m.Dim()), seeds)
	rng := mechanism.NewStream(testSeed(2), 0)
	data := mnistLike(rng, 600)
	devs := make([]Device, p.M)
	for i := range devs {
		devs[i], _ = NewDevice(p, m.Clone(), seeds)
	}
	ups := make([]Update, 0, p.Cohort)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := srv.Next()
		ups = ups[:0]
		start := rng.Intn(p.M)
		for k := 0; k < p.Cohort; k++ {
			j := (start + 2*k) % p.M
			u, err := devs[j].Prepare(r, data[(i*p.Cohort+k)%len(data):][:1])
			if err != nil {
				b.Fatal(err)
			}
			ups = append(ups, u)
		}
		if err := srv.Apply(r.T, ups); err != nil {
			b.Fatal(err)
		}
		for k := 0; k < p.Cohort; k++ {
			devs[(start+2*k)%p.M].Commit(r.T)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)*1200/1e9, "s/1200rounds")
}
