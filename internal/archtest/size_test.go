package archtest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The size rules of docs/design.md ("Function sizes"): a main is wiring.
const (
	maxMainLines = 200  // each cmd/*/main.go
	maxFuncLines = 120  // any non-test, non-generated function, from func to its closing brace
	maxMethods   = 30   // methods declared on one named type (pointer and value receivers together)
	maxPkgLines  = 2500 // non-test, non-generated lines of one directory's Go files, scripts included
)

// generated reports whether src carries Go's "Code generated ... DO NOT
// EDIT." line before its package clause.
func generated(src []byte) bool {
	head, _, _ := bytes.Cut(src, []byte("\npackage "))
	for _, line := range bytes.Split(head, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("// Code generated ")) && bytes.HasSuffix(bytes.TrimSpace(line), []byte("DO NOT EDIT.")) {
			return true
		}
	}
	return false
}

// fileSizes lists the functions of one file over maxFuncLines, and the
// receiver type name of each of its methods.
func fileSizes(name string, src []byte) (long, recv []string, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", name, err)
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		if r := receiverName(fd); r != "" {
			recv = append(recv, r)
		}
		start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
		if n := end.Line - start.Line + 1; n > maxFuncLines {
			long = append(long, fmt.Sprintf("%s:%d %s: %d lines (at most %d)", name, start.Line, fd.Name.Name, n, maxFuncLines))
		}
	}
	return long, recv, nil
}

// sizeViolations walks the repository at root and lists every main.go
// under cmd/ over maxMainLines, every long function, every type with more
// than maxMethods methods and every package (a directory's Go files) over
// maxPkgLines lines.
func sizeViolations(root string) ([]string, error) {
	var out []string
	pkgLines := map[string]int{}     // directory -> non-test, non-generated lines
	methods := map[string][]string{} // directory -> receiver type names, one per method
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
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generated(src) {
			return nil
		}
		if dir, file := filepath.Split(rel); file == "main.go" && strings.HasPrefix(dir, "cmd"+string(filepath.Separator)) {
			if n := bytes.Count(src, []byte("\n")); n > maxMainLines {
				out = append(out, fmt.Sprintf("%s: %d lines (a main is wiring: at most %d)", rel, n, maxMainLines))
			}
		}
		dir := filepath.Dir(rel)
		pkgLines[dir] += bytes.Count(src, []byte("\n"))
		long, recv, err := fileSizes(rel, src)
		out = append(out, long...)
		methods[dir] = append(methods[dir], recv...)
		return err
	})
	if err != nil {
		return out, err
	}
	for _, dir := range slices.Sorted(maps.Keys(pkgLines)) {
		if n := pkgLines[dir]; n > maxPkgLines {
			out = append(out, fmt.Sprintf("%s: %d non-test lines in the package (at most %d)", dir, n, maxPkgLines))
		}
		count := map[string]int{}
		for _, r := range methods[dir] {
			count[r]++
		}
		for _, typ := range slices.Sorted(maps.Keys(count)) {
			if n := count[typ]; n > maxMethods {
				out = append(out, fmt.Sprintf("%s.%s: %d methods (at most %d)", dir, typ, n, maxMethods))
			}
		}
	}
	return out, nil
}

// receiverName is the name of a method's receiver type: T for T, *T,
// T[K] and *T[K].
func receiverName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestFunctionSizes holds the repository to the size rules.
func TestFunctionSizes(t *testing.T) {
	bad, err := sizeViolations(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestSizeViolationsFound shows the check finds what it is for: a long
// main, a long function, and not a generated file or a test file.
func TestSizeViolationsFound(t *testing.T) {
	root := t.TempDir()
	write := plantIn(t, root)
	body := func(n int) string { return "func f() {\n" + strings.Repeat("\t_ = 1\n", n-2) + "}\n" }
	write("cmd/x/main.go", "package main\n\n"+strings.Repeat("// wiring\n", maxMainLines-1))         // 201 lines
	write("cmd/y/main.go", "package main\n\n"+strings.Repeat("// wiring\n", maxMainLines-2))         // 200: fine
	write("lib/long.go", "package lib\n\n"+body(maxFuncLines+1))                                     // 121-line function
	write("lib/ok.go", "package lib\n\n"+strings.Replace(body(maxFuncLines), "func f", "func g", 1)) // 120: fine
	write("lib/gen.go", "// Code generated by hand. DO NOT EDIT.\n\npackage lib\n\n"+strings.Replace(body(500), "func f", "func h", 1))
	write("lib/long_test.go", "package lib\n\n"+strings.Replace(body(500), "func f", "func k", 1))
	bad, err := sizeViolations(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 2 || !strings.HasPrefix(bad[0], filepath.Join("cmd", "x", "main.go")+": 201 lines") ||
		!strings.HasPrefix(bad[1], filepath.Join("lib", "long.go")+":3 f: 121 lines") {
		t.Errorf("found %q; want cmd/x/main.go at 201 lines and lib/long.go's f at 121", bad)
	}
}

// TestTypeAndPackageViolationsFound shows the type and package rules find
// what they are for: a type with 31 methods spread over two files and both
// receiver kinds, a generic one with 31, a package of 2,501 lines over two
// files; and not a type with 30 (its test file's methods and a generated
// file's do not count), nor a package of 2,500 lines beside a large test
// file and a large generated file.
func TestTypeAndPackageViolationsFound(t *testing.T) {
	root := t.TempDir()
	write := plantIn(t, root)
	methods := func(recv, prefix string, from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "func (%s) %s%d() {}\n", recv, prefix, i)
		}
		return b.String()
	}
	lines := func(n int) string { return strings.Repeat("//\n", n) }

	// big.T: 20 pointer + 11 value methods in two files = 31.
	write("big/a.go", "package big\n\ntype T struct{}\n\n"+methods("t *T", "P", 0, 20))
	write("big/b.go", "package big\n\n"+methods("t T", "V", 0, 11))
	// gen.G[K]: 31 methods on a generic type.
	write("gen/g.go", "package gen\n\ntype G[K any] struct{}\n\n"+methods("g *G[K]", "M", 0, 31))
	// fine.T: 30 methods; its test file and a generated file add more that do not count.
	write("fine/a.go", "package fine\n\ntype T struct{}\n\n"+methods("t *T", "M", 0, 30))
	write("fine/a_test.go", "package fine\n\n"+methods("t *T", "X", 0, 10))
	write("fine/z_gen.go", "// Code generated by hand. DO NOT EDIT.\n\npackage fine\n\n"+methods("t *T", "Y", 0, 10))
	// long: 2,501 lines in two files; short: 2,500 lines beside a large test and generated file.
	write("long/a.go", "package long\n"+lines(1249))
	write("long/b.go", "package long\n"+lines(1250))
	write("short/a.go", "package short\n"+lines(2499))
	write("short/a_test.go", "package short\n"+lines(5000))
	write("short/b_gen.go", "// Code generated by hand. DO NOT EDIT.\n\npackage short\n"+lines(5000))

	bad, err := sizeViolations(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"big.T: 31 methods (at most 30)",
		"gen.G: 31 methods (at most 30)",
		"long: 2501 non-test lines in the package (at most 2500)",
	}
	if !slices.Equal(bad, want) {
		t.Errorf("found %q; want %q", bad, want)
	}
}

// plantIn returns a function that writes a planted file of the tree at
// root (its path relative to root), for the tests that show a rule
// finds what it is for.
func plantIn(t *testing.T, root string) func(rel, src string) {
	return func(rel, src string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
