package task

import (
	"fmt"
	"math"

	"browserfl/shared/dataset"
)

// RowSet is a task's rows standing in for the set Definition.Set encodes
// from them: Len, Labels, Subset and Take answer with the same samples,
// encoding only the rows asked for. A server that draws demo shards from
// the training rows (served as CSV) and evaluates on a few test rows so
// never holds every row's features: the text task's 48,000 training
// words, 1,024 float32 features each, are 197 MB encoded. A RowSet is
// read-only and safe for concurrent use.
type RowSet struct {
	def  *Definition
	name string
	rows Rows
}

// RowSet checks rows as Set does (every row encodes to finite features,
// every label is one of the task's) and returns them as a RowSet named
// name, without keeping their features.
func (d *Definition) RowSet(name string, rows Rows) (*RowSet, error) {
	if len(rows.Values) != len(rows.Labels) {
		return nil, fmt.Errorf("task: %d rows of values and %d labels", len(rows.Values), len(rows.Labels))
	}
	for i, v := range rows.Values {
		x, err := d.Encode(v)
		if err != nil {
			return nil, fmt.Errorf("task: row %d: %w", i, err)
		}
		if l := rows.Labels[i]; l < 0 || l >= d.Classes() {
			return nil, fmt.Errorf("dataset: set %q: sample %d has label %d, want [0, %d)", name, i, l, d.Classes())
		}
		for j, f := range x {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, fmt.Errorf("dataset: set %q: sample %d feature %d is %v", name, i, j, f)
			}
		}
	}
	return &RowSet{def: d, name: name, rows: rows}, nil
}

// Len returns the number of rows.
func (s *RowSet) Len() int { return s.rows.Len() }

// Labels returns every row's label, in order, as a new slice.
func (s *RowSet) Labels() []int { return append([]int(nil), s.rows.Labels...) }

// Subset returns the rows at the given indices, in that order, encoded
// (Set(...).Subset(idx)'s samples). Indices may repeat; one out of range
// is an error.
func (s *RowSet) Subset(idx []int) (dataset.Set, error) {
	out := dataset.Set{Name: s.name, Features: s.def.Dim(), Classes: s.def.Classes(), Samples: make([]dataset.Sample, len(idx))}
	for k, i := range idx {
		if i < 0 || i >= s.Len() {
			return dataset.Set{}, fmt.Errorf("dataset: subset of %q: index %d (position %d) out of range [0, %d)", s.name, i, k, s.Len())
		}
		x, err := s.def.Encode(s.rows.Values[i])
		if err != nil {
			return dataset.Set{}, fmt.Errorf("task: row %d: %w", i, err)
		}
		out.Samples[k] = dataset.Sample{X: x, Label: s.rows.Labels[i]}
	}
	return out, nil
}

// Take returns the first n rows encoded (all of them if n >= Len()), as
// Set(...).Take(n) does. A negative n is an error.
func (s *RowSet) Take(n int) (dataset.Set, error) {
	if n < 0 {
		return dataset.Set{}, fmt.Errorf("dataset: take %d samples of %q: negative count", n, s.name)
	}
	idx := make([]int, min(n, s.Len()))
	for i := range idx {
		idx[i] = i
	}
	return s.Subset(idx)
}
