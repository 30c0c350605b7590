package browserfl

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"browserfl/internal/doccmd"
)

// The docs this test reads: README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, files...)
}

// notPaths are words in the docs that look like repository paths and
// are not: each with what it is.
var notPaths = map[string]string{
	"wasm/native": "a ratio's name: WebAssembly time over native time",
	"shared/nc":   "a ratio's name: a shared-noise lesson's wall time over nc's (bin/loadtest -lesson)",
}

// generatedPaths are paths the build makes (make wasm), absent from a
// fresh clone: the docs may name them.
var generatedPaths = []string{"web/app.wasm", "web/wasm_exec.js", "web/precompressed"}

// pathChecker finds the repository paths a doc names and says which do
// not exist under root.
type pathChecker struct {
	root string
	// named matches a path under one of the repository's top-level
	// directories, anywhere in the text; link a Markdown link's target.
	named, link *regexp.Regexp
}

func newPathChecker(t *testing.T, root string) pathChecker {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var tops []string
	for _, e := range ents {
		// data/, bin/ and out/ hold what the commands make (git-ignored).
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !slices.Contains([]string{"data", "bin", "out"}, e.Name()) {
			tops = append(tops, regexp.QuoteMeta(e.Name()))
		}
	}
	if len(tops) < 5 {
		t.Fatalf("top-level directories %q: not the repository", tops)
	}
	return pathChecker{root: root,
		named: regexp.MustCompile(`(?:^|[^\w./-])((?:` + strings.Join(tops, "|") + `)/[\w./*{},-]*[\w*}/])`),
		link:  regexp.MustCompile(`\]\(([^)\s#]+)(?:#[^)\s]*)?\)`)}
}

// missing returns the paths doc (its name, for relative links) names in
// text that do not exist.
func (c pathChecker) missing(doc, text string) []string {
	var out []string
	for _, m := range c.named.FindAllStringSubmatch(text, -1) {
		p := strings.TrimRight(m[1], "./")
		if i := strings.Index(p, "{"); i >= 0 && !strings.Contains(p[i:], "}") {
			p = strings.TrimRight(p[:i], "/") // a set in prose: "coordinator/{wsconn, store, ...}"
		}
		if _, ok := notPaths[p]; ok || slices.ContainsFunc(generatedPaths, func(g string) bool { return p == g || strings.HasPrefix(p, g+"/") }) {
			continue
		}
		if !c.exists(p) {
			out = append(out, p)
		}
	}
	for _, m := range c.link.FindAllStringSubmatch(text, -1) {
		p := m[1]
		if strings.Contains(p, "://") || strings.HasPrefix(p, "mailto:") {
			continue
		}
		if !c.exists(filepath.ToSlash(filepath.Join(filepath.Dir(doc), p))) {
			out = append(out, p)
		}
	}
	return out
}

// ident is a Go package path followed by one of its identifiers:
// "shared/plan.SessionFigures".
var ident = regexp.MustCompile(`^(.*/[\w]+)\.([A-Z]\w*)`)

// exists reports whether p names something in the repository: a file
// or directory, a glob ("docs/screenshots/task-*.png", "{a,b}" sets
// included) matching one, or a package and an identifier it declares.
func (c pathChecker) exists(p string) bool {
	if i, j := strings.Index(p, "{"), strings.Index(p, "}"); i >= 0 && j > i {
		for _, alt := range strings.Split(p[i+1:j], ",") {
			if !c.exists(p[:i] + alt + p[j+1:]) {
				return false
			}
		}
		return true
	}
	if strings.Contains(p, "*") {
		m, err := filepath.Glob(filepath.Join(c.root, p))
		return err == nil && len(m) > 0
	}
	if _, err := os.Stat(filepath.Join(c.root, p)); err == nil {
		return true
	}
	m := ident.FindStringSubmatch(p)
	if m == nil {
		return false
	}
	srcs, _ := filepath.Glob(filepath.Join(c.root, m[1], "*.go"))
	decl := regexp.MustCompile(`(?m)^(?:func|type|var|const)\s+(?:\([^)]*\)\s*)?` + m[2] + `\b|^\t` + m[2] + `\b`)
	for _, s := range srcs {
		if b, err := os.ReadFile(s); err == nil && decl.Match(b) {
			return true
		}
	}
	return false
}

// TestDocPathsExist: every repository path README.md and docs/*.md name
// (a file, a directory, a glob, a package's identifier, a relative
// link) exists.
func TestDocPathsExist(t *testing.T) {
	c := newPathChecker(t, ".")
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range c.missing(f, string(b)) {
			t.Errorf("%s names %s, which does not exist", f, p)
		}
	}
}

// TestDocPathsPlanted: the check finds a missing file, a missing
// package identifier, a glob that matches nothing and a broken link,
// and passes what exists.
func TestDocPathsPlanted(t *testing.T) {
	c := newPathChecker(t, ".")
	text := "The planner (`shared/plan/nothere.go`, shared/plan.NoSuchFigure) draws " +
		"docs/screenshots/none-*.png; see [the protocol](nothere.md). " +
		"Present: `shared/plan/figures.go`, shared/plan.SessionFigures, cmd/flsim/, docs/screenshots/classroom-*.png, " +
		"docs/screenshots/phone-{join,consent}-firefox.png, [privacy](privacy.md#the-ledger), wasm/native, web/app.wasm."
	got := c.missing("docs/planted.md", text)
	want := []string{"shared/plan/nothere.go", "shared/plan.NoSuchFigure", "docs/screenshots/none-*.png", "nothere.md"}
	if !slices.Equal(got, want) {
		t.Errorf("missing %q, want %q", got, want)
	}
}

// TestDocMakeTargets: every make command README.md and docs/*.md give
// names targets the Makefile has (its flags and variables are checked by
// the tests of the command they reach: cmd/coordinator's for make run).
func TestDocMakeTargets(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	has := func(target string) bool {
		return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(mk)
	}
	if has("no-such-target") {
		t.Fatal("a planted target is found")
	}
	n := 0
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cmds, err := doccmd.Commands(string(b))
		if err != nil {
			t.Fatal(fmt.Errorf("%s: %w", f, err))
		}
		for _, c := range doccmd.Of(cmds, "make") {
			targets, _ := doccmd.Vars(c.Args)
			for _, tg := range targets {
				n++
				if !has(tg) {
					t.Errorf("%s: %s: the Makefile has no target %q", f, c.Text, tg)
				}
			}
		}
	}
	if n < 8 {
		t.Errorf("%d make targets named in the docs, want README.md's 8 or more", n)
	}
}

// commitRef matches a commit named by its hash: 40 hex digits anywhere,
// or 7 to 40 after a word that presents them as a commit ("commit
// 0d19044", "main f5b1cf0", "git archive 0d19044"). History lives in
// git: the docs say what the product is, so none of them names a commit.
var commitRef = regexp.MustCompile("(?i)\\b[0-9a-f]{40}\\b|" +
	"\\b(?:commits?|main|master|branch|tree|revision|rev|" +
	"git\\s+(?:archive|show|checkout|switch|log|diff|revert|cherry-pick|reset|rebase))" +
	"\\s+(?:of\\s+|at\\s+)?`?([0-9a-f]{7,40})\\b")

// commitRefs returns the commit hashes text names. A short hash must
// hold a letter and a digit, so that "main 2026123" or "tree defaced"
// are words, not hashes.
func commitRefs(text string) []string {
	var out []string
	for _, m := range commitRef.FindAllStringSubmatch(text, -1) {
		h := m[0]
		if m[1] != "" {
			h = m[1]
			if !strings.ContainsAny(h, "0123456789") || !strings.ContainsAny(strings.ToLower(h), "abcdef") {
				continue
			}
		}
		out = append(out, h)
	}
	return out
}

// TestDocsNameNoCommits: README.md, docs/*.md and the Makefile name no
// commit by its hash (a measured table says its command, date and load;
// a tree is named by its date).
func TestDocsNameNoCommits(t *testing.T) {
	for _, f := range append(docFiles(t), "Makefile") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range commitRefs(string(b)) {
			t.Errorf("%s names commit %s (history lives in git; describe the product as it is)", f, h)
		}
	}
}

// TestCommitRefsPlanted: the check finds a commit in each way a doc
// could name one, and not a fuzz input, a SHA-256 digest, a content-hashed
// file name or a word.
func TestCommitRefsPlanted(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"were tracked until commit 0d19044; to build", []string{"0d19044"}},
		{"Measured on main f5b1cf0 against", []string{"f5b1cf0"}},
		{"git archive 0d19044 docs/results | tar -x", []string{"0d19044"}},
		{"the tree at `7CEB582`, load 2", []string{"7CEB582"}},
		{"commits 63468dc and ffae43f", []string{"63468dc"}},
		{"see d008e80f1c2b3a4d5e6f708192a3b4c5d6e7f809 for it", []string{"d008e80f1c2b3a4d5e6f708192a3b4c5d6e7f809"}},
		{"input `5276f9db3e56de7f` kept in the corpus", nil},
		{"digest 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 of it", nil},
		{"/web/app.99149b4933ee.wasm, sent immutable", nil},
		{"the main decade; commit 2026120 rounds; tree defaced", nil},
		{"the round commits before it tells any device", nil},
	} {
		if got := commitRefs(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("commitRefs(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// changelogRef matches changelog prose: a state dated by when it began or
// ended ("until 2026-11-27 the ledger was read with ...", "since 29
// November 2026"), and a change named relative to the text ("before this
// change", "a turn ago"). A measurement keeps its date ("measured
// 2026-11-27", "on 2026-12-05"); what held before lives in git.
var changelogRef = regexp.MustCompile(`(?i)\b(?:until|since|before)\s+(?:20\d\d-\d\d-\d\d|\d{1,2}\s+(?:january|february|march|april|may|june|july|august|september|october|november|december)\s+20\d\d)\b|\b(?:before|after)\s+this\s+change\b|\ba\s+turn\s+ago\b`)

// TestDocsTellNoChangelog: README.md, docs/*.md and the Makefile date
// measurements, not changes.
func TestDocsTellNoChangelog(t *testing.T) {
	for _, f := range append(docFiles(t), "Makefile") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range changelogRef.FindAllString(string(b), -1) {
			t.Errorf("%s: %q tells a change (history lives in git; say what holds)", f, m)
		}
	}
}

// TestChangelogRefsPlanted: the check finds each form of changelog
// prose and passes a dated measurement and a year in prose.
func TestChangelogRefsPlanted(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Until 2026-11-27 the ledger was read with zCDP.", []string{"Until 2026-11-27"}},
		{"a fresh noise; since 2026-11-24 the ledger is read", []string{"since 2026-11-24"}},
		{"the sums (before 29 November 2026, in float64)", []string{"before 29 November 2026"}},
		{"the first message of the device before this change", []string{"before this change"}},
		{"peak RSS 304 MiB (132-173 a turn ago)", []string{"a turn ago"}},
		{"measured 2026-11-27 on 2 cores, load 3; rerun on 2026-12-05", nil},
		{"it has had no release since 2017; maintained since 2019", nil},
		{"a shard fetched before the lobby; after the change of round", nil},
	} {
		if got := changelogRef.FindAllString(tc.text, -1); !slices.Equal(got, tc.want) {
			t.Errorf("changelogRef in %q = %q, want %q", tc.text, got, tc.want)
		}
	}
}
