package model

import (
	"math/rand/v2"

	"browserfl/shared/dataset"
)

// newRand returns a seeded generator; every randomized test uses a fixed
// seed so failures reproduce.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

// randParams returns d parameters uniform on [-scale, scale].
func randParams(rng *rand.Rand, d int, scale float64) []float64 {
	w := make([]float64, d)
	for i := range w {
		w[i] = scale * (2*rng.Float64() - 1)
	}
	return w
}

// randSample returns a sample whose features are, independently, 0 with
// probability 1-density and uniform on (0, 1] otherwise.
func randSample(rng *rand.Rand, features, classes int, density float64) dataset.Sample {
	x := make([]float32, features)
	for i := range x {
		if rng.Float64() < density {
			x[i] = float32(1 - rng.Float64())
		}
	}
	return dataset.Sample{X: x, Label: rng.IntN(classes)}
}
