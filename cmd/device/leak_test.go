package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine they started is
// still running when they end (go.uber.org/goleak), and removes the
// commands the process tests built (builtCmd).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "browserfl-cmd-device-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmds.dir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// cmds holds the commands the process tests run, each built once per
// test binary (without DWARF, as make test links) into dir.
var cmds struct {
	dir  string
	mu   sync.Mutex
	path map[string]string
}

// builtCmd returns the path of the command browserfl/cmd/name, built on
// the first call.
func builtCmd(t *testing.T, name string) string {
	t.Helper()
	cmds.mu.Lock()
	defer cmds.mu.Unlock()
	if p, ok := cmds.path[name]; ok {
		return p
	}
	p := filepath.Join(cmds.dir, name)
	if out, err := exec.Command("go", "build", "-ldflags=-w", "-o", p, "browserfl/cmd/"+name).CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/%s: %v\n%s", name, err, out)
	}
	if cmds.path == nil {
		cmds.path = map[string]string{}
	}
	cmds.path[name] = p
	return p
}
