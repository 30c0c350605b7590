package scatter

import (
	"fmt"
	"sync"

	"browserfl/shared/dataset"
)

// Set returns the features of every image of s (square images of side
// c.Size), computed on workers goroutines; labels and order are kept.
// Each image's features depend on that image alone, so the result can
// be split across devices like s.
func Set(s dataset.Set, c Config, workers int) (dataset.Set, error) {
	proto, err := New(c)
	if err != nil {
		return dataset.Set{}, err
	}
	if s.Features != c.Size*c.Size {
		return dataset.Set{}, fmt.Errorf("scatter: %s has %d features, want %d x %d images", s.Name, s.Features, c.Size, c.Size)
	}
	workers = max(1, min(workers, len(s.Samples)))
	out := dataset.Set{Name: s.Name + "-scatter", Features: proto.Dim(), Classes: s.Classes,
		Samples: make([]dataset.Sample, len(s.Samples)), Shape: []int{proto.Channels(), proto.Side(), proto.Side()}}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			tr := proto
			if w > 0 {
				tr, _ = New(c) // the same filters; its own scratch
			}
			for i := w; i < len(s.Samples); i += workers {
				x := make([]float32, tr.Dim())
				if err := tr.Apply(x, s.Samples[i].X); err != nil {
					errs[w] = fmt.Errorf("scatter: %s sample %d: %w", s.Name, i, err)
					return
				}
				out.Samples[i] = dataset.Sample{X: x, Label: s.Samples[i].Label}
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return dataset.Set{}, err
		}
	}
	return out, nil
}
