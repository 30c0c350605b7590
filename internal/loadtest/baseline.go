package loadtest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// BaselineResult is the plain-WebSocket baseline's figures per repetition.
type BaselineResult struct{ WallMs, CPUMs, Reads, Writes float64 }

// RunBaseline starts the baseline server as a child process, connects m
// echoing clients and reads the server's measurements.
func RunBaseline(ctx context.Context, m, outBytes, inBytes, reps int, pace time.Duration, stderr io.Writer) (BaselineResult, error) {
	addr, err := FreeAddr()
	if err != nil {
		return BaselineResult{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return BaselineResult{}, err
	}
	var out strings.Builder
	srv, err := StartChild(self, []string{"-baseline-server", addr, "-m", strconv.Itoa(m), "-baseline-out", strconv.Itoa(outBytes),
		"-baseline-in", strconv.Itoa(inBytes), "-baseline-reps", strconv.Itoa(reps)}, &out, stderr)
	if err != nil {
		return BaselineResult{}, err
	}
	defer srv.Stop(5 * time.Second)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make([]byte, inBytes)
	for i := range m {
		c, err := DialPlain(ctx, addr, srv, i, m)
		if err != nil {
			return BaselineResult{}, err
		}
		defer c.CloseNow()
		c.SetReadLimit(int64(outBytes + 1024))
		go func() {
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
				if pace > 0 {
					if err := Sleep(ctx, rand.N(pace)); err != nil {
						return
					}
				}
				if err := c.Write(ctx, websocket.MessageBinary, in); err != nil {
					return
				}
			}
		}()
	}
	select {
	case <-ctx.Done():
		return BaselineResult{}, ctx.Err()
	case <-srv.Done:
	}
	if srv.Err != nil {
		return BaselineResult{}, srv.Err
	}
	var r BaselineResult
	if _, err := fmt.Sscan(out.String(), &r.WallMs, &r.CPUMs, &r.Reads, &r.Writes); err != nil {
		return BaselineResult{}, fmt.Errorf("baseline server output %q: %w", out.String(), err)
	}
	return r, nil
}

// DialPlain opens the i-th of n connections to the baseline server srv
// at addr. The server may still be starting, so a failed dial is retried,
// but not for ever (out of descriptors, say, every dial fails).
func DialPlain(ctx context.Context, addr string, srv *Child, i, n int) (*websocket.Conn, error) {
	for tries := 0; ; tries++ {
		c, _, err := websocket.Dial(ctx, "ws://"+addr, nil)
		if err == nil {
			return c, nil
		}
		select {
		case <-srv.Done:
			return nil, fmt.Errorf("baseline server exited: %v", srv.Err)
		default:
		}
		if tries == 200 {
			return nil, fmt.Errorf("connection %d of %d to the plain server: %w", i+1, n, err)
		}
		if err := Sleep(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// IdleBaseline measures a plain websocket server holding n idle
// connections: the baseline server (its own process, reps 0) reads
// frames on each in its handler, as a plain server does, and reports its
// RSS before the clients and 2 s after the last has connected.
func IdleBaseline(ctx context.Context, n int, stderr io.Writer) (before, after int64, err error) {
	addr, err := FreeAddr()
	if err != nil {
		return 0, 0, err
	}
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	var out strings.Builder
	srv, err := StartChild(self, []string{"-baseline-server", addr, "-m", strconv.Itoa(n), "-baseline-reps", "0"}, &out, stderr)
	if err != nil {
		return 0, 0, err
	}
	defer srv.Stop(5 * time.Second)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range n {
		c, err := DialPlain(ctx, addr, srv, i, n)
		if err != nil {
			return 0, 0, err
		}
		defer c.CloseNow()
		c.CloseRead(ctx)
	}
	select {
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-srv.Done:
	}
	if srv.Err != nil {
		return 0, 0, srv.Err
	}
	if _, err := fmt.Sscan(out.String(), &before, &after); err != nil {
		return 0, 0, fmt.Errorf("baseline server output %q: %w", out.String(), err)
	}
	return before, after, nil
}

// BaselineServer accepts m websocket clients on addr, then reps times
// writes an outBytes frame to each and waits for an inBytes reply from
// each; it prints the median wall time per round and its own CPU per
// round, both in ms. With reps 0 it only holds the m connections, each
// handler reading frames as a plain server's does, and prints its RSS
// before them and 2 s after the last, in bytes (IdleBaseline).
func BaselineServer(ctx context.Context, addr string, m, outBytes, inBytes, reps int, stdout io.Writer) error {
	out := make([]byte, outBytes)
	conns := make(chan *websocket.Conn, m)
	idle := reps == 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(int64(inBytes + 1024))
		conns <- ws
		if idle {
			for {
				if _, _, err := ws.Read(r.Context()); err != nil {
					return
				}
			}
		}
		<-r.Context().Done()
	})}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go srv.Serve(ln)
	defer srv.Close()
	rss0, err := RSS(os.Getpid())
	if err != nil {
		return err
	}
	server := make([]*websocket.Conn, m)
	for i := range server {
		select {
		case server[i] = <-conns:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if idle {
		if err := Sleep(ctx, 2*time.Second); err != nil {
			return err
		}
		rss1, err := RSS(os.Getpid())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d %d\n", rss0, rss1)
		return nil
	}
	// One warm-up round, then the measured ones.
	round := func() {
		var wg sync.WaitGroup
		for _, ws := range server {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ws.Write(ctx, websocket.MessageBinary, out)
				ws.Read(ctx)
			}()
		}
		wg.Wait()
	}
	round()
	cpu0, err := ProcCPU(os.Getpid())
	if err != nil {
		return err
	}
	sys0, err := ProcSyscalls(os.Getpid())
	if err != nil {
		return err
	}
	var times []float64
	for range reps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t0 := time.Now()
		round()
		times = append(times, float64(time.Since(t0).Microseconds())/1000)
	}
	cpu1, err := ProcCPU(os.Getpid())
	if err != nil {
		return err
	}
	sys1, err := ProcSyscalls(os.Getpid())
	if err != nil {
		return err
	}
	slices.Sort(times)
	fmt.Fprintf(stdout, "%f %f %f %f\n", times[len(times)/2], (cpu1-cpu0)*1000/float64(reps),
		float64(sys1.Reads-sys0.Reads)/float64(reps), float64(sys1.Writes-sys0.Writes)/float64(reps))
	return nil
}
