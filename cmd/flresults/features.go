package main

import (
	"fmt"
	"io"
	"runtime"
	"sync"

	"browserfl/shared/dataset"
	"browserfl/shared/plan"
)

// scatterDim is the dimension of logistic regression over the scattering
// features: 10 classes of 3,969 features and a bias.
const scatterDim = 10 * (81*7*7 + 1)

// featureSets computes the features of pictures with plan.Features, the
// function every device, the page and the coordinator use, each picture
// once per process: a picture's features depend on that picture alone,
// so the features of a subset (the validation split's parts) are looked
// up from those of the set it was taken from. Pictures are recognised by
// their pixel storage, which dataset.Set.Subset shares.
type featureSets struct {
	mu     sync.Mutex
	done   map[string]map[*float32]dataset.Sample // kind -> picture -> its features
	stderr io.Writer
	quiet  bool
}

func newFeatureSets(stderr io.Writer, quiet bool) *featureSets {
	return &featureSets{done: map[string]map[*float32]dataset.Sample{}, stderr: stderr, quiet: quiet}
}

// of returns s with each picture replaced by its features of the given
// kind, labels and order kept ("" returns s unchanged).
func (fs *featureSets) of(kind string, s dataset.Set) (dataset.Set, error) {
	if kind == "" {
		return s, nil
	}
	f, err := plan.NewFeatures(kind)
	if err != nil {
		return s, err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	memo := fs.done[kind]
	if memo == nil {
		memo = map[*float32]dataset.Sample{}
		fs.done[kind] = memo
	}
	var missing []dataset.Sample
	for _, x := range s.Samples {
		if len(x.X) == 0 {
			return s, fmt.Errorf("features of %s: an empty sample", s.Name)
		}
		if _, ok := memo[&x.X[0]]; !ok {
			missing = append(missing, x)
		}
	}
	if len(missing) > 0 {
		if !fs.quiet {
			fmt.Fprintf(fs.stderr, "features: %s of %d pictures of %s (each once per process)\n", kind, len(missing), s.Name)
		}
		got, err := f.Samples(missing, runtime.GOMAXPROCS(0))
		if err != nil {
			return s, fmt.Errorf("features of %s: %w", s.Name, err)
		}
		for i, x := range missing {
			memo[&x.X[0]] = got[i]
		}
	}
	out := dataset.Set{Name: s.Name + "-" + f.Kind(), Features: f.Dim(), Classes: s.Classes, Samples: make([]dataset.Sample, len(s.Samples))}
	for i, x := range s.Samples {
		out.Samples[i] = dataset.Sample{X: memo[&x.X[0]].X, Label: x.Label}
	}
	return out, nil
}
