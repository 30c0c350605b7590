package e2e

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/chromedp"
)

// profileMain, when above 0, makes BenchmarkPageLongTasks record a CPU
// profile of the page's main thread (V8's sampling profiler, 100 µs)
// over the training and log its busiest functions: that many by self
// time, and the Go packages by self time. A diagnosis, never asserted.
var profileMain = flag.Int("profile-main", 0, "BenchmarkPageLongTasks: log the page main thread's N busiest functions (a V8 CPU profile of the training)")

// mainProfile is a running CPU profile of a page's main thread.
type mainProfile struct{ br *browser }

// startMainProfile starts V8's sampling profiler on br's page.
func startMainProfile(b testing.TB, br *browser) *mainProfile {
	b.Helper()
	br.must(30*time.Second, "start the profiler", profiler.Enable(), profiler.SetSamplingInterval(100), profiler.Start())
	return &mainProfile{br: br}
}

// stop ends the profile and returns, in lines to log, the n functions
// with the most self time and the packages (the text of a Go function's
// name before its last dot) with the most, each in ms and as a share.
func (mp *mainProfile) stop(b testing.TB, n int) []string {
	b.Helper()
	var prof *profiler.Profile
	err := mp.br.run(60*time.Second, chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		prof, err = profiler.Stop().Do(ctx)
		return err
	}))
	if err != nil || prof == nil {
		b.Fatalf("stop the profiler: %v", err)
	}
	// Each sample's time is the delta to the next; a node's self time is
	// the sum over its samples.
	self := map[int64]float64{}
	for i, id := range prof.Samples {
		if i+1 < len(prof.TimeDeltas) {
			self[id] += float64(prof.TimeDeltas[i+1]) / 1000
		}
	}
	byFunc, byPkg := map[string]float64{}, map[string]float64{}
	var total, idle float64
	for _, nd := range prof.Nodes {
		ms := self[nd.ID]
		name := nd.CallFrame.FunctionName
		if name == "(idle)" || name == "(program)" {
			idle += ms
			continue
		}
		total += ms
		if name == "" {
			name = "(anonymous " + nd.CallFrame.URL + ")"
		}
		byFunc[name] += ms
		byPkg[goPackage(name)] += ms
	}
	lines := []string{fmt.Sprintf("main thread profile: %.0f ms busy (%.0f ms idle or outside JavaScript and WebAssembly) over %.1f s",
		total, idle, (prof.EndTime-prof.StartTime)/1e6)}
	lines = append(lines, top("function", byFunc, total, n)...)
	return append(lines, top("package", byPkg, total, n)...)
}

// top returns the n largest entries of m as lines.
func top(what string, m map[string]float64, total float64, n int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var out []string
	for i, k := range keys {
		if i == n {
			break
		}
		out = append(out, fmt.Sprintf("  %s %6.1f ms %5.1f%%  %s", what, m[k], 100*m[k]/max(total, 1e-9), k))
	}
	return out
}

// goPackage is the package part of a Go function's name as WebAssembly
// names it ("path/pkg.(*T).M" or "path/pkg.F"); other names are
// returned whole.
func goPackage(name string) string {
	slash := strings.LastIndexByte(name, '/')
	dot := strings.IndexByte(name[slash+1:], '.')
	if dot < 0 {
		return name
	}
	return name[:slash+1+dot]
}
