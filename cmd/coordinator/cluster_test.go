package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
// gives (lines continued with a backslash joined) passes the command's
// own flag parsing and checks, as written.
func TestClusterDocCommands(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cluster.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(doc), "\\\n", " ")
	n := 0
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != "bin/coordinator" {
			continue
		}
		n++
		if _, err := parse(fields[1:], io.Discard); err != nil {
			t.Errorf("docs/cluster.md: %s\n  refused: %v", line, err)
		}
	}
	if n < 5 {
		t.Errorf("%d coordinator commands found in docs/cluster.md, want its 5 or more", n)
	}
}
