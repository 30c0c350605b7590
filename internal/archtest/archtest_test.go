package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// rule: no package matching pkgs (and none of except) depends on a
// package matching forbid, directly or through others. A pattern is an
// import path, or a path ending in "/..." for it and everything under it.
type rule struct {
	pkgs, except, forbid []string
	why                  string
}

// rules are the layering rules, all of them (doc.go draws the layers).
var rules = []rule{
	{
		pkgs: []string{"browserfl/..."}, except: []string{"browserfl/cmd/..."},
		forbid: []string{"browserfl/cmd/..."},
		why:    "the commands are wiring: nothing imports them",
	},
	{
		pkgs:   []string{"browserfl/shared/..."},
		forbid: []string{"browserfl/coordinator/...", "browserfl/device/...", "browserfl/sim/...", "browserfl/wasm/...", "browserfl/e2e/..."},
		why:    "shared/ is the pure core the runtimes and the page share; it knows none of them",
	},
	{
		pkgs: []string{"browserfl/shared/wire"},
		forbid: []string{"browserfl", "browserfl/cmd/...", "browserfl/coordinator/...", "browserfl/device/...", "browserfl/e2e/...",
			"browserfl/engine/...", "browserfl/internal/...", "browserfl/scripts/...", "browserfl/sim/...", "browserfl/wasm/...", "browserfl/web/...",
			"browserfl/shared/dataset/...", "browserfl/shared/lesson/...", "browserfl/shared/mechanism/...", "browserfl/shared/model/...",
			"browserfl/shared/optim/...", "browserfl/shared/plan/...", "browserfl/shared/privacy/...", "browserfl/shared/scatter/...", "browserfl/shared/task/..."},
		why: "the protocol is a leaf: devices in the field speak it, whatever the algorithms become " +
			"(its secure-aggregation frames carry shared/secagg's messages, a leaf itself)",
	},
	{
		pkgs:   []string{"browserfl/shared/secagg"},
		forbid: []string{"browserfl/..."},
		why:    "secure aggregation is a leaf the protocol carries: it knows no algorithm, runtime or frame",
	},
	{
		pkgs:   []string{"browserfl/shared/session"},
		forbid: []string{"browserfl/..."},
		why:    "the session's parameters are a leaf: the protocol and the algorithms share the type without importing each other",
	},
	{
		pkgs:   []string{"browserfl/shared/optim/..."},
		forbid: []string{"browserfl/shared/wire", "browserfl/shared/plan/...", "browserfl/shared/lesson/..."},
		why:    "the algorithms and the server's tests of their messages know nothing of the protocol or the planner; shared/plan converts the session's wire form",
	},
	{
		pkgs:   []string{"browserfl/shared/privacy/...", "browserfl/shared/mechanism/...", "browserfl/shared/model/...", "browserfl/shared/dataset/..."},
		forbid: []string{"browserfl/shared/optim/...", "browserfl/shared/plan/...", "browserfl/shared/lesson/...", "browserfl/shared/wire/...", "browserfl/shared/task/...", "browserfl/shared/scatter/..."},
		why:    "accounting, noise, models and data sit below the algorithms, the protocol, the task definitions and the features",
	},
	{
		pkgs:   []string{"browserfl/shared/task/..."},
		forbid: []string{"browserfl/shared/optim/...", "browserfl/shared/plan/...", "browserfl/shared/lesson/...", "browserfl/shared/wire/..."},
		why:    "a task says what a row is and how it encodes (over shared/dataset); the algorithms and the protocol carry its dimensions, not the reverse",
	},
	{
		pkgs:   []string{"browserfl/shared/scatter/..."},
		forbid: []string{"browserfl/shared/optim/...", "browserfl/shared/plan/...", "browserfl/shared/lesson/...", "browserfl/shared/wire/...", "browserfl/shared/task/..."},
		why:    "features are a function of one image (over shared/dataset): the algorithms train on them, they know nothing of training",
	},
	{
		pkgs:   []string{"browserfl/shared/plan/..."},
		forbid: []string{"browserfl/shared/lesson/..."},
		why:    "the planner sits below the classroom preset that uses it",
	},
	{
		pkgs:   []string{"browserfl/coordinator/..."},
		forbid: []string{"browserfl/device/...", "browserfl/sim/...", "browserfl/wasm/..."},
		why:    "the coordinator speaks to devices only through shared/ (the protocol, the planner, the algorithms)",
	},
	{
		pkgs:   []string{"browserfl/coordinator/store"},
		forbid: []string{"browserfl/..."},
		why:    "the store is a leaf (bbolt and the standard library): it knows no session, connection or protocol",
	},
	{
		pkgs:   []string{"browserfl/coordinator/bus"},
		forbid: []string{"browserfl/coordinator", "browserfl/coordinator/store", "browserfl/engine/...", "browserfl/shared/optim/...", "browserfl/shared/plan/..."},
		why:    "the cluster bus carries envelopes and keys; the session node and the edge give them their meaning",
	},
	{
		pkgs:   []string{"browserfl/coordinator/gate"},
		forbid: []string{"browserfl/coordinator", "browserfl/coordinator/store", "browserfl/coordinator/bus", "browserfl/engine/...", "browserfl/shared/optim/...", "browserfl/shared/plan/..."},
		why:    "the admission gate answers who may knock and how often; it knows no session, store or bus",
	},
	{
		pkgs:   []string{"browserfl/coordinator/metrics"},
		forbid: []string{"browserfl/..."},
		why:    "the counters and their exposition are a leaf: they know no session, connection or protocol",
	},
	{
		pkgs:   []string{"browserfl/coordinator/wsconn"},
		forbid: []string{"browserfl/coordinator", "browserfl/coordinator/store", "browserfl/engine/...", "browserfl/shared/optim/...", "browserfl/shared/plan/..."},
		why:    "the device-facing connections read, limit and queue frames; what a frame means is the session's or the edge's (a Handler)",
	},
	{
		pkgs:   []string{"browserfl/coordinator/shards"},
		forbid: []string{"browserfl/coordinator", "browserfl/coordinator/store", "browserfl/coordinator/bus", "browserfl/coordinator/wsconn", "browserfl/engine/..."},
		why:    "the demo's data shards are served from a training set; they know no session or connection",
	},
	{
		pkgs:   []string{"browserfl/coordinator/edge"},
		forbid: []string{"browserfl/coordinator", "browserfl/coordinator/store", "browserfl/coordinator/shards", "browserfl/engine"},
		why:    "an edge holds devices for a session run elsewhere: it knows the session only through the bus (envelopes, marks, the session's parameters), never its core, store or round loop; it runs the engine's check stage (engine/check) on its devices' messages, as the core does on its own",
	},
	{
		pkgs: []string{"browserfl/coordinator/..."}, except: []string{"browserfl/coordinator/edge"},
		forbid: []string{"browserfl/coordinator/edge"},
		why:    "the edge is a process of its own (cmd/coordinator -role edge): the session core and its parts know it only through the bus",
	},
	{
		pkgs: []string{"browserfl/coordinator/..."}, except: []string{"browserfl/coordinator/sessions"},
		forbid: []string{"browserfl/coordinator/sessions"},
		why:    "the Host of sessions is a shell over the session core (it opens stores, builds Coordinators, routes requests): the core and its parts never import it",
	},
	{
		pkgs: []string{"browserfl/coordinator/..."}, except: []string{"browserfl/coordinator/api", "browserfl/coordinator/sessions"},
		forbid: []string{"browserfl/coordinator/api"},
		why:    "the session's HTTP API sits above the session core and reads a session only through api.Session: the core and its parts never import it",
	},
	{
		pkgs:   []string{"browserfl/coordinator/site"},
		forbid: []string{"browserfl/coordinator", "browserfl/coordinator/store", "browserfl/coordinator/bus", "browserfl/coordinator/gate", "browserfl/coordinator/wsconn", "browserfl/coordinator/metrics", "browserfl/coordinator/shards", "browserfl/engine/...", "browserfl/shared/optim/...", "browserfl/shared/plan/..."},
		why:    "the site (page assets, dashboard files, headers, join URLs, the model document) knows no session, store or connection: the core and the edge build their handlers over it",
	},
	{
		pkgs: []string{"browserfl/coordinator/..."}, except: []string{"browserfl/coordinator/sessionnode"},
		forbid: []string{"browserfl/coordinator/sessionnode"},
		why:    "the session node is the cluster's shell over the session core (it reads it through sessionnode.Session; the core calls it back through coordinator.Relay): only cmd/coordinator wires it",
	},
	{
		pkgs:   []string{"browserfl/coordinator/sessionnode"},
		forbid: []string{"browserfl/coordinator/api", "browserfl/coordinator/sessions", "browserfl/coordinator/shards"},
		why:    "the session node carries a session's devices over the bus: it serves no HTTP and holds no other session",
	},
	{
		pkgs:   []string{"browserfl/coordinator/view"},
		forbid: []string{"browserfl/coordinator", "browserfl/coordinator/store", "browserfl/coordinator/bus", "browserfl/coordinator/gate", "browserfl/coordinator/wsconn", "browserfl/coordinator/metrics", "browserfl/coordinator/shards", "browserfl/engine/..."},
		why:    "what a session shows is plain types the core fills and the API serves: they know no session, store or connection",
	},
	{
		pkgs:   []string{"browserfl/engine/..."},
		forbid: []string{"browserfl/coordinator/...", "browserfl/device/...", "browserfl/sim/...", "browserfl/wasm/..."},
		why:    "the round engine is the rules both shells (the coordinator, the simulator) drive: it knows neither",
	},
	{
		pkgs:   []string{"browserfl/shared/..."},
		forbid: []string{"browserfl/engine/..."},
		why:    "the engine sits above shared/",
	},
	{
		pkgs:   []string{"browserfl/device/..."},
		forbid: []string{"browserfl/coordinator/...", "browserfl/sim/...", "browserfl/wasm/..."},
		why:    "the device runtime knows the coordinator only through the protocol",
	},
	{
		pkgs:   []string{"browserfl/cmd/coordinator"},
		forbid: []string{"browserfl/device/...", "browserfl/sim/...", "browserfl/wasm/..."},
		why:    "the coordinator's binary links no device runtime, simulator or page: the commands share the session's type (shared/session) and flags (internal/sessionflag), which link none of them",
	},
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	Error      *struct{ Err string }
}

// match reports whether path matches pattern.
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, path) })
}

// violations returns every broken rule in the graph of pkgs (a package's
// imports outside pkgs, the standard library's, are leaves), one line
// each with the shortest import chain that breaks it.
func violations(pkgs []pkg, rules []rule) []string {
	imports := map[string][]string{}
	for _, p := range pkgs {
		imports[p.ImportPath] = p.Imports
	}
	var out []string
	for _, p := range pkgs {
		for _, r := range rules {
			if !matchAny(r.pkgs, p.ImportPath) || matchAny(r.except, p.ImportPath) {
				continue
			}
			// Breadth first from p: the first forbidden package reached
			// along each path, by the shortest chain.
			prev := map[string]string{p.ImportPath: ""}
			queue := []string{p.ImportPath}
			for len(queue) > 0 {
				cur := queue[0]
				queue = queue[1:]
				for _, next := range imports[cur] {
					if _, seen := prev[next]; seen {
						continue
					}
					prev[next] = cur
					if matchAny(r.forbid, next) {
						chain := []string{next}
						for at := cur; at != ""; at = prev[at] {
							chain = append(chain, at)
						}
						slices.Reverse(chain)
						out = append(out, fmt.Sprintf("%s (%s)", strings.Join(chain, " -> "), r.why))
						continue
					}
					queue = append(queue, next)
				}
			}
		}
	}
	return out
}

// list returns the module's packages as go list sees them under env.
func list(t *testing.T, env ...string) []pkg {
	t.Helper()
	b := goList(t, env, "-e", "-json=ImportPath,Imports,Error", "browserfl/...")
	var pkgs []pkg
	for dec := json.NewDecoder(bytes.NewReader(b)); ; {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list %v: %v", env, err)
		}
		if p.Error != nil {
			t.Errorf("go list %v: %s: %s", env, p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// goList runs go list with args under env and returns its output.
func goList(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v %v: %v\n%s", args, env, err, stderr.Bytes())
	}
	return b
}

// TestLayers: the module's code, native and for the page (GOOS=js), keeps
// every rule.
func TestLayers(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
	}{{"native", nil}, {"js/wasm", []string{"GOOS=js", "GOARCH=wasm"}}} {
		pkgs := list(t, tc.env...)
		if len(pkgs) < 20 {
			t.Fatalf("%s: go list found %d packages of the module, want them all", tc.name, len(pkgs))
		}
		for _, v := range violations(pkgs, rules) {
			t.Errorf("%s: forbidden import: %s", tc.name, v)
		}
	}
}

// TestViolationsFound: the checker finds a forbidden import directly and
// through another package, names the chain, and lets the allowed ones be
// (the planner and the coordinator import wire; one command imports
// another). Planted: the session type importing the accounting, and the
// coordinator's command reaching the device runtime through the flags
// package.
func TestViolationsFound(t *testing.T) {
	graph := []pkg{
		{ImportPath: "browserfl/coordinator", Imports: []string{"fmt", "browserfl/shared/plan"}},
		{ImportPath: "browserfl/coordinator/edge", Imports: []string{"browserfl/device"}},
		{ImportPath: "browserfl/shared/plan", Imports: []string{"browserfl/shared/optim", "browserfl/shared/wire"}},
		{ImportPath: "browserfl/shared/optim", Imports: []string{"browserfl/shared/wirefmt"}},
		{ImportPath: "browserfl/shared/wirefmt", Imports: []string{"browserfl/shared/wire"}},
		{ImportPath: "browserfl/shared/wire", Imports: []string{"strings"}},
		{ImportPath: "browserfl/device", Imports: []string{"browserfl/shared/plan"}},
		{ImportPath: "browserfl/cmd/device", Imports: []string{"browserfl/device"}},
		{ImportPath: "browserfl/cmd/other", Imports: []string{"browserfl/cmd/device"}},
		{ImportPath: "browserfl/sim", Imports: []string{"browserfl/cmd/device"}},
		{ImportPath: "browserfl/shared/session", Imports: []string{"math", "browserfl/shared/privacy"}},
		{ImportPath: "browserfl/shared/privacy", Imports: []string{"math"}},
		{ImportPath: "browserfl/cmd/coordinator", Imports: []string{"browserfl/coordinator", "browserfl/internal/sessionflag"}},
		{ImportPath: "browserfl/internal/sessionflag", Imports: []string{"browserfl/shared/session", "browserfl/device"}},
	}
	got := violations(graph, rules)
	for i, v := range got {
		got[i], _, _ = strings.Cut(v, " (")
	}
	slices.Sort(got)
	want := []string{
		"browserfl/cmd/coordinator -> browserfl/internal/sessionflag -> browserfl/device",
		"browserfl/coordinator/edge -> browserfl/device",
		"browserfl/shared/optim -> browserfl/shared/wirefmt -> browserfl/shared/wire",
		"browserfl/shared/session -> browserfl/shared/privacy",
		"browserfl/sim -> browserfl/cmd/device",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// heavyForPage are packages the page (GOOS=js) must not link: an HTTP
// client and TLS it never uses (it fetches with the browser's fetch and
// dials with the browser's WebSocket, wasm/socket), which made about
// 1.3 MB of app.wasm that every student downloads and every page
// compiles.
var heavyForPage = []string{"net/http", "crypto/tls", "github.com/coder/websocket"}

// linked returns which of the packages want the package root links for
// GOOS=js GOARCH=wasm, directly or not.
func linked(t *testing.T, root string, want []string) []string {
	t.Helper()
	b := goList(t, []string{"GOOS=js", "GOARCH=wasm"}, "-deps", "-f", "{{.ImportPath}}", root)
	var got []string
	for _, p := range strings.Fields(string(b)) {
		if slices.Contains(want, p) {
			got = append(got, p)
		}
	}
	return got
}

// TestPageLinksNoHTTPClient: the page's program links none of
// heavyForPage. Planted: the websocket library the native device uses
// links net/http for js too, and the check sees it.
func TestPageLinksNoHTTPClient(t *testing.T) {
	if got := linked(t, "browserfl/wasm", heavyForPage); len(got) > 0 {
		t.Errorf("the page (browserfl/wasm, GOOS=js) links %v", got)
	}
	if got := linked(t, "github.com/coder/websocket", heavyForPage); !slices.Contains(got, "net/http") {
		t.Errorf("planted: github.com/coder/websocket for js links %v, want net/http found", got)
	}
}
