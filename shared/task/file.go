package task

import (
	"fmt"
	"io"
	"os"

	"browserfl/shared/dataset"
)

// ReadFile reads and validates the task definition in the file at path
// (Parse): the one reading of a teacher's task file, the same in the
// coordinator, the simulator and the planner (-task-file).
func ReadFile(path string) (*Definition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("task file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxDefinitionBytes+1))
	if err != nil {
		return nil, fmt.Errorf("task file %s: %w", path, err)
	}
	d, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("task file %s: %w", path, err)
	}
	return d, nil
}

// ReadSetFile reads the CSV file at path (the format of ReadCSV: a
// header naming the columns, then one row a line) and encodes its rows
// into a data set named name. Unlike a student's file, whose bad lines
// are left out, every line must fit: these rows are a simulation's
// training rows or the measure of a class model (test rows), and a line
// that does not fit is an error naming it.
func (d *Definition) ReadSetFile(path, name string) (dataset.Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return dataset.Set{}, fmt.Errorf("rows file: %w", err)
	}
	defer f.Close()
	rows, refused, err := d.ReadCSV(f)
	switch {
	case err != nil:
		return dataset.Set{}, fmt.Errorf("rows file %s: %w", path, err)
	case len(refused) > 0:
		return dataset.Set{}, fmt.Errorf("rows file %s: %w (%d lines refused)", path, refused[0], len(refused))
	case rows.Len() == 0:
		return dataset.Set{}, fmt.Errorf("rows file %s: no rows", path)
	}
	set, err := d.Set(name, rows)
	if err != nil {
		return dataset.Set{}, fmt.Errorf("rows file %s: %w", path, err)
	}
	return set, nil
}
