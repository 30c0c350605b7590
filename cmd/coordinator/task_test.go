package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"browserfl/shared/dataset"
)

// TestParseTask: -task and -dataset choose what the class learns.
func TestParseTask(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantTask string
		wantDir  string
		wantErr  string
	}{
		{"default: Fashion-MNIST in its Debian directory", nil, nil, "fashion", "", ""},
		{"-task digits", []string{"-task", "digits"}, nil, "digits", "", ""},
		{"-dataset mnist picks the digits task", []string{"-dataset", "mnist"}, nil, "digits", "", ""},
		{"-dataset fashion-mnist", []string{"-dataset", "fashion-mnist"}, nil, "fashion", "", ""},
		{"-task digits with its own directory", []string{"-task", "digits", "-dataset", "/tmp/digits"}, nil, "digits", "/tmp/digits", ""},
		{"a directory named mnist needs a slash", []string{"-dataset", "./mnist"}, nil, "fashion", "./mnist", ""},
		{"from the environment", nil, map[string]string{"BFL_TASK": "digits"}, "digits", "", ""},
		{"-dataset none (load tests)", []string{"-dataset", "none"}, nil, "fashion", "none", ""},
		{"unknown task", []string{"-task", "cifar"}, nil, "", "", "-task"},
		{"conflict", []string{"-task", "digits", "-dataset", "fashion-mnist"}, nil, "", "", "-dataset fashion-mnist is the fashion task"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o, err := parse(tc.args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Task != tc.wantTask || o.DatasetDir != tc.wantDir {
				t.Errorf("task %q, dataset %q; want %q, %q", o.Task, o.DatasetDir, tc.wantTask, tc.wantDir)
			}
		})
	}
}

// TestLoadTaskDigits: the digits task loads data/mnist (made by `make
// setup`) with the labels "0".."9"; a missing directory says how to make
// it. Skipped only when data/mnist is absent and BFL_REQUIRE_MNIST is
// unset (`make test` sets it).
func TestLoadTaskDigits(t *testing.T) {
	// The default directory is relative to the repository root: from
	// this package's directory it is missing, and the error says so.
	_, err := loadTask(options{Task: "digits", DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "make setup") || !strings.Contains(err.Error(), "scripts/mnist.sh") {
		t.Errorf("missing data/mnist: err = %v, want one naming make setup and scripts/mnist.sh", err)
	}
	td, err := loadTask(options{Task: "fashion", DatasetDir: "none"})
	if err != nil || td.labels != "" || td.features != 784 || td.classes != 10 || td.train.Len() != 0 {
		t.Errorf("-dataset none: %d features, %d classes, labels %q, %v", td.features, td.classes, td.labels, err)
	}

	dir := filepath.Join("..", "..", dataset.DefaultMNISTDir)
	if _, err := os.Stat(filepath.Join(dir, dataset.TrainImagesFile+".gz")); err != nil {
		if os.Getenv("BFL_REQUIRE_MNIST") != "" {
			t.Fatalf("data/mnist is missing (%v): run `make setup` or bash scripts/mnist.sh", err)
		}
		t.Skipf("skipped: data/mnist is absent (%v); run `make setup` or bash scripts/mnist.sh (make test requires it)", err)
	}
	td, err = loadTask(options{Task: "digits", DatasetDir: dir, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(td.close)
	if td.labels != "0,1,2,3,4,5,6,7,8,9" || td.train.Len() != 8000 || td.testLen != 2000 || td.features != 784 || td.def != nil {
		t.Errorf("digits: labels %q, %d training and %d test samples of %d features", td.labels, td.train.Len(), td.testLen, td.features)
	}
}
