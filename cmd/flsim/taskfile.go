package main

import (
	"errors"
	"flag"
	"fmt"

	"browserfl/internal/sessionflag"
	"browserfl/shared/dataset"
	"browserfl/shared/plan"
	"browserfl/shared/task"
)

// loadRows reads -task-file's training and test rows (every line must
// fit the task).
func loadRows(def *task.Definition, rows, test string) (dataset.Set, dataset.Set, error) {
	train, err := def.ReadSetFile(rows, def.Name)
	if err != nil {
		return dataset.Set{}, dataset.Set{}, fmt.Errorf("-rows: %w", err)
	}
	held, err := def.ReadSetFile(test, def.Name+"-test")
	if err != nil {
		return dataset.Set{}, dataset.Set{}, fmt.Errorf("-test-rows: %w", err)
	}
	return train, held, nil
}

// readTaskFile reads -task-file (task.ReadFile, as the coordinator
// does) and takes the task's model and, when it states one, its privacy
// target (plan.WithTask's reading): flags that would say otherwise are
// refused.
func (o *options) readTaskFile(fs *flag.FlagSet) error {
	if o.taskFile == "" {
		if o.rows != "" || o.test != "" {
			return errors.New("-rows and -test-rows go with -task-file")
		}
		return nil
	}
	if o.taskName != "" {
		return errors.New("give -task or -task-file, not both")
	}
	if o.rows == "" || o.test == "" {
		return errors.New("-task-file brings no data: give its training rows (-rows FILE.csv) and test rows (-test-rows FILE.csv)")
	}
	def, err := task.ReadFile(o.taskFile)
	if err != nil {
		return fmt.Errorf("-task-file: %w", err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	clash := sessionflag.TaskTargetClash(def.Name, def.Privacy.Epsilon, func(name string) bool { return given[name] })
	fs.Visit(func(f *flag.Flag) {
		switch {
		case f.Name == "model" && o.p.Model != def.Model:
			clash = fmt.Errorf("-model %s: the task %s's model is %s", o.p.Model, def.Name, def.Model)
		case f.Name == "dataset" || f.Name == "data-dir" || f.Name == "features":
			clash = fmt.Errorf("-%s: -task-file's data are -rows and -test-rows", f.Name)
		}
	})
	if clash != nil {
		return clash
	}
	o.def, o.p.Model = def, def.Model
	if e := def.Privacy.Epsilon; e > 0 {
		o.p.Rho, o.p.Epsilon, o.p.Delta = 0, e, def.Privacy.Delta
		if o.p.Delta == 0 {
			o.p.Delta = plan.DefaultDelta
		}
	}
	return nil
}
