package loadtest

import (
	"math"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestStartChildStop: Stop ends a running child's process group and
// returns only once the child has exited (with the signal's error).
func TestStartChildStop(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Fatalf("no sleep command (coreutils): %v", err)
	}
	c, err := StartChild("sleep", []string{"60"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(5 * time.Second)
	select {
	case <-c.Done:
	default:
		t.Fatal("Stop returned before the child exited")
	}
	if c.Err == nil {
		t.Error("a stopped sleep 60 exited cleanly")
	}
}

// TestProcSyscalls: the counts the tool reports per round are this
// process's own read and write system calls: writing a pipe n times adds
// at least n writes (the runtime may make others meanwhile), reading it
// back adds at least as many reads.
func TestProcSyscalls(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	before, err := ProcSyscalls(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	var b [1]byte
	for range n {
		if _, err := w.Write(b[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Read(b[:]); err != nil {
			t.Fatal(err)
		}
	}
	after, err := ProcSyscalls(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after.Writes - before.Writes; d < n {
		t.Errorf("%d writes counted for %d", d, n)
	}
	if d := after.Reads - before.Reads; d < n {
		t.Errorf("%d reads counted for %d", d, n)
	}
	// The same parser reads /proc/PID/status (kB values): a Go test
	// binary's resident set is more than a megabyte and its peak at least
	// that.
	rss, err := RSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Errorf("RSS = %d, %v", rss, err)
	}
	if hwm, err := HWM(os.Getpid()); err != nil || hwm < rss {
		t.Errorf("peak RSS = %d (RSS %d), %v", hwm, rss, err)
	}
}

// TestQuantile: the nearest-rank Quantile, and NaN (not a panic) for a
// window without rounds.
func TestQuantile(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, 0.5, 2},
		{[]float64{1, 2, 3, 4}, 0.99, 4},
		{[]float64{7}, 0.5, 7},
		{[]float64{1, 2, 3, 4}, 0, 1},
	} {
		if got := Quantile(tc.xs, tc.q); got != tc.want {
			t.Errorf("quantile(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
		}
	}
	if got := Quantile(nil, 0.5); !math.IsNaN(got) {
		t.Errorf("quantile of nothing = %v, want NaN", got)
	}
}
