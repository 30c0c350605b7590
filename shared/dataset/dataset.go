// Package dataset holds labelled samples and the code that reads them (IDX
// files, gzipped or raw) and partitions them across devices (IID,
// label-skewed shards, Dirichlet non-IID).
//
// It parses from io.Reader so the same code runs natively and in the
// browser (GOOS=js), where the bytes come from a file the person picked.
package dataset

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
}
