//go:build !windows

package main

import (
	"bufio"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"browserfl/device"
	"browserfl/shared/dataset"
)

// TestChaosKilledDevice kills the real device command (SIGKILL) again
// and again at random moments of its start, while it fetches and writes
// its 5 MB demo shard and its state, with a real coordinator; every
// restart must carry on from what the last one left (no "exceeds blob",
// no other error of its own), and at the end the device starts, joins
// and leaves on Ctrl-C with whole files: the shard matching its digest,
// the state readable.
func TestChaosKilledDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the device command and runs it 30 times")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Shards of T b = 200 x 32 = 6,400 pictures of 784 pixels: 5 MB.
	startCoordinatorShape(t, ln, 784, 6400, 200, 32)
	bin := builtCmd(t, "device")
	dir := filepath.Join(t.TempDir(), "dev")
	args := []string{"-url", "ws://" + ln.Addr().String() + "/ws", "-code", "join-me", "-dir", dir}
	rng := rand.New(rand.NewPCG(1, 2))
	killed := 0
	for i := range 30 {
		cmd := exec.Command(bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done: // it stopped on its own: only a failure does
			t.Fatalf("run %d stopped by itself: %v\n%s", i, err, stderr.String())
		case <-time.After(time.Duration(rng.IntN(400)) * time.Millisecond):
		}
		if err := cmd.Process.Kill(); err == nil {
			killed++
		}
		<-done
		if s := stderr.String(); strings.Contains(s, "exceeds blob") || strings.Contains(s, "level=ERROR") {
			t.Fatalf("run %d:\n%s", i, s)
		}
	}

	// The last start: it joins, then leaves on the first signal.
	cmd := exec.Command(bin, args...)
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var log strings.Builder
	joined := false
	for !joined && lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		joined = strings.Contains(lines.Text(), "msg=connected") || strings.Contains(lines.Text(), "msg=lobby") ||
			strings.Contains(lines.Text(), "msg=welcome")
	}
	if !joined {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("after %d kills the device did not join:\n%s", killed, log.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	go func() {
		for lines.Scan() {
		}
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after %d kills: %v\n%s", killed, err, log.String())
	}
	blob, sidecar, err := readKept(filepath.Join(dir, "shard.bin"))
	if err != nil || !sidecar {
		t.Fatalf("the kept shard: sidecar %v, %v", sidecar, err)
	}
	if set, err := dataset.DecodeShard(blob, 10); err != nil || len(set.Samples) != 6400 {
		t.Errorf("the kept shard: %d samples, %v", len(set.Samples), err)
	}
	if err := device.CheckStateFile(filepath.Join(dir, "state.json")); err != nil {
		t.Errorf("the state: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); errors.Is(err, os.ErrNotExist) {
		t.Error("no state after joining")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %q", left)
	}
	t.Logf("%d kills", killed)
}
