package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Child is a process started in its own process group, so that stop
// reaches everything it started too.
type Child struct {
	Cmd  *exec.Cmd
	Done chan struct{} // closed when the process has exited
	Err  error         // Wait's result, set before done is closed
}

// StartChild starts name with args in its own process group (Child.Stop
// reaches everything it starts), its output going to stdout and stderr.
func StartChild(name string, args []string, stdout, stderr io.Writer) (*Child, error) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{Cmd: cmd, Done: make(chan struct{})}
	go func() {
		c.Err = cmd.Wait()
		close(c.Done)
	}()
	return c, nil
}

// Stop interrupts the child's process group, waits up to grace for the
// Child to exit, then kills whatever is left of the group.
func (c *Child) Stop(grace time.Duration) {
	pgid := c.Cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGINT)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.Done:
	case <-t.C:
	}
	syscall.Kill(-pgid, syscall.SIGKILL) // ESRCH when the group is gone
	<-c.Done
	// A signal is delivered asynchronously: wait (a bounded time: a
	// member that has died but is not reaped yet still counts) until
	// no member of the group is left.
	for range 100 {
		if syscall.Kill(-pgid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RSS returns the resident set size of pid (Linux /proc).
func RSS(pid int) (int64, error) { return procStatusKB(pid, "VmRSS") }

// HWM returns the peak resident set size of pid.
func HWM(pid int) (int64, error) { return procStatusKB(pid, "VmHWM") }

func procStatusKB(pid int, key string) (int64, error) {
	v, err := ProcKeys(pid, "status", key)
	if err != nil {
		return 0, err
	}
	return v[0] * 1024, nil
}

// ProcKeys reads /proc/PID/file, made of "key: value [unit]" lines, and
// returns the integer values of keys (keys without their colon), in
// order; it is an error if one is missing.
func ProcKeys(pid int, file string, keys ...string) ([]int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), file))
	if err != nil {
		return nil, err
	}
	vals := make([]int64, len(keys))
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		i := slices.Index(keys, k)
		if !ok || i < 0 {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return nil, fmt.Errorf("/proc/%d/%s: no value for %s", pid, file, k)
		}
		if vals[i], err = strconv.ParseInt(f[0], 10, 64); err != nil {
			return nil, fmt.Errorf("/proc/%d/%s: %w", pid, file, err)
		}
		found++
	}
	if found != len(keys) {
		return nil, fmt.Errorf("/proc/%d/%s: not all of %v", pid, file, keys)
	}
	return vals, nil
}

// Syscalls counts a process's read-like and write-like system calls
// (/proc/PID/io's syscr and syscw: read, recvmsg, ... and write,
// writev, pwrite, ...).
type Syscalls struct{ Reads, Writes int64 }

// ProcSyscalls returns pid's system call counts so far.
func ProcSyscalls(pid int) (Syscalls, error) {
	v, err := ProcKeys(pid, "io", "syscr", "syscw")
	if err != nil {
		return Syscalls{}, err
	}
	return Syscalls{Reads: v[0], Writes: v[1]}, nil
}

// ProcCPU returns user+system CPU seconds of pid (assumes USER_HZ = 100,
// the Linux default).
func ProcCPU(pid int) (float64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, errors.New("bad /proc stat")
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad /proc stat")
	}
	return (ut + st) / 100, nil
}

// StartCoordinator starts the coordinator binary bin with args and
// returns it with a context that ends when ctx does or the coordinator
// exits early (its cause says so); stop ends both.
func StartCoordinator(ctx context.Context, bin string, args []string, stderr io.Writer) (*Child, context.Context, func(), error) {
	coord, err := StartChild(bin, args, io.Discard, stderr)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("start coordinator: %w", err)
	}
	ctx, cancelRun := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-coord.Done:
			cancelRun(fmt.Errorf("coordinator exited: %v", coord.Err))
		case <-ctx.Done():
		}
	}()
	return coord, ctx, func() { cancelRun(nil); coord.Stop(10 * time.Second) }, nil
}
