package doccmd

import (
	"reflect"
	"testing"
)

func TestCommands(t *testing.T) {
	md := "Run it:\n\n```\ngo run ./cmd/flsim -eta 1   # a comment\nbin/coordinator -role edge \\\n  -listen :8081\nmake run RUNFLAGS=\"-task digits\" RESET=1\nls -l\n```\n\n" +
		"or `make run RUNFLAGS=\"-listen :8080\"`, `./bin/device -budget 4`; not `plan.SessionFigures`; `make -n wasm; gzip -9 web/app.wasm \\| wc -c`.\n"
	cmds, err := Commands(md)
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{Prog: "flsim", Args: []string{"-eta", "1"}, Text: "go run ./cmd/flsim -eta 1   # a comment"},
		{Prog: "coordinator", Args: []string{"-role", "edge", "-listen", ":8081"}, Text: "bin/coordinator -role edge    -listen :8081"},
		{Prog: "make", Args: []string{"run", "RUNFLAGS=-task digits", "RESET=1"}, Text: "make run RUNFLAGS=\"-task digits\" RESET=1"},
		{Prog: "make", Args: []string{"run", "RUNFLAGS=-listen :8080"}, Text: "make run RUNFLAGS=\"-listen :8080\""},
		{Prog: "device", Args: []string{"-budget", "4"}, Text: "./bin/device -budget 4"},
		{Prog: "make", Args: []string{"-n", "wasm"}, Text: "make -n wasm; gzip -9 web/app.wasm | wc -c"},
	}
	if !reflect.DeepEqual(cmds, want) {
		t.Errorf("Commands:\n%q\nwant\n%q", cmds, want)
	}
	targets, vars := Vars(cmds[2].Args)
	if !reflect.DeepEqual(targets, []string{"run"}) || vars["RUNFLAGS"] != "-task digits" || vars["RESET"] != "1" {
		t.Errorf("Vars: %q %q", targets, vars)
	}
	if targets, _ := Vars(cmds[5].Args); !reflect.DeepEqual(targets, []string{"wasm"}) {
		t.Errorf("Vars(%q): targets %q", cmds[5].Args, targets)
	}
	if _, err := Split(`a "b`); err == nil {
		t.Error("an unclosed quote is accepted")
	}
}
