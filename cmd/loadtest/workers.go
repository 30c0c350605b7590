package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"browserfl/device"
	"browserfl/internal/loadtest"
	"browserfl/shared/wire"
)

// devices is what the cluster mode needs of its devices, whether they
// run in this process (fleet) or in device worker processes (workerSet).
type devices interface {
	waitConnected(ctx context.Context, n int) error
	stop()
	droppedCount() int64
	rss() int64 // memory of the processes holding the devices
}

// workerLine is the line a device worker prints every reportEvery.
const workerLine = "devices connected %d dropped %d failed %d\n"

const reportEvery = 250 * time.Millisecond

// runWorker is a device worker (-worker-range lo:hi): devices lo to hi-1
// of the run, spread over the edges (edgeTargets), until ctx is done;
// it reports its counts on stdout. A worker exists because one process
// can hold only as many connections as its open-files limit allows.
func runWorker(ctx context.Context, o options, pol device.Policy, lo, hi int, edges []string, base string, stdout io.Writer) error {
	if err := loadtest.RaiseNoFile(uint64(hi-lo) + 1024); err != nil {
		return err
	}
	var params wire.SessionParams
	if err := loadtest.GetJSON(ctx, base+"/api/session?code=LOADTEST", &params); err != nil {
		return err
	}
	f := newFleet(ctx, hi-lo)
	defer f.stop()
	done := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		t := time.NewTicker(reportEvery)
		defer t.Stop()
		for {
			fmt.Fprintf(stdout, workerLine, f.connected.Load(), f.dropped.Load(), f.failed.Load())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	defer func() { close(done); <-reported }()
	if err := f.launch(o, pol, params, lo, hi, edgeTargets(edges)); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while connecting
		}
		return err
	}
	select {
	case err := <-f.errs:
		return fmt.Errorf("a device failed: %w", err)
	case <-ctx.Done():
		return nil
	}
}

// workerSet is the device worker processes of a cluster run.
type workerSet struct {
	procs    []*loadtest.Child
	stats    []*workerStats
	stopping atomic.Bool
	once     sync.Once
}

// workerStats parses a worker's report lines (it is the worker's stdout).
type workerStats struct {
	mu                         sync.Mutex
	buf                        []byte
	connected, dropped, failed int64
}

func (s *workerStats) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		var c, d, f int64
		if _, err := fmt.Sscanf(string(s.buf[:i+1]), workerLine, &c, &d, &f); err == nil {
			s.connected, s.dropped, s.failed = c, d, f
		}
		s.buf = s.buf[i+1:]
	}
	return len(p), nil
}

func (s *workerStats) counts() (connected, dropped, failed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connected, s.dropped, s.failed
}

// startWorkers starts procs device workers (this binary re-executed with
// args and the worker flags), splitting devices 0 to n-1 into ranges;
// each staggers its connections procs times o.stagger, so that devices
// arrive at the rate a single process would send them. A worker that
// exits before stop cancels the run through exited.
func startWorkers(o options, args []string, n, procs int, edges []string, base string, stderr io.Writer, exited func(error)) (*workerSet, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ws := &workerSet{}
	for p := range procs {
		lo, hi := p*n/procs, (p+1)*n/procs
		wargs := append(args[:len(args):len(args)], "-stagger", (o.stagger * time.Duration(procs)).String(),
			"-worker-range", fmt.Sprintf("%d:%d", lo, hi), "-worker-edges", strings.Join(edges, ","), "-worker-session", base)
		st := &workerStats{}
		c, err := loadtest.StartChild(self, wargs, st, stderr)
		if err != nil {
			ws.stop()
			return nil, fmt.Errorf("start device worker: %w", err)
		}
		ws.procs = append(ws.procs, c)
		ws.stats = append(ws.stats, st)
		go func() {
			<-c.Done
			if !ws.stopping.Load() {
				exited(fmt.Errorf("device worker %d exited: %v", p, c.Err))
			}
		}()
	}
	return ws, nil
}

func (ws *workerSet) waitConnected(ctx context.Context, n int) error {
	for {
		var connected int64
		for _, s := range ws.stats {
			c, _, f := s.counts()
			if f > 0 {
				return errors.New("a device failed in a device worker (its error is on stderr)")
			}
			connected += c
		}
		if connected >= int64(n) {
			return nil
		}
		if err := loadtest.Sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("%d of %d devices connected: %w", connected, n, err)
		}
	}
}

func (ws *workerSet) stop() {
	ws.once.Do(func() {
		ws.stopping.Store(true)
		var wg sync.WaitGroup
		for _, c := range ws.procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.Stop(10 * time.Second)
			}()
		}
		wg.Wait()
	})
}

func (ws *workerSet) droppedCount() int64 {
	var d int64
	for _, s := range ws.stats {
		_, dd, _ := s.counts()
		d += dd
	}
	return d
}

func (ws *workerSet) rss() int64 {
	r, _ := loadtest.RSS(os.Getpid())
	for _, c := range ws.procs {
		w, _ := loadtest.RSS(c.Cmd.Process.Pid)
		r += w
	}
	return r
}

// parseRange parses lo:hi.
func parseRange(s string) (lo, hi int, err error) {
	a, b, ok := strings.Cut(s, ":")
	if ok {
		if lo, err = strconv.Atoi(a); err == nil {
			hi, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || lo < 0 || hi <= lo {
		return 0, 0, fmt.Errorf("-worker-range %q: want lo:hi with 0 <= lo < hi", s)
	}
	return lo, hi, nil
}
