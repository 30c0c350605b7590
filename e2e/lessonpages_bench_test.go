package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/internal/loadtest"
	"browserfl/internal/loopback"
	"browserfl/shared/wire"
)

// BenchmarkLessonPages measures a lesson's wall time in real pages,
// shared noise against nc: what bin/loadtest -lesson measures with
// native device runtimes (docs/secagg.md, "Costs"), with each device a
// headless Chromium page whose Worker runs the device compiled to
// WebAssembly (the secure aggregation's client included). Two
// coordinators from the real binary, one per mode (-algorithm nc and
// -algorithm shared), each a lobby session of the default template (the
// "one lesson" preset sizes it at Start: M = m = 10, T = 200, 8 s
// deadline; the coordinator's 1 s pause between rounds; Fashion-MNIST),
// get ten pages each (a Chromium and profile each, loopback only) that
// join by code with the demo data. Both sessions are started, run two
// rounds (round 1 is where a shared-noise page derives the session's
// figures once; both warm the pages' code) and are paused; then one runs
// a block of lessonPagesK rounds while the other waits paused with its
// pages idle, in turn (nc, shared, shared, nc, ...; loadtest.RunLesson),
// lessonPagesBlocks blocks each for every b.N. Each mode's wall time is
// the sum of its blocks, from resume to the block's last commit. It
// prints RunLesson's lines (each block; each mode's rounds, wall time, s a
// round, round latency, the coordinator's CPU and bytes), what the
// paused pages cost, the pages' CPU time during the blocks, the load
// average before and after, and last "lesson pages: shared/nc wall = R",
// which it also reports as the metric shared/nc-wall. It asserts nothing
// about time. Run it with
//
//	go test ./e2e/ -run '^$' -bench LessonPages -benchtime 1x -timeout 30m
func BenchmarkLessonPages(b *testing.B) {
	webDir := pageBuild(b)
	bin := coordinatorBinary(b)
	load0 := loadAvg()
	start := time.Now()
	nc := startLessonPages(b, webDir, bin, "nc")
	shared := startLessonPages(b, webDir, bin, wire.SharedNoiseAlgorithm)
	fmt.Printf("lesson pages: %d pages in each of nc and shared joined in %v; memory available with %d pages: %s\n",
		lessonPagesN, time.Since(start).Round(time.Second), 2*lessonPagesN, memAvailable())

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	for _, s := range []*lessonPages{nc, shared} {
		s.begin(ctx)
	}
	// What a session's ten pages cost while it waits paused, as during
	// the other mode's blocks (both are paused here).
	idle0 := []float64{nc.cpu(), shared.cpu()}
	idleKinds := []map[string]float64{nc.cpuByKind(), shared.cpuByKind()}
	if err := loadtest.Sleep(ctx, 10*time.Second); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("lesson pages: paused, the pages' CPU: nc %.3f, shared %.3f CPU s a second (10 pages each, 10 s)\n",
		(nc.cpu()-idle0[0])/10, (shared.cpu()-idle0[1])/10)
	// kindsPerRound over 10 s as ten "rounds": ms a page and second.
	fmt.Printf("lesson pages: paused, by process kind, ms a page and second: nc %s; shared %s\n",
		kindsPerRound(idleKinds[0], nc.cpuByKind(), 10), kindsPerRound(idleKinds[1], shared.cpuByKind(), 10))

	blocks := lessonPagesBlocks * b.N
	// The preset's T = 200 rounds hold the two warm-up rounds and the
	// blocks; a larger -benchtime would wait for rounds that never come.
	if need := 2 + blocks*lessonPagesK; need > 200 {
		b.Fatalf("-benchtime %dx needs %d rounds a session, more than the lesson's 200: use at most %dx", b.N, need, 198/(lessonPagesBlocks*lessonPagesK))
	}
	fmt.Printf("lesson pages: %d pages in each of nc and shared; %d blocks of %d rounds each, alternating (the lesson's round gap and deadline)\n",
		lessonPagesN, blocks, lessonPagesK)
	cpu0 := []float64{nc.cpu(), shared.cpu()}
	kinds0 := []map[string]float64{nc.cpuByKind(), shared.cpuByKind()}
	from := []int{nc.side.Committed, shared.side.Committed}
	b.ResetTimer()
	r, err := loadtest.RunLesson(ctx, nc.side, shared.side, lessonPagesN, blocks, lessonPagesK, os.Stdout)
	b.StopTimer()
	if err != nil {
		nc.logTail(b)
		shared.logTail(b)
		b.Fatal(err)
	}
	perRound := func(s *lessonPages, i int) (float64, float64) {
		c := s.cpu() - cpu0[i]
		return c, c / float64(lessonPagesN*max(1, s.side.Committed-from[i]))
	}
	cn, rn := perRound(nc, 0)
	cs, rs := perRound(shared, 1)
	fmt.Printf("lesson pages: the pages' CPU from the first block to the last (paused time included): nc %.1f s, %.0f ms a page and round; shared %.1f s, %.0f ms a page and round\n",
		cn, 1000*rn, cs, 1000*rs)
	fmt.Printf("lesson pages: by process kind, ms a page and round: nc %s; shared %s\n",
		kindsPerRound(kinds0[0], nc.cpuByKind(), nc.side.Committed-from[0]), kindsPerRound(kinds0[1], shared.cpuByKind(), shared.side.Committed-from[1]))
	fmt.Printf("lesson pages: load average before %s, after %s\n", load0, loadAvg())
	fmt.Printf("lesson pages: shared/nc wall = %.3f\n", r)
	b.ReportMetric(r, "shared/nc-wall")
}

const (
	// lessonPagesN pages take part in each mode's session.
	lessonPagesN = 10
	// lessonPagesBlocks blocks of lessonPagesK rounds each, per mode and
	// b.N.
	lessonPagesBlocks, lessonPagesK = 4, 10
	// lessonPagesCode is both sessions' join code: internal/loadtest
	// reads a session's rounds under it.
	lessonPagesCode = "LOADTEST"
)

// lessonPages is one mode's coordinator and its pages.
type lessonPages struct {
	t     testing.TB
	side  *loadtest.LessonSide
	coord *process
	logf  *os.File
	pages []*browser
}

// startLessonPages starts the coordinator running algorithm alg in a
// lobby and joins lessonPagesN pages to it; they wait in the lobby. The
// pages close and the coordinator stops when the benchmark ends.
func startLessonPages(t testing.TB, webDir, bin, alg string) *lessonPages {
	t.Helper()
	logf, err := os.CreateTemp("", "browserfl-e2e-lessonpages-"+alg+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	s := &lessonPages{t: t, logf: logf, coord: &process{t: t, bin: bin, addr: loopback.Addr(t), dataDir: dataDir, log: logf,
		args: []string{"-lobby", "-join-code", lessonPagesCode, "-dataset", fashionDir, "-algorithm", alg}}}
	t.Cleanup(s.stop)
	s.coord.start()
	secret := teacherSecretIn(t, dataDir)
	s.side = &loadtest.LessonSide{Name: alg, Base: "http://" + s.coord.addr, Secret: secret, PID: s.coord.cmd.Process.Pid}
	srv := serve(t, pageHandler(webDir, proxyTo(s.coord.addr)))
	for i := range lessonPagesN {
		p, err := phone(t)
		if err != nil {
			t.Fatal(err)
		}
		s.pages = append(s.pages, p)
		if err := p.run(3*time.Minute, append(joinSteps(srv.URL, lessonPagesCode, fmt.Sprintf("Student %d", i+1), nil),
			chromedp.WaitVisible("#lobby", chromedp.ByID))...); err != nil {
			t.Fatalf("%s: page %d joining: %v\npage text: %s", alg, i+1, err, p.text())
		}
	}
	return s
}

// begin starts the session (the teacher's Start), lets it commit two
// rounds, pauses it and waits for the round then open: the first block
// resumes it.
func (s *lessonPages) begin(ctx context.Context) {
	s.t.Helper()
	if err := loadtest.Teacher(ctx, s.side.Base, s.side.Secret, "start"); err != nil {
		s.t.Fatalf("%s: %v", s.side.Name, err)
	}
	if err := loadtest.WaitRounds(ctx, s.side.Base, 2, 100*time.Millisecond); err != nil {
		s.logTail(s.t)
		s.t.Fatalf("%s: %v", s.side.Name, err)
	}
	if err := loadtest.Teacher(ctx, s.side.Base, s.side.Secret, "pause"); err != nil {
		s.t.Fatalf("%s: %v", s.side.Name, err)
	}
	last, err := loadtest.LastCommitted(ctx, s.side.Base, 2)
	if err == nil {
		s.side.Committed, err = loadtest.Settle(ctx, s.side.Base, last)
	}
	if err != nil {
		s.t.Fatalf("%s: %v", s.side.Name, err)
	}
}

// cpu returns the CPU seconds the side's Chromium processes (each
// browser and every process under it) have used so far.
func (s *lessonPages) cpu() float64 {
	var sum float64
	for k, c := range s.cpuByKind() {
		if !strings.Contains(k, " ") { // not a renderer's thread, counted in its process
			sum += c
		}
	}
	return sum
}

// cpuByKind returns cpu's seconds by Chromium process kind (the
// --type= of its command line: renderer, gpu-process, utility, ...;
// "browser" without one), and the renderers' threads (threadCPU) under
// "renderer " and the thread's kind (also counted in "renderer").
func (s *lessonPages) cpuByKind() map[string]float64 {
	var pids []int
	for _, p := range s.pages {
		if c := chromedp.FromContext(p.ctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
			pids = append(pids, c.Browser.Process().Pid)
		}
	}
	return treeCPU(pids)
}

// kindsPerRound formats the CPU by process kind between before and
// after, in ms a page and round.
func kindsPerRound(before, after map[string]float64, rounds int) string {
	kinds := make([]string, 0, len(after))
	for k := range after {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, 1000*(after[k]-before[k])/float64(lessonPagesN*max(1, rounds))))
	}
	return strings.Join(parts, ", ")
}

// stop closes the pages and stops the coordinator.
func (s *lessonPages) stop() {
	for _, p := range s.pages {
		p.close()
	}
	if s.coord.exited != nil { // started
		s.coord.stop()
	}
	s.logf.Close()
}

// logTail logs the end of the coordinator's log.
func (s *lessonPages) logTail(t testing.TB) {
	b, err := os.ReadFile(s.logf.Name())
	if err != nil {
		t.Logf("%s: coordinator log: %v", s.side.Name, err)
		return
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	t.Logf("%s: the coordinator's log (%s), last lines:\n%s", s.side.Name, s.logf.Name(), strings.Join(lines[max(0, len(lines)-20):], "\n"))
}

// treeCPU sums the user and system CPU seconds of the processes roots
// and all their descendants alive now (/proc; USER_HZ = 100), by
// Chromium process kind (the --type= of the command line; "browser"
// without one).
func treeCPU(roots []int) map[string]float64 {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	parent, cpu := map[int]int{}, map[int]float64{}
	for _, path := range stats {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		parent[pid], cpu[pid] = ppid, (ut+st)/100
	}
	in := map[int]bool{}
	for _, r := range roots {
		in[r] = true
	}
	sum := map[string]float64{}
	for pid, c := range cpu {
		for p := pid; p > 1; p = parent[p] {
			if in[p] {
				kind := processKind(pid)
				sum[kind] += c
				if kind == "renderer" {
					// The page's main thread and its Worker, apart.
					for name, tc := range threadCPU(pid) {
						sum["renderer "+name] += tc
					}
				}
				break
			}
		}
	}
	return sum
}

// threadCPU returns the CPU seconds of a renderer's threads (/proc/pid/task):
// its main thread ("main": the page's JavaScript, its WebAssembly, style,
// layout and paint), its Worker ("worker") and V8's helper threads
// ("pool": compiling WebAssembly, the garbage collector's marking).
func threadCPU(pid int) map[string]float64 {
	out := map[string]float64{}
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/[0-9]*/stat", pid))
	for _, path := range stats {
		tid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		name := s[open+1 : end]
		switch {
		case tid == pid:
			name = "main"
		case strings.HasPrefix(name, "DedicatedWorker"):
			name = "worker"
		case strings.HasPrefix(name, "ThreadPool"):
			name = "pool"
		default:
			continue
		}
		out[name] += (ut + st) / 100
	}
	return out
}

// processKind is the --type= of process pid's command line, "browser"
// without one.
func processKind(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	// Chromium rewrites its children's command lines as one string, the
	// arguments apart by spaces.
	for _, arg := range strings.FieldsFunc(string(b), func(r rune) bool { return r == 0 || r == ' ' }) {
		if t, ok := strings.CutPrefix(arg, "--type="); ok {
			return t
		}
	}
	return "browser"
}

// loadAvg returns /proc/loadavg's three load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// memAvailable returns /proc/meminfo's MemAvailable.
func memAvailable() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemAvailable:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	return "unknown"
}
