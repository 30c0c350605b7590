//go:build ignore

// Command funcsize counts, per package, the functions of the repository
// that are long or complex: over 80 and over 120 lines (from func to its
// closing brace) and over cyclomatic complexity 15 (gocyclo's rule: 1,
// plus one for each if, for, range, case, select case, && and ||; the
// same figures as github.com/fzipp/gocyclo). Test files and generated
// files are not counted. docs/design.md ("Function sizes") quotes it.
//
//	go run scripts/funcsize/main.go          # the table per package
//	go run scripts/funcsize/main.go -list    # and every function over a bound
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// fn is one function or method.
type fn struct {
	pkg, pos, name string
	lines, cx      int
}

// cyclo is fd's cyclomatic complexity by gocyclo's rule.
func cyclo(fd *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fd, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// name is fd's name, with its receiver's type for a method.
func name(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return "(" + id.Name + ")." + fd.Name.Name
	}
	return fd.Name.Name
}

// collect parses every non-test, non-generated Go file under root.
func collect(root string) ([]fn, error) {
	fset := token.NewFileSet()
	var fns []fn
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "data" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("funcsize: %w", err)
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			fns = append(fns, fn{pkg: filepath.Dir(rel), pos: fmt.Sprintf("%s:%d", rel, start.Line), name: name(fd),
				lines: end.Line - start.Line + 1, cx: cyclo(fd)})
		}
		return nil
	})
	return fns, err
}

type tally struct{ n, over80, over120, cx15 int }

func (t *tally) add(f fn) {
	t.n++
	if f.lines > 80 {
		t.over80++
	}
	if f.lines > 120 {
		t.over120++
	}
	if f.cx > 15 {
		t.cx15++
	}
}

func main() {
	list := flag.Bool("list", false, "also list every function over 80 lines or over complexity 15")
	flag.Parse()
	fns, err := collect(".")
	if err != nil {
		log.Fatal(err)
	}
	byPkg := map[string]*tally{}
	var pkgs []string
	var cmd, all tally
	for _, f := range fns {
		t := byPkg[f.pkg]
		if t == nil {
			t = &tally{}
			byPkg[f.pkg] = t
			pkgs = append(pkgs, f.pkg)
		}
		t.add(f)
		all.add(f)
		if strings.HasPrefix(f.pkg, "cmd/") {
			cmd.add(f)
		}
	}
	sort.Strings(pkgs)
	w := os.Stdout
	fmt.Fprintln(w, "| package | functions | > 80 lines | > 120 lines | complexity > 15 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	row := func(name string, t tally) {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d |\n", name, t.n, t.over80, t.over120, t.cx15)
	}
	for _, p := range pkgs {
		row(p, *byPkg[p])
	}
	row("**cmd/ (all)**", cmd)
	row("**all**", all)
	fmt.Fprintf(w, "\ncmd/: %.1f%% of functions over 80 lines; all: %.1f%%\n",
		100*float64(cmd.over80)/float64(max(cmd.n, 1)), 100*float64(all.over80)/float64(max(all.n, 1)))
	if *list {
		sort.Slice(fns, func(i, j int) bool { return fns[i].lines > fns[j].lines })
		fmt.Fprintln(w, "\n| lines | complexity | function | at |\n|---:|---:|---|---|")
		for _, f := range fns {
			if f.lines > 80 || f.cx > 15 {
				fmt.Fprintf(w, "| %d | %d | %s | %s |\n", f.lines, f.cx, f.name, f.pos)
			}
		}
	}
}
