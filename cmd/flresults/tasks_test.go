package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTaskTableShown: the row tasks' table scripts/tasktable.sh wrote is
// the one docs/tasks.md and the results report show, verbatim, and the
// report's generator puts it there.
func TestTaskTableShown(t *testing.T) {
	root := filepath.Join("..", "..")
	table, err := os.ReadFile(filepath.Join(root, TasksTable))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(table), "| text | nc, epsilon 8 |") || !strings.Contains(string(table), "| tabular | non-private (mu2) |") {
		t.Fatalf("%s lacks the rows:\n%s", TasksTable, table)
	}
	for _, doc := range []string{"docs/tasks.md", "docs/results.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), string(table)) {
			t.Errorf("%s does not show %s as it is", doc, TasksTable)
		}
	}
	var b strings.Builder
	if _, err := writeReport(&b, experiments(nil), map[string]outcome{}, puReport{tasks: string(table)}, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), tasksHeader+string(table)) {
		t.Error("the report's generator leaves the table out")
	}
}
