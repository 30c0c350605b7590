package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/optim"
)

// blobs returns n samples of a 3-class problem with 8 features in [0, 1]:
// in class c the features j with j%3 == c are near 0.8 and the others near
// 0.2 (uniform spread 0.1), so the classes are linearly separable with a
// wide margin. Fixed seed.
func blobs(n int, seed uint64) dataset.Set {
	r := rand.New(rand.NewPCG(seed, 7))
	s := dataset.Set{Name: "blobs", Features: 8, Classes: 3}
	for i := 0; i < n; i++ {
		c := i % 3
		x := make([]float32, 8)
		for j := range x {
			v := 0.2 + 0.1*(r.Float64()-0.5)
			if j%3 == c {
				v += 0.6
			}
			x[j] = float32(v)
		}
		s.Samples = append(s.Samples, dataset.Sample{X: x, Label: c})
	}
	return s
}

func config(alg string, seed uint64) Config {
	p := optim.Params{Algorithm: alg, Model: "logreg", M: 20, Cohort: 5, Rounds: 60, Batch: 2, Clip: 1, Eta: 0.01}
	switch alg {
	case "nc", "trusted", "noisysgd":
		p.Rho = 20
	case "cdpsgd", "soteria-sgd":
		p.Epsilon, p.Delta = 8, 1e-3
		p.Compressor = "randk:0.5"
	}
	return Config{Params: p, Train: blobs(600, 1), Test: blobs(300, 2),
		Partition: dataset.Scheme{Kind: dataset.SchemeIID}, Seed: seed, EvalEvery: 20}
}

// TestDeterministic checks that a run is a function of its seed: the same
// seed gives bit-identical models and records whatever the parallelism,
// and another seed gives another model.
func TestDeterministic(t *testing.T) {
	for _, alg := range []string{"nc", "trusted", "noisysgd", "cdpsgd", "soteria-sgd", "mu2"} {
		t.Run(alg, func(t *testing.T) {
			c1 := config(alg, 42)
			c1.Workers = 1
			r1, err := Run(context.Background(), c1)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []int{2, 4} {
				c2 := config(alg, 42)
				c2.Workers = w
				r2, err := Run(context.Background(), c2)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(r1.Model, r2.Model) {
					t.Fatalf("workers=%d: same seed, different models", w)
				}
				if len(r1.Records) != len(r2.Records) {
					t.Fatalf("workers=%d: records: %d vs %d", w, len(r1.Records), len(r2.Records))
				}
				for i := range r1.Records {
					a, b := r1.Records[i], r2.Records[i]
					if a.UplinkBytes != b.UplinkBytes || a.MaxRho != b.MaxRho || !same(a.Accuracy, b.Accuracy) || !same(a.Loss, b.Loss) {
						t.Fatalf("workers=%d: round %d differs: %+v vs %+v", w, a.Round, a, b)
					}
				}
			}
			r3, err := Run(context.Background(), config(alg, 43))
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(r1.Model, r3.Model) {
				t.Fatal("different seeds gave the same model")
			}
		})
	}
}

// same reports whether a and b are the same figure (NaN equals NaN).
func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// TestLearnsAndStaysInBudget runs the private algorithms on separable
// blobs: each must beat chance by a wide margin and no device may spend
// more than its zCDP budget.
func TestLearnsAndStaysInBudget(t *testing.T) {
	for _, alg := range []string{"nc", "trusted", "noisysgd", "mu2"} {
		t.Run(alg, func(t *testing.T) {
			c := config(alg, 5)
			if alg != "noisysgd" {
				c.Params.Eta = 0.002 // mu^2 steps scale with alpha_t = t
			} else {
				c.Params.Eta = 0.5
			}
			res, err := Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			// Chance is 1/3; the classes are 3 standard deviations apart
			// in each of 8 features, so a working learner is near 1.
			if res.FinalAccuracy < 0.9 {
				t.Errorf("accuracy %.3f, want >= 0.9", res.FinalAccuracy)
			}
			if c.Params.Rho > 0 {
				budget := c.Params.Rho * c.Params.Rho / 2
				last := res.Records[len(res.Records)-1]
				// In "trusted" the figure against everyone but the server
				// (what the published models carry: plan.Figures.Published).
				if !(last.MaxRho > 0 && last.MaxRho <= budget*(1+1e-12)) {
					t.Errorf("max device rho %v, want in (0, %v]", last.MaxRho, budget)
				}
			}
		})
	}
}

// TestSinglePassDataRunsOut checks that devices never reuse a sample in the
// single-pass algorithms: with 600 samples, b = 2 and m = 5, a run asked
// for 100 rounds stops when the devices run dry.
func TestSinglePassDataRunsOut(t *testing.T) {
	c := config("mu2", 3)
	c.Params.Rounds = 100
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	var used int
	for _, r := range res.Records {
		used += r.Participants * c.Params.Batch
	}
	if used > 600 {
		t.Fatalf("%d samples used, only 600 exist", used)
	}
	// 60 full cohorts use 600 samples; after that a few devices with
	// samples left may still run smaller cohorts, but never 100 rounds.
	if res.Rounds < 60 || res.Rounds >= 100 {
		t.Fatalf("ran %d rounds, want 60 <= rounds < 100 (the pass ends when devices run dry)", res.Rounds)
	}
}

func TestBadConfig(t *testing.T) {
	cases := map[string]func(*Config){
		"unknown algorithm": func(c *Config) { c.Params.Algorithm = "nope" },
		"too many devices":  func(c *Config) { c.Params.M = 10000 },
		"bad delta":         func(c *Config) { c.Delta = 2 },
		"no test set":       func(c *Config) { c.Test.Samples = nil },
		"cohort > M":        func(c *Config) { c.Params.Cohort = 50 },
		"no privacy target": func(c *Config) { c.Params.Rho = 0 },
	}
	for name, mut := range cases {
		t.Run(name, func(t *testing.T) {
			c := config("nc", 1)
			mut(&c)
			if _, err := Run(context.Background(), c); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, config("nc", 1))
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("err = %v, want context canceled", err)
	}
}
