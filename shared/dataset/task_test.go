package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLookupTask(t *testing.T) {
	tests := []struct {
		name, want string
		labels     string
	}{
		{"fashion", "fashion", strings.Join(FashionMNISTClasses[:], ",")},
		{"Fashion-MNIST", "fashion", strings.Join(FashionMNISTClasses[:], ",")},
		{"digits", "digits", "0,1,2,3,4,5,6,7,8,9"},
		{" mnist ", "digits", "0,1,2,3,4,5,6,7,8,9"},
	}
	for _, tc := range tests {
		task, err := LookupTask(tc.name)
		if err != nil {
			t.Errorf("LookupTask(%q): %v", tc.name, err)
			continue
		}
		if task.Name != tc.want || strings.Join(task.Labels, ",") != tc.labels {
			t.Errorf("LookupTask(%q) = %s with labels %q, want %s with %q", tc.name, task.Name, task.Labels, tc.want, tc.labels)
		}
	}
	if _, err := LookupTask("cifar"); err == nil || !strings.Contains(err.Error(), "digits") {
		t.Errorf("unknown task: err = %v, want one naming the known tasks", err)
	}
}

// TestDigitsTaskLoads loads the digits task from a generated directory
// (always) and says how to make a missing one.
func TestDigitsTaskLoads(t *testing.T) {
	task, err := LookupTask("digits")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeDir(t, dir, true)
	train, test, err := task.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 3 || test.Len() != 3 || train.Classes != 10 {
		t.Errorf("got %d training and %d test samples, %d classes", train.Len(), test.Len(), train.Classes)
	}
	_, _, err = task.Load(filepath.Join(t.TempDir(), "mnist"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "make setup") || !strings.Contains(err.Error(), "scripts/mnist.sh") {
		t.Errorf("missing directory: err = %v, want not-exist naming make setup and scripts/mnist.sh", err)
	}
}

// TestDigitsTaskRealData loads data/mnist as `make setup` writes it
// (scripts/mnist.sh): 8,000 training and 2,000 test digits of 28x28. It
// is skipped only when data/mnist is absent and BFL_REQUIRE_MNIST is not
// set; `make test` sets it (after `make setup`), so there it runs or fails.
func TestDigitsTaskRealData(t *testing.T) {
	dir := filepath.Join("..", "..", DefaultMNISTDir)
	if _, err := os.Stat(filepath.Join(dir, TrainImagesFile+".gz")); err != nil {
		if os.Getenv("BFL_REQUIRE_MNIST") != "" {
			t.Fatalf("data/mnist is missing (%v): run `make setup` or bash scripts/mnist.sh", err)
		}
		t.Skipf("skipped: data/mnist is absent (%v); run `make setup` or bash scripts/mnist.sh (make test requires it)", err)
	}
	task, err := LookupTask("digits")
	if err != nil {
		t.Fatal(err)
	}
	train, test, err := task.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 8000 || test.Len() != 2000 || train.Features != 784 || train.Classes != 10 {
		t.Errorf("data/mnist: %d training, %d test samples, %d features, %d classes; want 8000, 2000, 784, 10",
			train.Len(), test.Len(), train.Features, train.Classes)
	}
	for c, k := range train.ClassCounts() {
		if k < 600 {
			t.Errorf("digit %d: %d training samples, want several hundred", c, k)
		}
	}
}
