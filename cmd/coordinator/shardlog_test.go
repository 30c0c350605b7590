package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestShardLog: the record of the demo shards handed out replays every
// whole line, drops a last line a crash cut short (and cuts the file
// back, so the next record starts on a line of its own), starts afresh
// on any other damage or on -reset, and records each new shard on a
// line of its own. A record that kept the cut line would replay a shard
// of the wrong size in its place, or glue the next size onto it.
func TestShardLog(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tests := []struct {
		name  string
		file  string // "" : no file
		reset bool
		want  []int
		after string // the file after recording 512
	}{
		{"no record yet", "", false, nil, "512\n"},
		{"whole lines", "6400\n3200\n", false, []int{6400, 3200}, "6400\n3200\n512\n"},
		{"last line cut short", "6400\n64", false, []int{6400}, "6400\n512\n"},
		{"only a cut line", "64", false, nil, "512\n"},
		{"damaged", "6400\nx\n3200\n", false, nil, "512\n"},
		{"more than max", "1\n2\n3\n4\n", false, nil, "512\n"},
		{"reset", "6400\n", true, nil, "512\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "shards")
			if tc.file != "" {
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			sizes, onNew, err := openShardLog(path, 3, tc.reset, quiet)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sizes, tc.want) {
				t.Errorf("replayed %v, want %v", sizes, tc.want)
			}
			if err := onNew(512); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.after {
				t.Errorf("the record after a new shard: %q, want %q", b, tc.after)
			}
		})
	}
}
