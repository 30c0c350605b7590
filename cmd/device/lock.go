package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// errDirInUse is wrapped when another device process holds the state
// directory.
var errDirInUse = errors.New("the directory is in use by another device process")

// openDir creates dir if needed, takes its lock (dir/lock, an exclusive
// flock held until the process exits or release is called) and then
// removes what an earlier process left half-written (removeTemps):
// two processes on one state file would each overwrite the other's
// ledger and pending round, and one of them would roll back the privacy
// it has spent. The lock is the kernel's, so a process that was killed
// leaves none behind.
func openDir(dir string, log *slog.Logger) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("-dir %s: %w (stop it, or give each device its own -dir)", dir, errDirInUse)
		}
		return nil, fmt.Errorf("state directory: lock %s: %w", path, err)
	}
	removeTemps(dir, log)
	return func() { f.Close() }, nil
}
