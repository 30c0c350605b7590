package main

import (
	"errors"
	"io"
	"log/slog"
	"testing"
)

// TestOneProcessADirectory: a second device on a state directory in use
// is refused before it reads or writes anything there (two processes
// would overwrite each other's ledger); once the first lets go, the
// directory can be taken again.
func TestOneProcessADirectory(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	release, err := openDir(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openDir(dir, log); !errors.Is(err, errDirInUse) {
		t.Fatalf("the directory's lock taken twice: err = %v, want %v", err, errDirInUse)
	}
	err = run([]string{"-url", "ws://127.0.0.1:1/ws", "-code", "ABCD2345", "-dir", dir}, io.Discard)
	if !errors.Is(err, errDirInUse) {
		t.Fatalf("a second device on the directory: err = %v, want %v", err, errDirInUse)
	}
	release()
	again, err := openDir(dir, log)
	if err != nil {
		t.Fatalf("the directory after its holder let go: %v", err)
	}
	again()
}
