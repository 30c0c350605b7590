package task

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"browserfl/shared/dataset"
)

// ErrUnknown is wrapped when a name is neither a picture task nor a
// built-in row task.
var ErrUnknown = errors.New("task: unknown task")

// Named is what a task name a command takes stands for: exactly one of
// Picture (a 28x28 picture task of shared/dataset: fashion, digits) and
// Rows (a built-in row task of this package: tabular, text) is set.
type Named struct {
	Picture *dataset.Task
	Rows    *Builtin
}

// Name returns the task's canonical name.
func (n Named) Name() string {
	if n.Rows != nil {
		return n.Rows.Def.Name
	}
	return n.Picture.Name
}

// Names returns every task name Lookup takes (aliases aside), sorted.
func Names() []string {
	out := append(dataset.TaskNames(), BuiltinNames()...)
	sort.Strings(out)
	return out
}

// Lookup resolves a task name: the one registry of what a session can
// learn, over shared/dataset's picture tasks and the built-in row tasks.
func Lookup(name string) (Named, error) {
	if p, err := dataset.LookupTask(name); err == nil {
		return Named{Picture: &p}, nil
	}
	if b, err := LookupBuiltin(name); err == nil {
		return Named{Rows: &b}, nil
	}
	return Named{}, fmt.Errorf("%w %q (want one of %s)", ErrUnknown, name, strings.Join(Names(), ", "))
}
