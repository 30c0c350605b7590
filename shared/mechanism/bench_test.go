package mechanism

import (
	"fmt"
	"testing"

	"browserfl/internal/cputime"
)

const benchDim = 7850

// BenchmarkNoise measures one Gaussian vector at d = 7,850 from a fresh
// ChaCha20 stream; BenchmarkPlainLoop is the baseline pass over the same
// vector (one multiply-add per coordinate) in the same run.
func BenchmarkNoise(b *testing.B) {
	v := make([]float64, benchDim)
	s := NewStream(seedOf(1), PurposeNoise)
	b.SetBytes(8 * benchDim)
	for i := 0; i < b.N; i++ {
		NoiseVector(v, seedOf(byte(i)), 1, s)
	}
}

func BenchmarkPlainLoop(b *testing.B) {
	v := make([]float64, benchDim)
	w := make([]float64, benchDim)
	b.SetBytes(8 * benchDim)
	for i := 0; i < b.N; i++ {
		for j := range v {
			v[j] += 0.5 * w[j]
		}
	}
}

func BenchmarkCompress(b *testing.B) {
	x := testVector(benchDim, 3)
	dec := make([]float64, benchDim)
	for _, spec := range []string{"none", "randk:0.05", "topk:0.01", "quant:8bit"} {
		c, _ := ParseSpec(spec)
		buf := make([]byte, 0, c.C.Size(benchDim))
		rng := NewStream(seedOf(2), PurposeCompress)
		b.Run(spec, func(b *testing.B) {
			b.SetBytes(8 * benchDim)
			for i := 0; i < b.N; i++ {
				buf, _ = c.C.Compress(buf, dec, x, rng)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	x := testVector(benchDim, 3)
	dec := make([]float64, benchDim)
	c, _ := ParseSpec("none")
	p, _ := c.C.Compress(nil, dec, x, nil)
	b.SetBytes(int64(len(p)))
	for i := 0; i < b.N; i++ {
		if err := Decode(dec, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeNorm compares DecodeNorm with the Decode and Norm it
// replaces in the coordinator's update validation, interleaved in thread
// CPU time (go test -run '^$' -bench DecodeNorm ./shared/mechanism).
func BenchmarkDecodeNorm(b *testing.B) {
	x := testVector(benchDim, 3)
	dec := make([]float64, benchDim)
	c, _ := ParseSpec("none")
	p, _ := c.C.Compress(nil, dec, x, nil)
	var sink float64
	ns := cputime.Interleave(b,
		func() {
			if err := Decode(dec, p); err != nil {
				b.Fatal(err)
			}
			sink += Norm(dec)
		},
		func() {
			n, err := DecodeNorm(dec, p)
			if err != nil {
				b.Fatal(err)
			}
			sink += n
		})
	b.ReportMetric(ns[0]/1e3, "us-decode+norm")
	b.ReportMetric(ns[1]/1e3, "us-decodenorm")
	b.ReportMetric(ns[0]/ns[1], "x-faster")
	_ = sink
}

// BenchmarkDiscreteNoise measures one discrete Gaussian vector at d =
// 7,850 (integer sigma, grid units) from a fresh ChaCha20 stream, next to
// BenchmarkNoise (the continuous ziggurat) in the same run.
func BenchmarkDiscreteNoise(b *testing.B) {
	for _, sigma := range []int64{3, 1000, 1 << 24} {
		b.Run(fmt.Sprintf("sigma=%d", sigma), func(b *testing.B) {
			v := make([]int64, benchDim)
			s := NewStream(seedOf(1), PurposeNoise)
			b.SetBytes(8 * benchDim)
			for i := 0; i < b.N; i++ {
				DiscreteNoiseVector(v, seedOf(byte(i)), sigma, s)
			}
		})
	}
}
