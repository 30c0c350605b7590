package archtest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// issueRef matches a reference to a numbered issue: "issue" or "issues"
// then a number, in any case, after a space, a hyphen, "#" or " item ",
// also when a line break, and a comment's "//" or "#", falls between
// them. History lives in
// git: code, comments, the Makefile, the README and docs describe the
// product as it is, so none of them names an issue.
var issueRef = regexp.MustCompile(`(?i)\bissues?(\s+item)?[ \t-]*(\n[ \t]*(//|#)?[ \t]*)?#?[0-9]`)

// historyViolations walks the repository at root and lists every line of
// a text file that names an issue. Test data (testdata/), the datasets
// (data/), dot directories (.git, .cache) and binary files are not read.
func historyViolations(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if base := d.Name(); rel != "." && (strings.HasPrefix(base, ".") || base == "testdata" || base == "node_modules" || base == "data" || base == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(src, 0) >= 0 {
			return nil // binary: a picture, a wasm module, a compressed file
		}
		for _, m := range issueRef.FindAllIndex(src, -1) {
			line := bytes.Count(src[:m[0]], []byte("\n")) + 1
			out = append(out, fmt.Sprintf("%s:%d: %q names an issue (history lives in git; describe the product as it is)", rel, line, src[m[0]:m[1]]))
		}
		return nil
	})
	return out, err
}

// TestNoIssueNumbers holds the repository to it.
func TestNoIssueNumbers(t *testing.T) {
	bad, err := historyViolations(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestHistoryViolationsFound shows the check finds what it is for: an
// issue named in a doc, a Makefile, a code comment and a test, in any
// case and spelling, and not in test data, a binary file or a word that
// merely ends in "issue".
func TestHistoryViolationsFound(t *testing.T) {
	root := t.TempDir()
	write := plantIn(t, root)
	// The planted texts say ISU for the word, so this file names no issue.
	plant := strings.NewReplacer("ISU", "iss"+"ue", "Isu", "Iss"+"ue").Replace
	write("docs/a.md", plant("# A\n\nSince ISU 12 the step is faster.\n"))
	write("Makefile", plant("# the pre-ISU-12 code\nall:\n"))
	write("lib/x.go", plant("package lib\n\n// Isu 28's point 8 wanted this.\nfunc f() {}\n"))
	write("lib/x_test.go", plant("package lib\n\n// see ISUs 27 and 28\n"))
	write("lib/y.go", plant("package lib\n\n// as measured (ISU\n// 24 point 7)\n"))
	write("lib/testdata/fixture.txt", plant("ISU 9 is test data\n"))
	write("docs/pic.png", plant("\x89PNG\x00ISU 3\n"))
	write("docs/b.md", "a tissue 5 cm wide; this issue is open; issue numbers\n")
	bad, err := historyViolations(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join("Makefile") + ":1:",
		filepath.Join("docs", "a.md") + ":3:",
		filepath.Join("lib", "x.go") + ":3:",
		filepath.Join("lib", "x_test.go") + ":3:",
		filepath.Join("lib", "y.go") + ":3:",
	}
	if len(bad) != len(want) {
		t.Fatalf("found %q; want one line each in %q", bad, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(bad[i], w) {
			t.Errorf("finding %d is %q; want it to start with %q", i, bad[i], w)
		}
	}
}
