package main

import (
	"io"
	"slices"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/plan"
)

// TestFeatureSets: a set's features are plan.Features' of each of its
// pictures, labels and order kept; a subset's are looked up, not
// recomputed; the pixels are left as they were.
func TestFeatureSets(t *testing.T) {
	set := dataset.Set{Name: "pics", Features: 784, Classes: 10}
	for i := range 5 {
		x := make([]float32, 784)
		for j := range x {
			x[j] = float32((i*31+j*7)%97) / 97
		}
		set.Samples = append(set.Samples, dataset.Sample{X: x, Label: i})
	}
	pixels := slices.Clone(set.Samples[2].X)
	fs := newFeatureSets(io.Discard, true)
	got, err := fs.of(plan.FeaturesScatter, set)
	if err != nil {
		t.Fatal(err)
	}
	f, err := plan.NewFeatures(plan.FeaturesScatter)
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != set.Len() || got.Features != f.Dim() || got.Classes != 10 {
		t.Fatalf("features set %d x %d, %d classes", got.Len(), got.Features, got.Classes)
	}
	for i, s := range got.Samples {
		want, err := f.Picture(set.Samples[i].X)
		if err != nil {
			t.Fatal(err)
		}
		if s.Label != i || !slices.Equal(s.X, want) {
			t.Errorf("sample %d: label %d, features differ from plan.Features: %v", i, s.Label, !slices.Equal(s.X, want))
		}
	}
	if !slices.Equal(set.Samples[2].X, pixels) {
		t.Error("the pixels changed")
	}
	sub, err := set.Subset([]int{4, 1})
	if err != nil {
		t.Fatal(err)
	}
	n := len(fs.done[plan.FeaturesScatter])
	gs, err := fs.of(plan.FeaturesScatter, sub)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs.done[plan.FeaturesScatter]) != n || &gs.Samples[0].X[0] != &got.Samples[4].X[0] || gs.Samples[1].Label != 1 {
		t.Error("a subset's features were recomputed or misplaced")
	}
	if same, err := fs.of("", set); err != nil || &same.Samples[0].X[0] != &set.Samples[0].X[0] {
		t.Errorf("no transform: %v", err)
	}
	if _, err := fs.of("hog", set); err == nil {
		t.Error("an unknown transform accepted")
	}
}
