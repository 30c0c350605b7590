package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunBuildWithoutNATSServer: make run builds the coordinator with the
// build tag nonatsserver, which leaves the embedded NATS server's code
// (more than half of the coordinator's cold build) out of the binary.
// The test checks that the Makefile's run recipe builds it so, that no
// package of the NATS server is in that build (and that the whole build
// has them, so the check can fail), and that the binary, asked to be a
// session process without -nats, refuses before it writes anything, with
// what to do instead.
func TestRunBuildWithoutNATSServer(t *testing.T) {
	root := repoRoot()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^run:.*\n(\t.*\n)*?\t\$\(GO\) build -tags nonatsserver -o bin/coordinator-nonats \./cmd/coordinator\n(\t.*\n)*?\t\./bin/coordinator-nonats -lobby `).Match(mk) {
		t.Fatal("the Makefile's run recipe does not build bin/coordinator-nonats with -tags nonatsserver and run it")
	}
	const server = "github.com/nats-io/nats-server/"
	for _, tc := range []struct {
		tags string
		want bool
	}{{"", true}, {"nonatsserver", false}} {
		args := []string{"list", "-deps"}
		if tc.tags != "" {
			args = append(args, "-tags", tc.tags)
		}
		cmd := exec.Command("go", append(args, "./cmd/coordinator")...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		if got := strings.Contains(string(out), server); got != tc.want {
			t.Errorf("build tags %q: the NATS server's packages in the build: %v, want %v", tc.tags, got, tc.want)
		}
	}

	bin := filepath.Join(t.TempDir(), "coordinator")
	if err := goBuild(nil, []string{"-tags", "nonatsserver"}, "./cmd/coordinator", bin); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	cmd := exec.Command(bin, "-role", "session", "-edges", "e1", "-listen", "127.0.0.1:0", "-data", data)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("-role session without -nats in make run's build: %v, want it to exit with an error\n%s", err, out)
	}
	for _, want := range []string{"built without the embedded NATS server", "-nats URL", "go build -o bin/coordinator ./cmd/coordinator"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("its error does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "nats")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("it refused after writing the cluster's keys (%s/nats: %v): the check must come first", data, err)
	}
}

// TestRunPreparesItsTask: make run prepares the data of the task it runs
// and no other (the default: Fashion-MNIST alone, no npm download, no
// word lists, no diamonds), the task RUNFLAGS names however it is
// written, and make setup every task's. It reads what make would run
// (make -n), so nothing is installed or built.
func TestRunPreparesItsTask(t *testing.T) {
	root := repoRoot()
	for _, c := range []struct {
		target, runflags string
		tasks            string
		mnist            bool
	}{
		{"run", "", "fashion", false},
		{"run", "-listen :8080 -M 30", "fashion", false},
		{"run", "-task digits", "fashion digits", true},
		{"run", "-dataset=mnist", "fashion digits", true},
		{"run", "-task=text -M 3", "fashion text", false},
		{"run", "-task tabular", "fashion tabular", false},
		{"setup", "", "fashion text tabular digits", true},
	} {
		cmd := exec.Command("make", "-n", c.target, "RUNFLAGS="+c.runflags)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make -n %s RUNFLAGS=%q: %v", c.target, c.runflags, err)
		}
		m := regexp.MustCompile(`SETUP_TASKS="([^"]*)" bash scripts/setup\.sh`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("make -n %s RUNFLAGS=%q runs no scripts/setup.sh:\n%s", c.target, c.runflags, out)
		}
		if got := strings.Join(strings.Fields(string(m[1])), " "); got != c.tasks {
			t.Errorf("make %s RUNFLAGS=%q prepares %q, want %q", c.target, c.runflags, got, c.tasks)
		}
		if got := strings.Contains(string(out), "scripts/mnist.sh"); got != c.mnist {
			t.Errorf("make %s RUNFLAGS=%q runs scripts/mnist.sh: %v, want %v", c.target, c.runflags, got, c.mnist)
		}
	}
}
