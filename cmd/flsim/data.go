package main

import (
	"fmt"

	"browserfl/shared/dataset"
	"browserfl/shared/plan"
	"browserfl/shared/task"
)

// scatterBoth replaces each image of train and test by its scattering
// features, with the function every device, the page and the
// coordinator use (plan.Features).
func scatterBoth(train, test dataset.Set, workers int) (dataset.Set, dataset.Set, error) {
	f, err := plan.NewFeatures(plan.FeaturesScatter)
	if err != nil {
		return train, test, err
	}
	out := [2]dataset.Set{train, test}
	for i, s := range out {
		x, err := f.Samples(s.Samples, workers)
		if err != nil {
			return train, test, fmt.Errorf("%s: %w", s.Name, err)
		}
		out[i] = dataset.Set{Name: s.Name + "-" + f.Kind(), Features: f.Dim(), Classes: s.Classes, Samples: x}
	}
	return out[0], out[1], nil
}

// loadData loads the task's data (taskName set: any name task.Lookup
// takes) or the named dataset from dir (or its default directory).
func loadData(taskName, name, dir string) (train, test dataset.Set, err error) {
	if taskName != "" {
		named, err := task.Lookup(taskName)
		if err != nil {
			return train, test, err
		}
		if named.Rows != nil {
			return named.Rows.Load(dir)
		}
		return named.Picture.Load(dir)
	}
	switch name {
	case "mnist":
		if dir == "" {
			dir = dataset.DefaultMNISTDir
		}
		return dataset.LoadMNIST(dir)
	default:
		if dir == "" {
			dir = dataset.DefaultFashionMNISTDir
		}
		return dataset.LoadFashionMNIST(dir)
	}
}
