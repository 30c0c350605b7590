//go:build ignore

// Command mutants applies a fixed list of privacy- and correctness-
// critical mutations, each on its own, runs the tests that must catch
// each, and fails if any mutation survives (its tests pass). A mutation
// is applied through a build overlay (go help build: -overlay), never by
// rewriting the source, so the tree is not modified and several
// mutations are tested at a time: up to -j (8), of which up to -builds
// (the number of CPUs) are building. Run it from the module root:
//
//	go run scripts/mutants/main.go            # all mutations
//	go run scripts/mutants/main.go -only ledger-half
//	go run scripts/mutants/main.go -only ledger-half,clip-1.1
//	go run scripts/mutants/main.go -j 1       # one at a time
//	go run scripts/mutants/main.go -times t.tsv  # each one's wall, CPU and test time
//
// Each mutation names the one place it changes by an exact snippet that
// must occur exactly once in its file, so a refactoring that moves the
// code makes this command fail loudly instead of testing nothing. The
// list and the last results are in docs/mutants.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"browserfl/scripts/mutants/table"
)

// mutation is one entry of the list (package table).
type mutation = table.Mutation

// mutations is the list.
var mutations = table.All

func main() {
	only := flag.String("only", "", "run only the mutations with these names (comma-separated)")
	timeout := flag.Duration("timeout", 10*time.Minute, "per-mutation test timeout (a hang counts as killed)")
	jobs := flag.Int("j", 8, "mutations tested at the same time")
	builds := flag.Int("builds", runtime.NumCPU(), "mutations building (compiling, linking) at the same time")
	times := flag.String("times", "", "write each mutation's wall, CPU and test-run seconds to this file (tab-separated)")
	flag.Parse()
	if err := run(*only, *timeout, *jobs, *builds, *times); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

// outcome is what testing one mutation found.
type outcome struct {
	killed bool
	detail string
	err    error
	cost   cost
}

// cost is what testing one mutation took: wall time, the CPU time of go
// test and everything it waited for (compiler, linker, vet, the test
// binaries: the machine is shared, so CPU time is the steadier figure),
// and the part of the wall time the test binaries ran (the "ok"/"FAIL"
// lines' durations; the rest is building: compile, link, vet).
type cost struct {
	wall, cpu, tests time.Duration
}

func run(only string, timeout time.Duration, jobs, builds int, times string) error {
	// Check the whole list first: a stale snippet is an error, before
	// any test runs.
	var names []string
	if only != "" {
		names = strings.Split(only, ",")
	}
	var todo []mutation
	for _, m := range mutations {
		if err := m.Check("."); err != nil {
			return err
		}
		if only == "" || slices.Contains(names, m.Name) {
			todo = append(todo, m)
		}
	}
	if len(todo) < len(names) {
		return fmt.Errorf("-only %q: %d of its names are mutations", only, len(todo))
	}
	if len(todo) == 0 {
		return errors.New("no mutations")
	}
	tmp, err := os.MkdirTemp("", "browserfl-mutants-")
	if err != nil {
		return fmt.Errorf("overlay directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// On an early return, stop the tests still running and wait for them.
	ctx, cancel := context.WithCancel(ctx)
	var workers sync.WaitGroup
	defer workers.Wait()
	defer cancel()

	// Up to jobs mutations at a time; each result is printed in list
	// order as soon as it and those before it are known.
	done := make([]chan outcome, len(todo))
	for i := range done {
		done[i] = make(chan outcome, 1)
	}
	next := make(chan int)
	go func() {
		defer close(next)
		for _, i := range startOrder(todo) {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	// Up to jobs mutations at a time, but only builds of them building:
	// a mutation holds a build slot from the start of its go test to the
	// start of its first test binary. Building is CPU work; many tests
	// that kill a mutation mostly wait (a bound of 10 to 60 s on
	// something the mutation stops from happening), and those waits
	// overlap the next mutations' builds instead of holding a core.
	slots := make(chan struct{}, max(builds, 1))
	for range max(jobs, 1) {
		workers.Go(func() {
			for i := range next {
				killed, detail, c, err := try(ctx, todo[i], filepath.Join(tmp, strconv.Itoa(i)), timeout, slots)
				done[i] <- outcome{killed, detail, err, c}
			}
		})
	}
	fmt.Println("| mutation | what it breaks | tests run | result |")
	fmt.Println("|---|---|---|---|")
	var survived []string
	costs := make([]cost, len(todo))
	for i, m := range todo {
		var o outcome
		select {
		case o = <-done[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if o.err != nil {
			return fmt.Errorf("%s: %w", m.Name, o.err)
		}
		costs[i] = o.cost
		res := "killed: " + o.detail
		if !o.killed {
			res = "**SURVIVED**"
			survived = append(survived, m.Name)
		}
		target := ""
		if m.JS {
			target = " (js/wasm, under node)"
		}
		fmt.Printf("| `%s` | %s | `go test %s`%s | %s |\n", m.Name, m.Why, strings.Join(m.Pkgs, " "), target, res)
	}
	if err := reportCosts(todo, costs, times); err != nil {
		return err
	}
	if len(survived) > 0 {
		return fmt.Errorf("%d mutation(s) survived: %s", len(survived), strings.Join(survived, ", "))
	}
	fmt.Printf("all %d mutations killed\n", len(todo))
	return nil
}

// reportCosts prints where the time went (to stderr: the table on
// stdout is docs/mutants.md's) and writes every mutation's cost to
// the file times if it is set.
func reportCosts(todo []mutation, costs []cost, times string) error {
	var sum cost
	order := make([]int, len(todo))
	for i, c := range costs {
		sum.wall += c.wall
		sum.cpu += c.cpu
		sum.tests += c.tests
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(costs[b].cpu - costs[a].cpu) })
	fmt.Fprintf(os.Stderr, "mutants: %d mutations: wall %.0f s in all (%.0f s in test binaries, %.0f s building), CPU %.0f s\n",
		len(todo), sum.wall.Seconds(), sum.tests.Seconds(), (sum.wall - sum.tests).Seconds(), sum.cpu.Seconds())
	for _, i := range order[:min(10, len(order))] {
		c := costs[i]
		fmt.Fprintf(os.Stderr, "mutants:   %-36s CPU %5.1f s, wall %5.1f s (tests %5.1f s)\n", todo[i].Name, c.cpu.Seconds(), c.wall.Seconds(), c.tests.Seconds())
	}
	if times == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("mutation\tcpu_s\twall_s\ttests_s\tpkgs\n")
	for i, c := range costs {
		fmt.Fprintf(&b, "%s\t%.2f\t%.2f\t%.2f\t%s\n", todo[i].Name, c.cpu.Seconds(), c.wall.Seconds(), c.tests.Seconds(), strings.Join(todo[i].Pkgs, " "))
	}
	return os.WriteFile(times, []byte(b.String()), 0o644)
}

// testsRan sums the durations go test prints for each package it ran
// ("ok  \tpkg\t1.23s", "FAIL\tpkg\t1.23s"): the time in test binaries.
func testsRan(out string) time.Duration {
	var d time.Duration
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 3 || (strings.TrimSpace(f[0]) != "ok" && f[0] != "FAIL") {
			continue
		}
		if x, err := time.ParseDuration(strings.TrimSpace(f[2])); err == nil {
			d += x
		}
	}
	return d
}

// writeOverlay writes m's mutated files into dir, each numbered (two may
// share a base name) but the first, and an overlay (go help build) that
// puts them in place of their sources; it returns the overlay's path and
// each source with its mutated copy.
func writeOverlay(m mutation, dir string) (ovl string, files, dsts []string, err error) {
	orig, err := os.ReadFile(m.File)
	if err != nil {
		return "", nil, nil, err
	}
	mutated := bytes.Replace(orig, []byte(m.Old), []byte(m.New), 1)
	for _, e := range m.More {
		mutated = bytes.Replace(mutated, []byte(e.Old), []byte(e.New), 1)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, nil, err
	}
	files = []string{m.File}
	contents := [][]byte{mutated}
	for _, e := range m.Elsewhere {
		i := slices.Index(files, e.File)
		if i < 0 {
			b, err := os.ReadFile(e.File)
			if err != nil {
				return "", nil, nil, err
			}
			files, contents, i = append(files, e.File), append(contents, b), len(files)
		}
		contents[i] = bytes.Replace(contents[i], []byte(e.Old), []byte(e.New), 1)
	}
	replace := map[string]string{}
	dsts = make([]string, len(files))
	for i, f := range files {
		src, err := filepath.Abs(f)
		if err != nil {
			return "", nil, nil, err
		}
		dsts[i] = filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(f)))
		if i == 0 {
			dsts[i] = filepath.Join(dir, filepath.Base(f))
		}
		if err := os.WriteFile(dsts[i], contents[i], 0o644); err != nil {
			return "", nil, nil, err
		}
		replace[src] = dsts[i]
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err != nil {
		return "", nil, nil, err
	}
	ovl = filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovl, overlay, 0o644); err != nil {
		return "", nil, nil, err
	}
	return ovl, files, dsts, nil
}

// try writes the mutated file into dir and runs m's tests with a build
// overlay (go help build) that puts it in place of the source: the tree
// is never modified, so mutations can be tested side by side. The
// overlay is passed in GOFLAGS, so the builds a test runs itself (the
// e2e tests build the wasm page and cmd/coordinator with go build) see
// the mutation too. -failfast: the first failing test kills it.
func try(ctx context.Context, m mutation, dir string, timeout time.Duration, slots chan struct{}) (killed bool, detail string, c cost, err error) {
	ovl, files, dsts, err := writeOverlay(m, dir)
	if err != nil {
		return false, "", c, err
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return false, "", c, ctx.Err()
	}
	var freed sync.Once
	free := func() { freed.Do(func() { <-slots }) }
	defer free()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// -vet=off: vet is not a test (the vet stage of make test vets the
	// tree), and on a large package it is a tenth of the build. -w: the
	// test binary is linked without DWARF (nothing here reads it; stack
	// traces do not need it), a third less linking.
	// -json: the "start" event of the first test binary ends the build
	// (free); the text is the events' output, as go test prints it.
	// -toolexec=nice: compiler and linker at nice 10, the tests at the
	// usual priority: beside make test's other lanes the builds take the
	// CPU their tests leave (the build cache is the one without it).
	args := []string{"test", "-json", "-count=1", "-failfast", "-vet=off", "-ldflags=-w"}
	env := append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -overlay="+ovl+" -toolexec=nice"))
	if m.JS {
		root, err := goroot()
		if err != nil {
			return false, "", c, err
		}
		args = append(args, "-exec="+filepath.Join(root, "lib", "wasm", "go_js_wasm_exec"))
		env = append(env, "GOOS=js", "GOARCH=wasm")
	}
	cmd := exec.CommandContext(tctx, "go", append(args, m.Pkgs...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return false, "", c, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return false, "", c, err
	}
	var text strings.Builder
	for r := bufio.NewReader(stdout); ; {
		line, rerr := r.ReadBytes('\n')
		var ev struct{ Action, Output string }
		if json.Unmarshal(line, &ev) == nil {
			if ev.Action == "start" {
				free()
			}
			text.WriteString(ev.Output)
		} else {
			text.Write(line)
		}
		if rerr != nil {
			break
		}
	}
	runErr := cmd.Wait()
	free()
	c.wall = time.Since(start)
	out := text.String() + stderr.String()
	c.tests = testsRan(out)
	if ps := cmd.ProcessState; ps != nil {
		// The rusage of go test includes every process it waited for.
		c.cpu = ps.UserTime() + ps.SystemTime()
	}
	if ctx.Err() != nil {
		return false, "", c, ctx.Err()
	}
	if runErr == nil {
		return false, "", c, nil
	}
	if tctx.Err() != nil {
		return true, "tests did not finish within " + timeout.String(), c, nil
	}
	// A build error names the mutated copy: name the source instead.
	for i, f := range files {
		out = strings.ReplaceAll(out, dsts[i], f)
	}
	if notBuilt(out) {
		// A mutation that does not compile tests nothing.
		return false, "", c, fmt.Errorf("mutation %s does not build, so no test can kill it: %s", m.Name, firstFailure(out))
	}
	return true, firstFailure(out), c, nil
}

// goroot is the go command's GOROOT (go env GOROOT), where the runner of
// js/wasm test binaries lives.
var goroot = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
})

// startOrder is the order in which the mutations are started: those
// whose tests drive browsers (./e2e/: half a minute, mostly waiting on
// Chromium) first, so they overlap the many short ones instead of
// running alone at the end; the others in list order. Results are still
// printed in list order.
func startOrder(todo []mutation) []int {
	var first, rest []int
	for i, m := range todo {
		if slices.Contains(m.Pkgs, "./e2e/") {
			first = append(first, i)
		} else {
			rest = append(rest, i)
		}
	}
	return append(first, rest...)
}

// notBuilt reports whether go test output failed before any test ran: a
// package that did not build or did not pass vet, and no failing test.
func notBuilt(out string) bool {
	if strings.Contains(out, "--- FAIL: ") {
		return false
	}
	return strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") ||
		strings.Contains(out, "\n# ") && strings.Contains(out, "vet: ")
}

// firstFailure returns the name of the first failing test (or the build
// error) in go test output.
func firstFailure(out string) string {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "--- FAIL: ") {
			f := strings.Fields(strings.TrimPrefix(line, "--- FAIL: "))
			if len(f) > 0 {
				return f[0]
			}
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, ".go:") {
			return "build: " + strings.TrimSpace(line)
		}
	}
	return "tests failed"
}
