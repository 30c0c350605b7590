package table

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Check checks m against the tree at root: each of its snippets occurs
// exactly once in its file, so that a refactoring that moves the code
// fails here instead of testing nothing, and each package its tests run
// is a directory of the tree.
func (m Mutation) Check(root string) error {
	edits := append([]FileEdit{{File: m.File, Old: m.Old, New: m.New}}, m.Elsewhere...)
	for _, e := range m.More {
		edits = append(edits, FileEdit{File: m.File, Old: e.Old, New: e.New})
	}
	for _, e := range edits {
		b, err := os.ReadFile(filepath.Join(root, e.File))
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if n := bytes.Count(b, []byte(e.Old)); n != 1 {
			return fmt.Errorf("%s: the snippet %q occurs %d times in %s, want exactly once (update scripts/mutants/table)", m.Name, e.Old, n, e.File)
		}
		if e.Old == e.New {
			return fmt.Errorf("%s: an edit of %s changes nothing", m.Name, e.File)
		}
	}
	for _, p := range m.Pkgs {
		if !strings.HasPrefix(p, "./") {
			continue // a flag or its value
		}
		dir := strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/")
		if fi, err := os.Stat(filepath.Join(root, dir)); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s: its tests' package %s is not a directory of the tree", m.Name, p)
		}
	}
	return nil
}
