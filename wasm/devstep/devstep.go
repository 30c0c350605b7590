// Package devstep is the unit of work a browser device does per round,
// packaged so the same code can be timed natively (go test -bench) and in
// headless Chromium (wasm/bench, driven by the e2e benchmarks): for the
// default session (algorithm "nc", logistic regression on 28x28 images,
// minibatch b = 64) one step is Prepare (64 clipped mu^2 corrections,
// Gaussian noise from a ChaCha20 stream, noise cancellation, float32
// encoding), Commit, and MarshalBinary (what the runtime persists).
//
// The samples are synthetic, from a fixed seed, so both sides compute on
// identical inputs; the noise seed comes from crypto/rand as in the
// product (its cost does not depend on its value).
package devstep

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"

	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/session"
)

// Batch is the minibatch size of the default session.
const Batch = 64

// Params are the default session's public parameters with T large enough
// for any benchmark length.
func Params() optim.Params { return params(Batch) }

func params(batch int) optim.Params {
	return optim.Params{Algorithm: "nc", Model: "logreg", Features: 784, Classes: 10,
		M: 5, Cohort: 5, Rounds: session.MaxRounds, Batch: batch, Clip: 1, Eta: 1, Diameter: 10, Rho: 2}
}

// Bench holds a device half and its inputs.
type Bench struct {
	dev   optim.Device
	batch []dataset.Sample
	x, xp []float64
	t     int
}

// New builds a device for Params with fixed synthetic inputs.
func New() (*Bench, error) { return NewSized(Batch) }

// NewSized is New with minibatch size batch (>= 1): a smaller batch is a
// proportionally shorter step through the same code (the page warms up
// its WebAssembly code with it).
func NewSized(batch int) (*Bench, error) {
	if batch < 1 {
		return nil, fmt.Errorf("devstep: batch %d, want >= 1", batch)
	}
	p := params(batch)
	m, err := model.New(p.Model, p.Features, p.Classes)
	if err != nil {
		return nil, fmt.Errorf("devstep: %w", err)
	}
	d, err := optim.NewDevice(p, m, rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("devstep: %w", err)
	}
	r := mrand.New(mrand.NewPCG(1, 2))
	b := &Bench{dev: d, x: make([]float64, m.Dim()), xp: make([]float64, m.Dim())}
	for i := range b.x {
		b.x[i] = r.NormFloat64() * 0.01
		b.xp[i] = r.NormFloat64() * 0.01
	}
	for i := 0; i < batch; i++ {
		x := make([]float32, p.Features)
		for j := range x {
			if r.IntN(5) == 0 { // about a fifth of the pixels inked, as in MNIST-like images
				x[j] = float32(r.IntN(256)) / 255
			}
		}
		b.batch = append(b.batch, dataset.Sample{X: x, Label: i % p.Classes})
	}
	return b, nil
}

// Step runs one round: Prepare, Commit, MarshalBinary.
func (b *Bench) Step() error {
	b.t++
	if _, err := b.dev.Prepare(optim.Round{T: b.t, X: b.x, XPrev: b.xp}, b.batch); err != nil {
		return fmt.Errorf("devstep: prepare %d: %w", b.t, err)
	}
	if err := b.dev.Commit(b.t); err != nil {
		return fmt.Errorf("devstep: commit %d: %w", b.t, err)
	}
	if _, err := b.dev.MarshalBinary(); err != nil {
		return fmt.Errorf("devstep: marshal %d: %w", b.t, err)
	}
	return nil
}
