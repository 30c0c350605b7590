package mechanism_test

import (
	"crypto/rand"
	"fmt"

	"browserfl/shared/mechanism"
)

func Example() {
	// A device clips its update, adds noise from a seeded stream (in the
	// product the seed comes from crypto/rand), and compresses it.
	s := []float64{3, 4, 0, 0}
	mechanism.Clip(s, 1) // ||s|| = 5 -> 1
	var seed mechanism.Seed
	noise := make([]float64, len(s))
	mechanism.NoiseVector(noise, seed, 0.1, nil)
	for i := range s {
		s[i] += noise[i]
	}
	spec, err := mechanism.ParseSpec("randk:0.5")
	if err != nil {
		panic(err)
	}
	dec := make([]float64, len(s))
	rng := mechanism.NewStream(seed, mechanism.PurposeCompress)
	payload, err := spec.C.Compress(nil, dec, s, rng)
	if err != nil {
		panic(err)
	}
	got := make([]float64, len(s))
	if err := mechanism.Decode(got, payload); err != nil {
		panic(err)
	}
	fmt.Println(len(payload) == spec.C.Size(len(s)), spec.C.Omega(len(s)))
	// Output: true 1
}

func ExampleFreshStream() {
	// Product noise: a fresh seed from crypto/rand per release; keeping the
	// 32-byte seed is enough to regenerate the vector later.
	s, seed, err := mechanism.FreshStream(rand.Reader, mechanism.PurposeNoise)
	if err != nil {
		panic(err)
	}
	y := make([]float64, 5)
	s.FillNormal(y, 2)
	again := make([]float64, 5)
	mechanism.NoiseVector(again, seed, 2, nil)
	fmt.Println(y[0] == again[0] && y[4] == again[4])
	// Output: true
}
