package main

import (
	"errors"
	"flag"
	"fmt"

	"browserfl/shared/optim"
	"browserfl/shared/task"
)

// applyTask sets p's shape (and a row task's model) from -task or
// -task-file, read through shared/task as the coordinator reads them
// (task.ReadFile), and returns the row task's definition (nil for a
// picture task or none).
func applyTask(fs *flag.FlagSet, p *optim.Params, name, file string) (*task.Definition, error) {
	if name == "" && file == "" {
		return nil, nil
	}
	if name != "" && file != "" {
		return nil, errors.New("give -task or -task-file, not both")
	}
	var clash error
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "features" || f.Name == "classes" || f.Name == "model" {
			clash = fmt.Errorf("-%s: the task sets the model's shape", f.Name)
		}
	})
	if clash != nil {
		return nil, clash
	}
	var def *task.Definition
	if file != "" {
		var err error
		if def, err = task.ReadFile(file); err != nil {
			return nil, fmt.Errorf("-task-file: %w", err)
		}
	} else {
		named, err := task.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("-task: %w", err)
		}
		if named.Rows == nil {
			p.Features, p.Classes = 784, len(named.Picture.Labels) // 28x28 pictures
			return nil, nil
		}
		def = named.Rows.Def
	}
	p.Features, p.Classes, p.Model = def.Dim(), def.Classes(), def.Model
	return def, nil
}
