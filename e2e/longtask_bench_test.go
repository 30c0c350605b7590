package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
)

// BenchmarkPageLongTasks measures how long the page's main thread is
// blocked while it trains, with the Long Tasks API (every task over
// 50 ms): one headless page joins a session of the real coordinator
// (paused until the trace starts) with its demo data and takes part in every round (50 rounds, 64
// samples each, the default session's device step), then the benchmark
// reports the longest main-thread task after "Start helping", the number
// of long tasks, and the page's own measures (fl-prepare: the device
// step; fl-render: one render of the page; fl-save: one durable save).
// Long tasks are wall-clock durations and include time spent waiting for
// a CPU core, so it also records a Chromium trace of the training (from
// the first round to the end) and reports the page's main thread in
// thread CPU time: its total, its longest task, and the worker thread's
// total. It
// asserts nothing (docs/browser.md has figures and the load at the
// time). Run it with
//
//	go test -run '^$' -bench PageLongTasks -benchtime 3x ./e2e
//
// With -args -profile-main N it also logs the main thread's busiest
// functions and packages (profile_test.go).
//
// The same file runs on a tree from before the worker (the page trained
// on its main thread) for the comparison in docs/browser.md.
func BenchmarkPageLongTasks(b *testing.B) {
	webDir := pageBuild(b)
	var longest, count, prepare, render, mainCPU, mainLongest, workerCPU []float64
	for i := 0; i < b.N; i++ {
		code := fmt.Sprintf("LONG-%d", i)
		// The real coordinator: e2eSession's logreg session of one device
		// (b = 64, clip 1, eta 1, D = 10, rho_p = 2), 50 rounds; its demo
		// shard holds T b = 3,200 samples.
		o := startOnePage(b, webDir, code, "-T", "50", "-b", "64", "-clip", "1", "-eta", "1", "-D", "10", "-rho", "2",
			"-round-gap", "10ms")
		// Paused until the trace runs: the trace covers training.
		o.teacher("pause")
		br := launch(b, b.TempDir())
		openPage(b, br, o.url+"/?code="+code, "")
		tr := startTrace(b, br)
		var mp *mainProfile
		if *profileMain > 0 {
			mp = startMainProfile(b, br)
		}
		o.teacher("resume")
		br.must(10*time.Minute, "session finished",
			chromedp.Poll(`["finished", "stopped"].includes((document.getElementById("conn")||{}).textContent)`, nil,
				chromedp.WithPollingTimeout(9*time.Minute)))
		if mp != nil {
			for _, l := range mp.stop(b, *profileMain) {
				fmt.Println(l)
			}
		}
		threads := tr.stop(b)
		r := readTasks(b, br)
		var worst float64
		n := 0
		for _, e := range r.tasks {
			if e.Start >= r.train {
				n++
				worst = math.Max(worst, e.Duration)
			}
		}
		var pm, rm float64
		br.eval(`Math.max(0, ...performance.getEntriesByName("fl-prepare").map(e => e.duration))`, &pm)
		br.eval(`Math.max(0, ...performance.getEntriesByName("fl-render").filter(e => e.startTime >= `+fmt.Sprint(r.train)+`).map(e => e.duration))`, &rm)
		var renders int
		br.eval(`performance.getEntriesByName("fl-render").filter(e => e.startTime >= `+fmt.Sprint(r.train)+`).length`, &renders)
		b.Logf("run %d: %d updates; main thread during training: %d long tasks, longest %.0f ms; %d renders, fl-prepare max %.0f ms, fl-render max %.0f ms (%s)",
			i, sentUpdates(br), n, worst, renders, pm, rm, r.parts)
		longest, count, prepare, render = append(longest, worst), append(count, float64(n)), append(prepare, pm), append(render, rm)
		main, worker := threads["CrRendererMain"], threads["DedicatedWorker thread"]
		b.Logf("run %d: trace of the training: main thread %d tasks, CPU %.0f ms in all, longest task %.1f ms CPU (%.1f ms wall); worker thread CPU %.0f ms, longest task %.1f ms CPU",
			i, main.tasks, main.cpu, main.longestCPU, main.longestWall, worker.cpu, worker.longestCPU)
		mainCPU, mainLongest, workerCPU = append(mainCPU, main.cpu), append(mainLongest, main.longestCPU), append(workerCPU, worker.cpu)
		br.close()
		o.stop()
	}
	b.ReportMetric(maxOf(longest), "longest-task-ms")
	b.ReportMetric(mean(count), "long-tasks/run")
	b.ReportMetric(maxOf(prepare), "prepare-max-ms")
	b.ReportMetric(maxOf(render), "render-max-ms")
	b.ReportMetric(mean(mainCPU), "main-cpu-ms/run")
	b.ReportMetric(maxOf(mainLongest), "main-longest-cpu-ms")
	b.ReportMetric(mean(workerCPU), "worker-cpu-ms/run")
	b.ReportMetric(0, "ns/op")
	b.Logf("longest main-thread task per run (ms): %s", join(longest))
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func join(v []float64) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprintf("%.0f", x))
	}
	return strings.Join(parts, ", ")
}

// trace collects a Chromium trace of the browser's threads (top-level
// tasks with their wall and thread CPU durations).
type trace struct {
	br     *browser
	mu     sync.Mutex
	events []traceEvent
	done   chan struct{}
}

type traceEvent struct {
	Name string  `json:"name"`
	Ph   string  `json:"ph"`
	Pid  int64   `json:"pid"`
	Tid  int64   `json:"tid"`
	Ts   float64 `json:"ts"`   // microseconds
	Dur  float64 `json:"dur"`  // wall, microseconds
	Tdur float64 `json:"tdur"` // thread CPU, microseconds
	Args struct {
		Name string `json:"name"`
	} `json:"args"`
}

// threadLoad sums one thread's top-level tasks (milliseconds).
type threadLoad struct {
	tasks                        int
	cpu, longestCPU, longestWall float64
}

func startTrace(b testing.TB, br *browser) *trace {
	b.Helper()
	tr := &trace{br: br, done: make(chan struct{})}
	chromedp.ListenTarget(br.ctx, func(ev any) {
		switch e := ev.(type) {
		case *tracing.EventDataCollected:
			tr.mu.Lock()
			for _, v := range e.Value {
				var te traceEvent
				if json.Unmarshal([]byte(v), &te) == nil {
					tr.events = append(tr.events, te)
				}
			}
			tr.mu.Unlock()
		case *tracing.EventTracingComplete:
			close(tr.done)
		}
	})
	br.must(30*time.Second, "start tracing", tracing.Start().
		WithTraceConfig(&tracing.TraceConfig{IncludedCategories: []string{"toplevel", "__metadata"}}).
		WithTransferMode(tracing.TransferModeReportEvents))
	return tr
}

// stop ends the trace and returns the load of each thread, by thread
// name (the busiest thread of each name: one page, one worker).
func (tr *trace) stop(b testing.TB) map[string]threadLoad {
	b.Helper()
	tr.br.must(30*time.Second, "stop tracing", tracing.End())
	select {
	case <-tr.done:
	case <-time.After(60 * time.Second):
		b.Fatal("the trace did not complete")
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	type key struct{ pid, tid int64 }
	names := map[key]string{}
	tasks := map[key][]traceEvent{}
	for _, e := range tr.events {
		k := key{e.Pid, e.Tid}
		switch {
		case e.Ph == "M" && e.Name == "thread_name":
			names[k] = e.Args.Name
		case e.Ph == "X" && e.Name == "ThreadControllerImpl::RunTask":
			tasks[k] = append(tasks[k], e)
		}
	}
	out := map[string]threadLoad{}
	for k, evs := range tasks {
		sort.Slice(evs, func(i, j int) bool { return evs[i].Ts < evs[j].Ts })
		var l threadLoad
		end := math.Inf(-1)
		for _, e := range evs {
			if e.Ts < end {
				continue // nested in the task before
			}
			end = e.Ts + e.Dur
			l.tasks++
			l.cpu += e.Tdur / 1000
			l.longestCPU = math.Max(l.longestCPU, e.Tdur/1000)
			l.longestWall = math.Max(l.longestWall, e.Dur/1000)
		}
		if n := names[k]; l.cpu > out[n].cpu {
			out[n] = l
		}
	}
	return out
}
