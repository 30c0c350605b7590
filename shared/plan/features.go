package plan

import (
	"errors"
	"fmt"

	"browserfl/shared/dataset"
	"browserfl/shared/scatter"
	"browserfl/shared/wire"
)

// FeaturesScatter is the wire.SessionParams.Transform of a session whose
// model reads the scattering features of each picture (shared/scatter's
// DefaultConfig: J = 2, L = 8 on 28 x 28 pictures, 3,969 features with
// the per-picture group normalisation; docs/features.md).
const FeaturesScatter = "scatter"

// FeatureKinds are the transforms this build knows, for messages.
var FeatureKinds = []string{FeaturesScatter}

// ErrUnknownFeatures is wrapped when a session names a transform this
// build does not know: the device cannot compute what the model reads,
// and refuses the session.
var ErrUnknownFeatures = errors.New("session: unknown feature transform")

// ErrFeaturesMismatch is wrapped when a session's transform disagrees
// with the shape it announces, or with its data (rows, other pictures).
var ErrFeaturesMismatch = errors.New("session: features do not match the transform")

// Features computes, from one raw picture at a time, the features a
// session's model reads. It is the one home of that computation: the
// coordinator (its evaluation pictures), the device runtime (its own
// pictures, natively and in the page) and the page (a drawing to
// classify) all call it. A picture's features depend on that picture
// alone (shared/scatter's normalisation reads no other), so computing
// them spends no privacy budget. A Features holds scratch buffers: not
// safe for concurrent use.
type Features struct {
	kind string
	cfg  scatter.Config
	tr   *scatter.Transform
}

// NewFeatures returns the transform named kind (one of FeatureKinds).
func NewFeatures(kind string) (*Features, error) {
	switch kind {
	case FeaturesScatter:
		tr, err := scatter.New(scatter.DefaultConfig)
		if err != nil {
			return nil, err
		}
		return &Features{kind: kind, cfg: scatter.DefaultConfig, tr: tr}, nil
	}
	return nil, fmt.Errorf("%w: %q (this build knows %q)", ErrUnknownFeatures, kind, FeatureKinds)
}

// SessionFeatures returns the transform session s's model reads, or nil
// when it reads the raw inputs (Transform empty). It is the one reading
// of wire.SessionParams.Transform: the kind must be known, the session
// must learn pictures (no row task) and announce the transform's output
// dimension as its Features.
func SessionFeatures(s wire.SessionParams) (*Features, error) {
	if s.Transform == "" {
		return nil, nil
	}
	f, err := NewFeatures(s.Transform)
	if err != nil {
		return nil, err
	}
	switch {
	case s.Task != "":
		return nil, fmt.Errorf("%w: %s features are computed from pictures, and the session learns rows of a task", ErrFeaturesMismatch, s.Transform)
	case s.Features != f.Dim():
		return nil, fmt.Errorf("%w: %d features announced, the %s transform gives %d", ErrFeaturesMismatch, s.Features, s.Transform, f.Dim())
	}
	return f, nil
}

// Kind is the transform's name (wire.SessionParams.Transform).
func (f *Features) Kind() string { return f.kind }

// Inputs is the number of raw values of one picture (28 x 28 = 784).
func (f *Features) Inputs() int { return f.cfg.Size * f.cfg.Size }

// Dim is the number of features of one picture (3,969 for scatter).
func (f *Features) Dim() int { return f.tr.Dim() }

// Picture returns the features of one raw picture (Inputs values,
// row-major, finite).
func (f *Features) Picture(img []float32) ([]float32, error) {
	if len(img) != f.Inputs() {
		return nil, fmt.Errorf("%w: a picture of %d values, the %s transform reads %d", ErrFeaturesMismatch, len(img), f.kind, f.Inputs())
	}
	out := make([]float32, f.Dim())
	if err := f.tr.Apply(out, img); err != nil {
		return nil, fmt.Errorf("%s features: %w", f.kind, err)
	}
	return out, nil
}

// Samples returns the features of every picture of data, labels and
// order kept, computed on workers goroutines (each with its own
// transform; 1 in the browser, whose Go runs on one thread). Each
// sample's features depend on that sample alone.
func (f *Features) Samples(data []dataset.Sample, workers int) ([]dataset.Sample, error) {
	for i, s := range data {
		if len(s.X) != f.Inputs() {
			return nil, fmt.Errorf("%w: sample %d has %d values, the %s transform reads pictures of %d", ErrFeaturesMismatch, i, len(s.X), f.kind, f.Inputs())
		}
	}
	set := dataset.Set{Name: "local", Features: f.Inputs(), Samples: data}
	out, err := scatter.Set(set, f.cfg, workers)
	if err != nil {
		return nil, fmt.Errorf("%s features: %w", f.kind, err)
	}
	return out.Samples, nil
}
