package plausible

import (
	"math"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
)

func testSeed(b byte) mechanism.Seed {
	var s mechanism.Seed
	for i := range s {
		s[i] = b ^ byte(7*i)
	}
	return s
}

// synthData draws n samples of a 3-class problem in 5 features whose
// class means are well separated, from the fixed-seed stream rng.
func synthData(rng *mechanism.Stream, n int) []dataset.Sample {
	out := make([]dataset.Sample, n)
	for i := range out {
		c := rng.Intn(3)
		x := make([]float32, 5)
		for j := range x {
			x[j] = float32(0.3*rng.NormFloat64() + 0.1)
		}
		x[c] += 1
		out[i] = dataset.Sample{X: x, Label: c}
	}
	return out
}

// baseParams is a valid session of algorithm alg on logreg 5x3.
func baseParams(alg string) optim.Params {
	p := optim.Params{Algorithm: alg, Model: "logreg", Features: 5, Classes: 3,
		M: 8, Cohort: 4, Rounds: 60, Batch: 2, Clip: 1, Eta: 0.05, Diameter: 20}
	switch alg {
	case "nc", "shared", "trusted", "noisysgd", "local":
		p.Rho = 8
	case "cdpsgd", "soteria-sgd", "soteria-svrg", "soteria-saga":
		p.Epsilon, p.Delta = 8, 1e-5
		p.LocalSize = 20
	}
	return p
}

// wild is a model whose every gradient is scale times a fixed pattern
// (and NaN in one coordinate when nan is set).
type wild struct {
	model.Model
	scale float64
	nan   bool
}

func (w wild) Grad(dst, x []float64, s dataset.Sample) float64 {
	for i := range dst {
		dst[i] = w.scale * float64(i%7-3)
	}
	if w.nan {
		dst[len(dst)/2] = math.NaN()
	}
	return 0
}

func (w wild) Clone() model.Model { return w }

// localParams is a "local" session of K = 3 steps of 2 samples, without
// projection.
func localParams() optim.Params {
	p := baseParams("local")
	p.Batch, p.LocalSteps = 6, 3
	p.Diameter = 0 // no projection: the message is the sum of the steps' releases
	return p
}

// opParams is a "local" session certified for output perturbation.
func opParams() optim.Params {
	p := localParams()
	p.Model, p.Clip, p.Eta = "logreg-unit", 2, 2
	p.LocalSteps, p.LocalEpochs = 3, 4
	return p
}

func newLocal(t *testing.T, p optim.Params, m model.Model, seed byte) optim.Device {
	t.Helper()
	d, err := optim.NewDevice(p, m, mechanism.NewStream(testSeed(seed), mechanism.PurposeSeeds))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
