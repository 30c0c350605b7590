package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"browserfl/internal/doccmd"
)

// TestClusterFlags: the cluster's credentials on the command line. The
// removed -nats-token is refused with a pointer to -nats-nkey (also from
// a config file); an edge needs its key, a session with the embedded
// server needs -edges, one with an external NATS its own key.
func TestClusterFlags(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(cfg, []byte(`{"role": "edge", "nats": "nats://x:4222", "nats_nkey": "k.nk", "nats_token": "s3cret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string // in the error; "" = accepted
	}{
		{[]string{"-role", "edge", "-nats", "nats://x:4222", "-nats-nkey", "e.nk", "-nats-token", "s3cret"}, "-nats-token was removed"},
		{[]string{"-config", cfg}, "-nats-token was removed"},
		{[]string{"-role", "edge", "-nats", "nats://x:4222"}, "-role edge needs -nats-nkey"},
		{[]string{"-role", "session"}, "-role session needs -edges"},
		{[]string{"-role", "session", "-nats", "nats://x:4222"}, "needs -nats-nkey"},
		{[]string{"-role", "session", "-edges", "e1, e2"}, ""},
		{[]string{"-role", "session", "-nats", "nats://x:4222", "-nats-nkey", "s.nk"}, ""},
		{[]string{"-role", "edge", "-nats", "nats://x:4222", "-nats-nkey", "edge-e1.nk"}, ""},
	} {
		o, err := parse(tc.args, io.Discard)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("parse(%q): %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("parse(%q) = %v, want an error with %q", tc.args, err, tc.want)
		case tc.want == "" && o.Role == "session" && o.NATS == "" && strings.Join(o.Edges, ",") != "e1,e2":
			t.Errorf("parse(%q): edges %q, want e1,e2", tc.args, o.Edges)
		}
	}
}

// TestClusterDocCommands: every coordinator command docs/cluster.md
// gives (lines continued with a backslash joined), and every one README.md
// gives (bin/coordinator, or the flags make run passes it: -lobby, -reset
// with RESET, and RUNFLAGS), passes the command's own flag parsing and
// checks, as written. A planted command the checks refuse shows the test
// would fail.
func TestClusterDocCommands(t *testing.T) {
	if _, err := parse([]string{"-trust-proxy", "-listen", ":8080"}, io.Discard); err == nil {
		t.Fatal("the planted command -trust-proxy -listen :8080 is accepted")
	}
	for _, c := range []struct {
		doc string
		min int
	}{{"cluster.md", 5}, {"../README.md", 2}} {
		path := filepath.Join("..", "..", "docs", c.doc)
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cmds, err := doccmd.Commands(string(doc))
		if err != nil {
			t.Fatal(err)
		}
		var runs [][]string
		for _, cmd := range doccmd.Of(cmds, "coordinator") {
			runs = append(runs, cmd.Args)
		}
		for _, cmd := range doccmd.Of(cmds, "make") {
			targets, vars := doccmd.Vars(cmd.Args)
			if !slices.Contains(targets, "run") {
				continue
			}
			// The Makefile's run: ./bin/coordinator-nonats -lobby $(if $(RESET),-reset) $(RUNFLAGS)
			args := []string{"-lobby"}
			if vars["RESET"] != "" {
				args = append(args, "-reset")
			}
			flags, err := doccmd.Split(vars["RUNFLAGS"])
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, append(args, flags...))
		}
		for _, args := range runs {
			if _, err := parse(args, io.Discard); err != nil {
				t.Errorf("%s: coordinator %s\n  refused: %v", path, strings.Join(args, " "), err)
			}
		}
		if len(runs) < c.min {
			t.Errorf("%d coordinator commands found in %s, want its %d or more", len(runs), path, c.min)
		}
	}
}
