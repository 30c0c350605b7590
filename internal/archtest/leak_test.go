package archtest

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// goleakExempt names the packages (directories, slash-separated, from
// the module root) that start goroutines and are not checked by goleak,
// each with why. An entry that no longer starts a goroutine, or whose
// tests now call goleak, is itself a finding: the list only shrinks.
var goleakExempt = map[string]string{
	"wasm": "the page's main package runs only in a browser tab (the DOM, vugu, a Worker); it has no test binary to end, " +
		"its goroutines live as long as the tab, and the e2e tests drive it",
}

// goleakCalls are the goleak functions that check for leaked goroutines.
var goleakCalls = []string{"VerifyTestMain", "VerifyNone", "Find"}

// goroutineStart returns what in f starts a goroutine ("go statement",
// "x.Go", "time.AfterFunc") and where, or "" if nothing does. A call of a
// method named Go counts whatever its receiver (sync.WaitGroup.Go,
// errgroup.Group.Go): the check reads syntax, not types.
func goroutineStart(fset *token.FileSet, f *ast.File) (what string, at token.Position) {
	ast.Inspect(f, func(n ast.Node) bool {
		if what != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			what, at = "go statement", fset.Position(n.Pos())
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				break
			}
			if sel.Sel.Name == "Go" {
				what, at = "a call of .Go", fset.Position(n.Pos())
			} else if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" && sel.Sel.Name == "AfterFunc" {
				what, at = "time.AfterFunc", fset.Position(n.Pos())
			}
		}
		return what == ""
	})
	return what, at
}

// callsGoleak reports whether f imports go.uber.org/goleak and calls one
// of goleakCalls through it (a mention in a comment or a string does not
// count).
func callsGoleak(f *ast.File) bool {
	name := ""
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err == nil && p == "go.uber.org/goleak" {
			name = "goleak"
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" || name == "_" || name == "." {
		return false
	}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == name && slices.Contains(goleakCalls, sel.Sel.Name) {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// ignored reports whether f is built only with the tag "ignore"
// (//go:build ignore): a program run as `go run file.go` (the scripts),
// part of no package and of no test binary.
func ignored(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			if x, err := constraint.Parse(c.Text); err == nil {
				if tag, ok := x.(*constraint.TagExpr); ok && tag.Tag == "ignore" {
					return true
				}
			}
		}
	}
	return false
}

// leakViolations walks fsys (the module's root) and lists every package
// directory whose non-test code starts a goroutine while none of its test
// files calls goleak, and every exemption that is stale. Every .go file
// counts, whatever its build constraints (the page's js/wasm code too),
// but one built only with the tag ignore (a `go run file.go` script).
// Test data (testdata/), the datasets (data/), node_modules and dot
// directories are not read.
func leakViolations(fsys fs.FS, exempt map[string]string) ([]string, error) {
	type pkgDir struct {
		start  string // the first goroutine start found, "file:line (what)"
		goleak bool
	}
	dirs := map[string]*pkgDir{}
	fset := token.NewFileSet()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if base := d.Name(); p != "." && (strings.HasPrefix(base, ".") || base == "testdata" || base == "node_modules" || base == "data") {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", p, err)
		}
		if ignored(f) {
			return nil
		}
		dir := path.Dir(p)
		if dirs[dir] == nil {
			dirs[dir] = &pkgDir{}
		}
		pd := dirs[dir]
		if strings.HasSuffix(p, "_test.go") {
			pd.goleak = pd.goleak || callsGoleak(f)
		} else if what, at := goroutineStart(fset, f); what != "" && pd.start == "" {
			pd.start = fmt.Sprintf("%s:%d (%s)", at.Filename, at.Line, what)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for dir, pd := range dirs {
		_, exempted := exempt[dir]
		switch {
		case pd.start != "" && !pd.goleak && !exempted:
			out = append(out, fmt.Sprintf("%s: starts a goroutine at %s and no test file of the package calls goleak "+
				"(add a TestMain with goleak.VerifyTestMain, or a goleakExempt entry saying why it cannot run)", dir, pd.start))
		case exempted && (pd.start == "" || pd.goleak):
			out = append(out, fmt.Sprintf("%s: exempted from goleak but it starts no goroutine or its tests call goleak: remove it from goleakExempt", dir))
		}
	}
	for dir := range exempt {
		if dirs[dir] == nil {
			out = append(out, fmt.Sprintf("%s: exempted from goleak but holds no Go file: remove it from goleakExempt", dir))
		}
	}
	slices.Sort(out)
	return out, nil
}

// TestGoroutinesLeakChecked: every package whose code starts a goroutine
// has a test that fails when one outlives the tests (go.uber.org/goleak),
// or an exemption saying why it cannot.
func TestGoroutinesLeakChecked(t *testing.T) {
	bad, err := leakViolations(os.DirFS("../.."), goleakExempt)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestLeakViolationsFound shows the check finds what it is for: each way
// of starting a goroutine without goleak in the package's tests, and a
// stale exemption; and not a package whose tests call goleak (under any
// import name, under any build constraint), a goroutine started only by a
// test or by a `go run` script, a goleak mentioned only in a comment, or
// test data.
func TestLeakViolationsFound(t *testing.T) {
	const (
		goStmt    = "package p\n\nfunc f() { go func() {}() }\n"
		wgGo      = "package p\n\nimport \"sync\"\n\nfunc f() { var wg sync.WaitGroup; wg.Go(func() {}); wg.Wait() }\n"
		afterFunc = "package p\n\nimport \"time\"\n\nfunc f() { time.AfterFunc(time.Second, func() {}) }\n"
		plain     = "package p\n\nfunc f() {}\n"
		leakMain  = "package p\n\nimport (\n\t\"testing\"\n\n\t\"go.uber.org/goleak\"\n)\n\nfunc TestMain(m *testing.M) { goleak.VerifyTestMain(m) }\n"
		leakAlias = "//go:build js && wasm\n\npackage p\n\nimport (\n\t\"testing\"\n\n\tleak \"go.uber.org/goleak\"\n)\n\nfunc TestX(t *testing.T) { defer leak.VerifyNone(t) }\n"
		leakWord  = "package p\n\nimport \"testing\"\n\n// goleak.VerifyTestMain(m) would go here.\nfunc TestX(t *testing.T) {}\n"
		script    = "//go:build ignore\n\n// Command x.\npackage main\n\nfunc main() { go func() {}() }\n"
		jsOnly    = "//go:build js && wasm\n\npackage p\n\nfunc f() { go func() {}() }\n"
		goInTest  = "package p\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { go func() {}() }\n"
	)
	for _, tc := range []struct {
		name   string
		files  fstest.MapFS
		exempt map[string]string
		want   []string // the directories found, in order
	}{
		{"go statement", fstest.MapFS{"a/x.go": {Data: []byte(goStmt)}}, nil, []string{"a: starts a goroutine at a/x.go:3 (go statement)"}},
		{"WaitGroup.Go", fstest.MapFS{"a/x.go": {Data: []byte(wgGo)}}, nil, []string{"a: starts a goroutine at a/x.go:5 (a call of .Go)"}},
		{"time.AfterFunc", fstest.MapFS{"a/b/x.go": {Data: []byte(afterFunc)}}, nil, []string{"a/b: starts a goroutine at a/b/x.go:5 (time.AfterFunc)"}},
		{"root package", fstest.MapFS{"x.go": {Data: []byte(goStmt)}}, nil, []string{".: starts a goroutine at x.go:3"}},
		{"js-only code", fstest.MapFS{"a/x_js.go": {Data: []byte(jsOnly)}}, nil, []string{"a: starts a goroutine at a/x_js.go:5 (go statement)"}},
		{"go run script", fstest.MapFS{"s/main.go": {Data: []byte(script)}}, nil, nil},
		{"goleak in TestMain", fstest.MapFS{"a/x.go": {Data: []byte(goStmt)}, "a/leak_test.go": {Data: []byte(leakMain)}}, nil, nil},
		{"goleak aliased, js-only test", fstest.MapFS{"a/x.go": {Data: []byte(goStmt)}, "a/x_test.go": {Data: []byte(leakAlias)}}, nil, nil},
		{"goleak in a comment", fstest.MapFS{"a/x.go": {Data: []byte(goStmt)}, "a/x_test.go": {Data: []byte(leakWord)}}, nil, []string{"a: starts a goroutine"}},
		{"goleak in another package", fstest.MapFS{"a/x.go": {Data: []byte(goStmt)}, "b/leak_test.go": {Data: []byte(leakMain)}, "b/x.go": {Data: []byte(plain)}}, nil, []string{"a: starts a goroutine"}},
		{"goroutine only in a test", fstest.MapFS{"a/x.go": {Data: []byte(plain)}, "a/x_test.go": {Data: []byte(goInTest)}}, nil, nil},
		{"test data", fstest.MapFS{"a/testdata/x.go": {Data: []byte(goStmt)}, "data/x.go": {Data: []byte(goStmt)}, ".cache/x.go": {Data: []byte(goStmt)}}, nil, nil},
		{"exempt", fstest.MapFS{"a/x.go": {Data: []byte(goStmt)}}, map[string]string{"a": "runs in a browser"}, nil},
		{"stale exemption: no goroutine", fstest.MapFS{"a/x.go": {Data: []byte(plain)}}, map[string]string{"a": "why"}, []string{"a: exempted from goleak but it starts no goroutine"}},
		{"stale exemption: goleak now", fstest.MapFS{"a/x.go": {Data: []byte(goStmt)}, "a/leak_test.go": {Data: []byte(leakMain)}}, map[string]string{"a": "why"}, []string{"a: exempted from goleak but"}},
		{"stale exemption: gone", fstest.MapFS{"b/x.go": {Data: []byte(plain)}}, map[string]string{"a": "why"}, []string{"a: exempted from goleak but holds no Go file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad, err := leakViolations(tc.files, tc.exempt)
			if err != nil {
				t.Fatal(err)
			}
			if len(bad) != len(tc.want) {
				t.Fatalf("found %q; want %d findings starting %q", bad, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(bad[i], w) {
					t.Errorf("finding %d is %q; want it to start with %q", i, bad[i], w)
				}
			}
		})
	}
}
