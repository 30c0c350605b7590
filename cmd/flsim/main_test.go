package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"browserfl/shared/plan"
)

// TestBadFlags checks that every bad flag gets a clear error, never a
// panic, and that nothing runs: not even the dataset loads.
func TestBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-algorithm", "fedavg"}, "unknown algorithm"},
		{[]string{"-dataset", "cifar"}, "-dataset"},
		{[]string{"-task", "images"}, "-task"},
		{[]string{"-features", "hog"}, "-features"},
		{[]string{"-features", "scatter", "-task", "text"}, "not on rows"},
		{[]string{"-plot", "gif"}, "-plot"},
		{[]string{"-M", "abc"}, "invalid value"},
		{[]string{"-eval-every", "-1"}, "-eval-every"},
		{[]string{"-eta", "fast"}, "-eta"},
		{[]string{"-eta", "-0.1"}, "-eta"},
		{[]string{"-max-releases", "-2"}, "-max-releases"},
		{[]string{"-algorithm", "nc", "-train-samples", "1000", "-M", "10", "-m", "5", "-eta", "theorem"}, "diameter"},
		{[]string{"-workers", "0"}, "-workers"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-partition", "dirichlet"}, "dirichlet needs alpha"},
		{[]string{"-algorithm", "nc", "-train-samples", "1000", "-M", "10", "-m", "20", "-rho", "1"}, "cohort m = 20"},
		{[]string{"-algorithm", "mu2", "-train-samples", "1000", "-M", "10", "-m", "5", "-rho", "1"}, "not private"},
		{[]string{"-rows", "train.csv"}, "-rows and -test-rows go with -task-file"},
		{[]string{"-task-file", "task.json", "-rows", "train.csv"}, "-task-file brings no data"},
		{[]string{"-task-file", "task.json", "-task", "text"}, "not both"},
		{[]string{"-report-delta", "0"}, "-report-delta"},
		{[]string{"-T", "1000001"}, "T <= 1000000"},
		{[]string{"-out", "runs/"}, "want a file prefix"},
		{[]string{"-out", "/proc/none/run"}, "-out: create output directory"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			// No dataset there: the flags must be refused before it
			// would load.
			args := append([]string{"-data-dir", filepath.Join(t.TempDir(), "none")}, c.args...)
			var out, errb bytes.Buffer
			err := run(context.Background(), args, &out, &errb)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

// TestSmallRun runs a short real simulation on Fashion-MNIST and checks the
// summary and output files.
func TestSmallRun(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"-algorithm", "nc", "-rho", "8", "-train-samples", "2000", "-M", "10", "-m", "5", "-b", "4",
		"-eta", "0.001", "-eval-samples", "500", "-q", "-out", dir + "/run"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	s := out.String()
	// A single pass over 200 samples per device with b = 4 allows 50
	// releases: the session's cap, calibrated to use the whole budget
	// (rho_p = 8: zCDP 32).
	for _, want := range []string{"rounds run 100", "max releases=50", "test accuracy", "zCDP rho", "delta = 1e-5",
		"session figures per device (worst case): ε = 68.62 at δ = 1e-5 (zCDP ρ = 32, 50 releases at most)"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	csv, err := os.ReadFile(dir + "/run.csv")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(csv), "\n"); lines != 101 {
		t.Errorf("csv has %d lines, want header + 100 rounds", lines)
	}
	if fi, err := os.Stat(dir + "/run.svg"); err != nil || fi.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
	// In nc the floor is the one figure: the same column twice.
	rows := csvRows(t, dir+"/run.csv")
	if got := rows[len(rows)-1]; got["max_device_floor_epsilon"] != got["max_device_epsilon"] || got["max_device_epsilon"] == "0" {
		t.Errorf("last row: floor %q, epsilon %q: want the same non-zero figure", got["max_device_floor_epsilon"], got["max_device_epsilon"])
	}
}

// csvRows reads a run's CSV as one map a row, by the header's names.
func csvRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil || len(all) < 2 {
		t.Fatalf("%s: %d rows, %v", path, len(all), err)
	}
	var rows []map[string]string
	for _, r := range all[1:] {
		m := map[string]string{}
		for i, name := range all[0] {
			m[name] = r[i]
		}
		rows = append(rows, m)
	}
	return rows
}

// TestSharedFloorInCSV: a shared-noise run's CSV holds both figures of
// each round, the promise and the floor (what a device keeps against a
// coordinator that runs fake devices), and the summary states the same
// floor as the last row.
func TestSharedFloorInCSV(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"-algorithm", "shared", "-epsilon", "8", "-train-samples", "2000", "-M", "10", "-m", "5", "-b", "4", "-T", "20",
		"-eta", "0.001", "-eval-samples", "500", "-q", "-out", dir + "/run"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	rows := csvRows(t, dir+"/run.csv")
	last := rows[len(rows)-1]
	promise, err1 := strconv.ParseFloat(last["max_device_epsilon"], 64)
	floor, err2 := strconv.ParseFloat(last["max_device_floor_epsilon"], 64)
	if err1 != nil || err2 != nil || !(promise > 0) || !(floor > 1.5*promise) {
		t.Fatalf("last row: promise %q, floor %q: want a floor well above the promise (each device draws a share of the noise)", last["max_device_epsilon"], last["max_device_floor_epsilon"])
	}
	if want := "(the floor), epsilon = " + plan.FormatEpsilon(floor); !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
}

// TestRunShapes: a target given as epsilon alone takes the page's delta,
// as the coordinator and flplan do; a batch no device's shard can fill is
// refused with the figures, not run.
func TestRunShapes(t *testing.T) {
	small := []string{"-train-samples", "2000", "-M", "10", "-m", "5", "-eta", "0.001", "-eval-samples", "500", "-q"}
	var out, errb bytes.Buffer
	if err := run(context.Background(), append([]string{"-epsilon", "4", "-b", "4", "-T", "10"}, small...), &out, &errb); err != nil {
		t.Fatalf("-epsilon alone: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "ε = 4.00 at δ = 1e-5") {
		t.Errorf("-epsilon alone: summary lacks the page's delta:\n%s", out.String())
	}
	err := run(context.Background(), append([]string{"-b", "201"}, small...), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "batch b = 201, but the largest device's shard holds 200 samples") {
		t.Errorf("-b 201 over shards of 200: err = %v", err)
	}
}

// TestDefaultsOnValidation runs flsim with its defaults (step size chosen
// on the validation split, the page's default budget) on the validation
// split: it must report validation accuracy, never test accuracy, and the
// default target epsilon 8.
func TestDefaultsOnValidation(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"-train-samples", "2000", "-M", "10", "-m", "5", "-b", "4", "-validate", "-q"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	s := out.String()
	for _, want := range []string{"algorithm=nc", "(auto)", "validation accuracy", "ε = 8.00 at δ = 1e-5"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "test accuracy") {
		t.Errorf("a -validate run reports test accuracy:\n%s", s)
	}
}

// TestWorkersFlag checks that -workers defaults to GOMAXPROCS and is
// passed on as given.
func TestWorkersFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{{nil, runtime.GOMAXPROCS(0)}, {[]string{"-workers", "3"}, 3}} {
		o, err := parseFlags(c.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if o.workers != c.want {
			t.Errorf("%v: workers = %d, want %d", c.args, o.workers, c.want)
		}
	}
}

// TestTaskFile: flsim -task-file reads the docs' example task
// (docs/tasks.md) as the coordinator does (its model, its privacy target
// of epsilon 4) and trains on -rows, tested on -test-rows; flags that
// contradict the task are refused.
func TestTaskFile(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "tasks.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "```json\n")
	raw, _, _ := strings.Cut(rest, "```")
	dir := t.TempDir()
	file := filepath.Join(dir, "task.json")
	if err := os.WriteFile(file, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	// Pets as a student would type them: weight, legs, sound, pet.
	pets := []string{"4,4,meow,cat", "30,4,woof,dog", "0.5,0,blub,fish", "1,2,tweet,bird"}
	csv := func(n int) string {
		lines := []string{"weight,legs,sound,pet"}
		for i := range n {
			lines = append(lines, pets[i%len(pets)])
		}
		return strings.Join(lines, "\n") + "\n"
	}
	rows, test := filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv")
	if err := os.WriteFile(rows, []byte(csv(400)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(test, []byte(csv(40)), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"-task-file", file, "-rows", rows, "-test-rows", test, "-M", "10", "-m", "5", "-b", "4", "-eta", "0.5", "-q"}
	for _, tc := range []struct {
		name  string
		extra []string
		want  []string // in the summary
		err   string
	}{
		{"the docs' task", nil, []string{"test accuracy", "ε = 4.00 at δ = 1e-5"}, ""},
		{"-epsilon beside the task's", []string{"-epsilon", "8"}, nil, "-epsilon: the task pets sets the privacy target"},
		{"another model", []string{"-model", "mlp"}, nil, "-model mlp: the task pets's model is logreg"},
		{"a bad line", []string{"-test-rows", file}, nil, "-test-rows: rows file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), append(append([]string{}, base...), tc.extra...), &out, &errb)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v\n%s", err, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
