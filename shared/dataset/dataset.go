package dataset

import (
	"fmt"
	"math"
)

// Sample is one labelled example. X holds the normalised features (for
// images, pixel intensities scaled to [0, 1], row-major); Label is the class
// index in [0, classes).
type Sample struct {
	X     []float32
	Label int
}

// Set is a collection of samples that share a feature dimension and a
// number of classes.
type Set struct {
	Name     string
	Samples  []Sample
	Features int // len(X) of every sample
	Classes  int
	// Shape is the shape of one sample's features, e.g. [28 28] for an
	// image (its product is Features); nil means flat, [Features].
	Shape []int
}

// Len returns the number of samples.
func (s Set) Len() int { return len(s.Samples) }

// Labels returns the label of every sample, in order, as a new slice (the
// input the partitioners take).
func (s Set) Labels() []int {
	out := make([]int, len(s.Samples))
	for i, x := range s.Samples {
		out[i] = x.Label
	}
	return out
}

// Subset returns the set of the samples at the given indices, in that
// order. The new set shares the feature slices with s (samples are
// read-only by convention); only the Samples slice is new. Indices may
// repeat. An index out of range is an error.
func (s Set) Subset(idx []int) (Set, error) {
	out := s
	out.Samples = make([]Sample, len(idx))
	for k, i := range idx {
		if i < 0 || i >= len(s.Samples) {
			return Set{}, fmt.Errorf("dataset: subset of %q: index %d (position %d) out of range [0, %d)", s.Name, i, k, len(s.Samples))
		}
		out.Samples[k] = s.Samples[i]
	}
	return out, nil
}

// Take returns the first n samples of s (all of them if n >= s.Len()),
// sharing storage with s. A negative n is an error.
func (s Set) Take(n int) (Set, error) {
	if n < 0 {
		return Set{}, fmt.Errorf("dataset: take %d samples of %q: negative count", n, s.Name)
	}
	out := s
	out.Samples = s.Samples[:min(n, len(s.Samples))]
	return out, nil
}

// Validate checks the invariants of the package doc: every sample has
// Features finite features, every label is in [0, Classes), and Shape (if
// set) multiplies to Features.
func (s Set) Validate() error {
	if s.Features <= 0 {
		return fmt.Errorf("dataset: set %q: features = %d, want > 0", s.Name, s.Features)
	}
	if s.Classes <= 0 {
		return fmt.Errorf("dataset: set %q: classes = %d, want > 0", s.Name, s.Classes)
	}
	if s.Shape != nil {
		p := 1
		for _, d := range s.Shape {
			if d <= 0 || p > s.Features/d {
				return fmt.Errorf("dataset: set %q: shape %v does not multiply to %d features", s.Name, s.Shape, s.Features)
			}
			p *= d
		}
		if p != s.Features {
			return fmt.Errorf("dataset: set %q: shape %v does not multiply to %d features", s.Name, s.Shape, s.Features)
		}
	}
	for i, x := range s.Samples {
		if len(x.X) != s.Features {
			return fmt.Errorf("dataset: set %q: sample %d has %d features, want %d", s.Name, i, len(x.X), s.Features)
		}
		if x.Label < 0 || x.Label >= s.Classes {
			return fmt.Errorf("dataset: set %q: sample %d has label %d, want [0, %d)", s.Name, i, x.Label, s.Classes)
		}
		for j, v := range x.X {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("dataset: set %q: sample %d feature %d is %v", s.Name, i, j, v)
			}
		}
	}
	return nil
}

// ClassCounts returns how many samples of each class s holds.
func (s Set) ClassCounts() []int {
	out := make([]int, max(s.Classes, 0))
	for _, x := range s.Samples {
		if x.Label >= 0 && x.Label < len(out) {
			out[x.Label]++
		}
	}
	return out
}
