package archtest

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The calibration rule: algo.NCSigma and algo.NCChargeSigma solve the
// paper's rho_p from the session's budget at every call (a numeric search,
// the costly part of deriving a session's figures), so code that needs
// the sigma of many releases builds one algo.NC (algo.NewNC) and asks it.
// Called once per release, a shared-noise session's figures and secure
// aggregation took seconds of the page's Worker at Start, where Go runs
// one goroutine at a time, and the first round's steps passed their
// deadlines unanswered (docs/secagg.md).

// calibFuncs are the functions that solve rho_p at every call.
var calibFuncs = map[string]bool{"NCSigma": true, "NCChargeSigma": true}

// calibViolations lists the calls of calibFuncs, in the non-test Go files
// under root, made inside a loop or a function literal (a closure called
// once per release).
func calibViolations(root string) ([]string, error) {
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if base := d.Name(); rel != "." && (strings.HasPrefix(base, ".") || base == "testdata" || base == "node_modules" || base == "data") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := readOverlaid(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		bad = append(bad, calibInLoops(fset, rel, f)...)
		return nil
	})
	return bad, err
}

// readOverlaid reads path, or the file that replaces it in the build
// overlay GOFLAGS names (-overlay, go help build), as the go command
// would: scripts/mutants applies its mutations that way.
func readOverlaid(path string) ([]byte, error) {
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		ovl, ok := strings.CutPrefix(f, "-overlay=")
		if !ok {
			continue
		}
		b, err := os.ReadFile(ovl)
		if err != nil {
			return nil, err
		}
		var o struct{ Replace map[string]string }
		if err := json.Unmarshal(b, &o); err != nil {
			return nil, fmt.Errorf("overlay %s: %w", ovl, err)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		if r, ok := o.Replace[abs]; ok {
			return os.ReadFile(r)
		}
	}
	return os.ReadFile(path)
}

// calibInLoops lists f's calls of calibFuncs inside a for or range
// statement or a function literal.
func calibInLoops(fset *token.FileSet, rel string, f *ast.File) []string {
	var bad []string
	var walk func(n ast.Node, inLoop bool)
	walk = func(n ast.Node, inLoop bool) {
		ast.Inspect(n, func(c ast.Node) bool {
			if c == n {
				return true
			}
			switch c := c.(type) {
			case *ast.ForStmt:
				walk(c, true)
				return false
			case *ast.RangeStmt:
				walk(c, true)
				return false
			case *ast.FuncLit:
				walk(c, true)
				return false
			case *ast.CallExpr:
				if name := calledName(c.Fun); inLoop && calibFuncs[name] {
					bad = append(bad, fmt.Sprintf("%s:%d: %s in a loop or closure: build one algo.NewNC and ask it", rel, fset.Position(c.Pos()).Line, name))
				}
			}
			return true
		})
	}
	walk(f, false)
	return bad
}

// calledName is the name of the function fun calls (pkg.Name or Name).
func calledName(fun ast.Expr) string {
	switch fun := fun.(type) {
	case *ast.SelectorExpr:
		return fun.Sel.Name
	case *ast.Ident:
		return fun.Name
	}
	return ""
}

// TestCalibrationSolvedOnce holds the repository to the calibration rule.
func TestCalibrationSolvedOnce(t *testing.T) {
	bad, err := calibViolations(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestCalibViolationsFound shows the check finds what it is for: a call
// in a for loop, in a range loop and in a closure; not a single call, a
// call on an algo.NC, nor a test file's.
func TestCalibViolationsFound(t *testing.T) {
	root := t.TempDir()
	write := plantIn(t, root)
	write("lib/a.go", `package lib

func f(p P) {
	_ = algo.NCSigma(p, 1)
	for n := 1; n <= 3; n++ {
		_ = algo.NCSigma(p, n)
	}
	for range 3 {
		_ = NCChargeSigma(p, 2)
	}
	g := func(n int) float64 { return algo.NCChargeSigma(p, n) }
	nc := algo.NewNC(p)
	for n := 1; n <= 3; n++ {
		_ = nc.Sigma(n)
	}
	_ = g
}
`)
	write("lib/a_test.go", "package lib\n\nfunc h(p P) {\n\tfor {\n\t\t_ = algo.NCSigma(p, 1)\n\t}\n}\n")
	bad, err := calibViolations(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"lib/a.go:6: NCSigma", "lib/a.go:9: NCChargeSigma", "lib/a.go:11: NCChargeSigma"}
	if len(bad) != len(want) {
		t.Fatalf("found %q; want %d violations at %q", bad, len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(bad[i], filepath.FromSlash(w)) {
			t.Errorf("violation %d: %q, want %q...", i, bad[i], w)
		}
	}
}
