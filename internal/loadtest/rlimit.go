//go:build unix

package loadtest

import (
	"fmt"
	"syscall"
)

// RaiseNoFile raises this process's open-file limit (inherited by the
// processes it starts) to at least need: the soft limit up to the hard
// one, and the hard one too where the process may (root).
func RaiseNoFile(need uint64) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("getrlimit: %w", err)
	}
	if l.Cur >= need {
		return nil
	}
	want := l
	want.Cur = need
	if want.Max < need {
		want.Max = need
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
		return nil
	}
	// Not allowed above the hard limit: take what there is.
	want = syscall.Rlimit{Cur: l.Max, Max: l.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		return fmt.Errorf("setrlimit: %w", err)
	}
	return fmt.Errorf("open files limited to %d, want %d", l.Max, need)
}

// NoFileLimit returns this process's open-files limit (soft).
func NoFileLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 1024
	}
	return l.Cur
}
