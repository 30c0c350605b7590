package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// goBuild builds pkg (go build ARGS -o dst pkg, from the module root,
// with env added to the environment) and leaves the binary at dst.
//
// The binary is linked into a shared directory, .cache/e2e-build/ under
// the module root (git-ignored), and copied to dst: go build relinks a
// target there only when its build ID changed, and the build ID hashes
// everything the binary is made of (its sources and those of its
// dependencies, build flags, toolchain, and the files a build overlay
// puts in place). So the e2e tests of make test's test stage, its lesson
// stage and any rerun link the wasm page and cmd/coordinator once
// between them instead of once per test binary, and a mutation
// (scripts/mutants/main.go applies each through an overlay in GOFLAGS)
// is always built in: the page is relinked with a mutated wasm/ file,
// while cmd/coordinator, which does not contain that file, is reused.
// An exclusive flock on .cache/e2e-build/lock keeps two test binaries
// from building at once, and each test serves or runs its own copy, so
// a later rebuild never changes a file in use.
func goBuild(env []string, args []string, pkg, dst string) error {
	root := repoRoot()
	dir := filepath.Join(root, ".cache", "e2e-build")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	// One target per package and target platform: the name carries
	// both, and go build's build ID check does the rest.
	goos, goarch := "native", ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "GOOS="); ok {
			goos = v
		}
		if v, ok := strings.CutPrefix(e, "GOARCH="); ok {
			goarch = v
		}
	}
	// Build tags choose other files: their own target.
	tags := ""
	for i, a := range args {
		if a == "-tags" && i+1 < len(args) {
			tags = "-tags-" + strings.ReplaceAll(args[i+1], ",", "-")
		}
	}
	shared := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(pkg, "./"), "/", "_")+"-"+goos+goarch+tags)
	if err := run(root, env, append(append([]string{"build"}, args...), "-o", shared, pkg)...); err != nil {
		return err
	}
	return copyFile(shared, dst)
}

// run runs the go command in dir.
func run(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
