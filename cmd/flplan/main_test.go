package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/task"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // substrings of the output
		err  bool
	}{
		{"nc epsilon", []string{"-alg", "nc", "-T", "100", "-epsilon", "4", "-delta", "1e-5"},
			[]string{"untrusted coordinator", "participation 1", "worst case (100 releases)"}, false},
		{"trusted sigma", []string{"-alg", "trusted", "-sigma", "0.05"},
			[]string{"trusted coordinator", "server", "sigma = 0.05", "nothing bounds what it learns", "against everyone but the server"}, false},
		{"trusted demo", []string{"-alg", "trusted", "-T", "200", "-M", "30", "-m", "10", "-b", "32", "-clip", "1", "-epsilon", "7.92", "-delta", "1e-5"},
			[]string{"hold against everyone else", "ε = 7.92 at δ = 1e-5 against everyone but the server"}, false},
		{"soteria amplified", []string{"-alg", "soteria-sgd", "-rho", "2", "-local", "600"},
			[]string{"each release", "amplified", "NOT A GUARANTEE"}, false}, // labelled so it cannot be read as a bound
		{"non-private", []string{"-alg", "mu2"}, []string{"not private"}, false},
		{"shared", []string{"-alg", "shared", "-T", "24", "-M", "100", "-m", "50", "-b", "50", "-epsilon", "8", "-samples", "600", "-colluders", "5"},
			[]string{"0.1881 of nc's noise (h = 30 honest survivors of t = 35, c = 5)", "ε = 8.00 at δ = 1e-5 if the server sees only sums of at least 35 updates, at most 5 of them its own; ε = 79.91 from this device",
				"promise (the server sees only sums of at least 35 updates, at most 5 of them its own): epsilon = 8.00",
				"floor (every other device fake: this device's own noise alone):          epsilon = 79.91"}, false},
		{"shared threshold above m", []string{"-alg", "shared", "-m", "10", "-epsilon", "8", "-threshold", "11"}, nil, true},
		{"one pass capped", []string{"-alg", "nc", "-T", "1200", "-M", "100", "-m", "50", "-b", "1", "-epsilon", "8", "-samples", "600"},
			[]string{"at most 600 releases", "participation 600 (= cap)", "worst case (600 releases)", "ε = 8.00"}, false},
		{"cap", []string{"-alg", "nc", "-T", "100", "-rho", "1", "-max-releases", "40"}, []string{"worst case (40 releases)"}, false},
		{"cap above T", []string{"-alg", "nc", "-T", "100", "-rho", "1", "-max-releases", "101"}, nil, true},
		{"samples multi-pass", []string{"-alg", "cdpsgd", "-rho", "1", "-samples", "600"}, nil, true},
		{"samples and cap", []string{"-alg", "nc", "-rho", "1", "-samples", "600", "-max-releases", "3"}, nil, true},
		{"two targets", []string{"-rho", "1", "-epsilon", "2"}, nil, true},
		{"no target", []string{"-alg", "nc"}, nil, true},
		{"bad delta", []string{"-epsilon", "1", "-delta", "2"}, nil, true},
		{"bad cohort", []string{"-rho", "1", "-m", "40"}, nil, true},
		{"unknown alg", []string{"-alg", "nope", "-rho", "1"}, nil, true},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		err := run(tc.args, &out, io.Discard)
		if (err != nil) != tc.err {
			t.Errorf("%s: err = %v, want error %v", tc.name, err, tc.err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out.String())
			}
		}
	}
}

// TestHelpAndBadValues: -h prints the usage to the usage writer only and
// is not an error for main (flag.ErrHelp); values no session can have
// are refused.
func TestHelpAndBadValues(t *testing.T) {
	var out, usage bytes.Buffer
	if err := run([]string{"-h"}, &out, &usage); !errors.Is(err, flag.ErrHelp) || out.Len() > 0 || !strings.Contains(usage.String(), "-algorithm") {
		t.Errorf("-h: err %v, out %q, usage %d bytes", err, out.String(), usage.Len())
	}
	for _, args := range [][]string{
		{"-epsilon", "8", "-samples", "-1"},
		{"-epsilon", "8", "-features", "-1"},
		{"-epsilon", "8", "-classes", "0"},
		{"-epsilon", "8", "-local", "-1"},
		{"-epsilon", "8", "-T", "1000001"},
	} {
		if err := run(args, io.Discard, io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	// -algorithm is -alg's other name, as flsim and the coordinator call it.
	out.Reset()
	if err := run([]string{"-algorithm", "shared", "-epsilon", "8"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "algorithm shared:") {
		t.Errorf("-algorithm shared: %v\n%s", err, out.String())
	}
}

func TestProactiveTablesCommand(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-proactive-tables"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n| Table "); n != 3 {
		t.Errorf("%d table rows, want 3:\n%s", n, out.String())
	}
}

// TestApplyTask: -task and -task-file set the model's shape (and a row
// task's model) as shared/task gives it; a task beside -features,
// -classes or -model, both task flags, or an unknown task are refused.
func TestApplyTask(t *testing.T) {
	text, err := task.LookupBuiltin("text")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := text.Def.Marshal()
	file := filepath.Join(t.TempDir(), "task.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args              []string
		features, classes int
		model             string
		err               bool
	}{
		{[]string{"-task", "text"}, text.Def.Dim(), 5, text.Def.Model, false},
		{[]string{"-task-file", file}, text.Def.Dim(), 5, text.Def.Model, false},
		{[]string{"-task", "tabular"}, 23, 4, "logreg", false},
		{[]string{"-task", "digits", "-model", "mlp"}, 0, 0, "", true},
		{[]string{"-task", "digits"}, 784, 10, "logreg", false},
		{[]string{"-task", "text", "-features", "3"}, 0, 0, "", true},
		{[]string{"-task", "text", "-task-file", file}, 0, 0, "", true},
		{[]string{"-task", "cifar"}, 0, 0, "", true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		p := optim.Params{Model: "logreg"}
		fs.IntVar(&p.Features, "features", 784, "")
		fs.IntVar(&p.Classes, "classes", 10, "")
		fs.StringVar(&p.Model, "model", "logreg", "")
		name, f := fs.String("task", "", ""), fs.String("task-file", "", "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		_, err := applyTask(fs, &p, *name, *f)
		if (err != nil) != tc.err || err == nil && (p.Features != tc.features || p.Classes != tc.classes || p.Model != tc.model) {
			t.Errorf("%v: %d features, %d classes, model %q, err %v", tc.args, p.Features, p.Classes, p.Model, err)
		}
	}
}

// TestCertifiedLocalIsZCDP: a certified session of "local" with several
// passes runs by output perturbation, an ordinary zCDP charge: its figure
// is stated as zCDP, never as a last-iterate (Gaussian DP) one.
func TestCertifiedLocalIsZCDP(t *testing.T) {
	var out bytes.Buffer
	args := []string{"-alg", "local", "-model", "logreg-unit", "-M", "100", "-m", "10", "-T", "100", "-b", "600",
		"-local-steps", "25", "-local-epochs", "25", "-clip", "2", "-eta", "1", "-epsilon", "8", "-delta", "1e-5"}
	if err := run(args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "Gaussian DP of ledger ρ") {
		t.Errorf("output states a last-iterate figure:\n%s", s)
	}
	if !strings.Contains(s, "zCDP ρ") || !strings.Contains(s, "output perturbation") {
		t.Errorf("output lacks the zCDP figure or the output perturbation:\n%s", s)
	}
}

// TestTaskFileAsCoordinator: flplan -task-file reads the docs' example
// task (docs/tasks.md) as the coordinator does: its shape, its model
// and its privacy target (epsilon 4 at the default delta), so its report
// is -epsilon 4's with the task's shape; a target beside the task's is
// refused.
func TestTaskFileAsCoordinator(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "tasks.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "```json\n")
	raw, _, _ := strings.Cut(rest, "```")
	def, err := task.Parse([]byte(raw))
	if err != nil || def.Privacy.Epsilon != 4 {
		t.Fatalf("docs/tasks.md's example: %v, privacy %+v", err, def.Privacy)
	}
	file := filepath.Join(t.TempDir(), "task.json")
	if err := os.WriteFile(file, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	session := []string{"-alg", "nc", "-T", "50", "-M", "30", "-m", "10", "-b", "16"}
	var want bytes.Buffer
	if err := run(append(session, "-features", strconv.Itoa(def.Dim()), "-classes", "4", "-model", def.Model, "-epsilon", "4"), &want, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		extra []string
		err   string
	}{
		{"the task's target", nil, ""},
		{"-epsilon beside it", []string{"-epsilon", "8"}, "-epsilon: the task pets sets the privacy target"},
		{"-rho beside it", []string{"-rho", "1"}, "-rho: the task pets sets the privacy target"},
		{"a missing file", []string{"-task-file", file + ".gone"}, "-task-file: task file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(append(append(append([]string{}, session...), "-task-file", file), tc.extra...), &out, io.Discard)
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "" && out.String() != want.String():
				t.Errorf("report:\n%s\nwant -epsilon 4's:\n%s", out.String(), want.String())
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("err %v, want %q", err, tc.err)
			}
		})
	}
}
