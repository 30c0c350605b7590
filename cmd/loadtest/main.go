// Command loadtest runs N headless devices (the device runtime of
// package device, real websockets) in one process against a coordinator
// it starts as a child process on loopback, and reports what item 8 of
// the coordinator issue asks for. Two modes:
//
//	loadtest -coordinator bin/coordinator -n 1000 -m 100 -T 50
//	    a session of T rounds with cohort m: round latency p50/p99,
//	    coordinator CPU seconds per round and peak RSS, bytes per round,
//	    and the ratio of the coordinator's round time to the time to move
//	    the same bytes over loopback websockets, measured in the same run.
//
//	loadtest -coordinator bin/coordinator -idle 10000
//	    N connected idle devices (no round starts): coordinator RSS.
//
// See docs/coordinator.md for results.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/wire"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

type options struct {
	coordinator string
	n, m, T     int
	idle        int
	batch       int
	algorithm   string
	compressor  string
	stagger     time.Duration
	baselineRep int
}

func run(args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.coordinator, "coordinator", "bin/coordinator", "coordinator binary to start")
	fs.IntVar(&o.n, "n", 1000, "devices in the session")
	fs.IntVar(&o.m, "m", 100, "cohort size")
	fs.IntVar(&o.T, "T", 50, "rounds")
	fs.IntVar(&o.idle, "idle", 0, "if > 0: connect this many idle devices and report memory instead")
	fs.IntVar(&o.batch, "b", 1, "device minibatch")
	fs.StringVar(&o.algorithm, "algorithm", "nc", "algorithm")
	fs.StringVar(&o.compressor, "compressor", "", "uplink compressor spec")
	fs.DurationVar(&o.stagger, "stagger", 2*time.Millisecond, "delay between device connections")
	fs.IntVar(&o.baselineRep, "baseline-reps", 50, "repetitions of the loopback baseline")
	policy := device.PolicyFlags(fs)
	extra := fs.String("coordinator-args", "", "extra coordinator flags, space separated (e.g. -cpuprofile /tmp/c.prof)")
	bsrv := fs.String("baseline-server", "", "internal: run the baseline's server side on this address")
	boutSize := fs.Int("baseline-out", 0, "internal: baseline frame size out")
	binSize := fs.Int("baseline-in", 0, "internal: baseline frame size in")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pol, err := policy()
	if err != nil {
		return err
	}
	if *bsrv != "" {
		return baselineServer(*bsrv, o.m, *boutSize, *binSize, o.baselineRep, stdout)
	}
	n := o.n
	if o.idle > 0 {
		n = o.idle
	}
	dir, err := os.MkdirTemp("", "bfl-loadtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	minDevices := n
	if o.idle > 0 {
		minDevices = n + 1 // never start a round
	}
	cargs := []string{"-listen", addr, "-data", dir, "-join-code", "LOADTEST", "-M", strconv.Itoa(n),
		"-m", strconv.Itoa(o.m), "-T", strconv.Itoa(o.T), "-b", strconv.Itoa(o.batch), "-algorithm", o.algorithm,
		"-deadline", "300s", "-round-gap", "0",
		"-dataset", "none", "-min-devices", strconv.Itoa(minDevices), "-max-devices", strconv.Itoa(n + 10), "-log-level", "warn",
		// All devices come from one loopback address: lift the per-address gate.
		"-register-rate", "-1", "-register-global-rate", "-1", "-prehello-per-address", strconv.Itoa(n + 10),
		"-max-inactive", strconv.Itoa(n + 10),
		"-seed", "1"}
	if o.compressor != "" {
		cargs = append(cargs, "-compressor", o.compressor)
	}
	cargs = append(cargs, strings.Fields(*extra)...)
	cmd := exec.Command(o.coordinator, cargs...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start coordinator: %w", err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	base := "http://" + addr
	if err := waitHealthy(base, 30*time.Second); err != nil {
		return err
	}
	var sess wire.SessionParams
	if err := getJSON(base+"/api/session?code=LOADTEST", &sess); err != nil {
		return err
	}
	rssIdle, _ := procRSS(cmd.Process.Pid)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var connected, failed atomic.Int64
	var prepNanos atomic.Int64
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		rng := rand.New(rand.NewPCG(uint64(i), 17))
		data := make([]dataset.Sample, 8)
		for j := range data {
			x := make([]float32, sess.Features)
			for k := range x {
				x[k] = rng.Float32()
			}
			data[j] = dataset.Sample{X: x, Label: rng.IntN(sess.Classes)}
		}
		var roundStart time.Time
		cfg := device.Config{
			URL: "ws://" + addr + "/ws", JoinCode: "LOADTEST", Storage: &device.MemStorage{}, Data: data,
			MinBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second,
			OnEvent: func(e device.Event) {
				switch e.Kind {
				case device.EventConnected:
					connected.Add(1)
				case device.EventRound:
					roundStart = time.Now()
				case device.EventSent:
					prepNanos.Add(int64(time.Since(roundStart)))
				}
			},
		}
		cfg.SetPolicy(pol)
		rt, err := device.New(ctx, cfg)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rt.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				failed.Add(1)
				errs <- err
			}
		}()
		time.Sleep(o.stagger)
	}
	for connected.Load() < int64(n) {
		if failed.Load() > 0 {
			return fmt.Errorf("a device failed: %w", <-errs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintf(stdout, "%d devices connected in %v\n", n, time.Since(start).Round(time.Millisecond))

	if o.idle > 0 {
		time.Sleep(2 * time.Second)
		rss, err := procRSS(cmd.Process.Pid)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "coordinator RSS: %.1f MiB before devices, %.1f MiB with %d idle devices (%.1f KiB per device)\n",
			mib(rssIdle), mib(rss), n, float64(rss-rssIdle)/1024/float64(n))
		self, _ := procRSS(os.Getpid())
		fmt.Fprintf(stdout, "load tool RSS (the %d client connections): %.1f MiB\n", n, mib(self))
		return nil
	}

	cpu0, err := procCPU(cmd.Process.Pid)
	if err != nil {
		return err
	}
	runStart := time.Now()
	wg.Wait()
	elapsed := time.Since(runStart)
	cpu1, err := procCPU(cmd.Process.Pid)
	if err != nil {
		return err
	}
	hwm, _ := procHWM(cmd.Process.Pid)
	var recs []struct {
		T         int   `json:"t"`
		Cohort    int   `json:"cohort"`
		Included  int   `json:"included"`
		LatencyMs int64 `json:"latency_ms"`
		BytesIn   int64 `json:"bytes_in"`
		BytesOut  int64 `json:"bytes_out"`
	}
	if err := getJSON(base+"/api/rounds?code=LOADTEST", &recs); err != nil {
		return err
	}
	if len(recs) != o.T {
		return fmt.Errorf("%d rounds recorded, want %d", len(recs), o.T)
	}
	lat := make([]float64, len(recs))
	var bin, bout int64
	included := 0
	for i, r := range recs {
		lat[i] = float64(r.LatencyMs)
		bin += r.BytesIn
		bout += r.BytesOut
		included += r.Included
	}
	slices.Sort(lat)
	p50, p99 := quantile(lat, 0.5), quantile(lat, 0.99)

	fmt.Fprintf(stdout, "session: n = %d, m = %d, d = %d, T = %d, %s, b = %d; %d of %d updates included\n",
		n, o.m, sess.Dim, o.T, o.algorithm, o.batch, included, o.T*o.m)
	fmt.Fprintf(stdout, "round latency (start to commit): p50 %.0f ms, p99 %.0f ms; wall %.1f s for %d rounds\n",
		p50, p99, elapsed.Seconds(), o.T)
	fmt.Fprintf(stdout, "bytes per round: %.2f MB in (updates), %.2f MB out (assignments)\n",
		float64(bin)/float64(len(recs))/1e6, float64(bout)/float64(len(recs))/1e6)
	cpuPerRound := (cpu1 - cpu0) / float64(o.T)
	fmt.Fprintf(stdout, "coordinator: %.3f CPU s per round (%.0f%% of one core over the run), peak RSS %.1f MiB\n",
		cpuPerRound, 100*(cpu1-cpu0)/elapsed.Seconds(), mib(hwm))
	fmt.Fprintf(stdout, "device compute (assignment received to update sent, summed): %.0f ms per round over the cohort\n",
		float64(prepNanos.Load())/1e6/float64(o.T))
	cancel()

	// Baseline: the same frames over loopback websockets with no
	// coordinator logic. Its server side runs in its own process (this
	// binary with -baseline-server) so that its CPU is measured the same
	// way as the coordinator's: it writes an assignment-sized frame to m
	// clients and waits for an update-sized reply from each, reps times.
	inPer := int(float64(bin) / float64(included))
	outPer := int(float64(bout) / float64(o.T*o.m))
	bl, err := runBaseline(o.m, outPer, inPer, o.baselineRep)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	fmt.Fprintf(stdout, "loopback baseline (%d x (%d B out + %d B in) websocket frames, no logic, server in its own process): wall median %.1f ms, server CPU %.1f ms per round\n",
		o.m, outPer, inPer, bl.wallMs, bl.cpuMs)
	fmt.Fprintf(stdout, "ratio coordinator CPU per round / baseline server CPU per round: %.2f\n", cpuPerRound*1000/bl.cpuMs)
	fmt.Fprintf(stdout, "ratio coordinator round p50 / baseline wall: %.2f (the round includes the devices' compute)\n", p50/bl.wallMs)
	return nil
}

func quantile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitHealthy(base string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("coordinator did not become healthy")
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// procRSS returns the resident set size of pid (Linux /proc).
func procRSS(pid int) (int64, error) { return procStatusKB(pid, "VmRSS:") }

// procHWM returns the peak resident set size of pid.
func procHWM(pid int) (int64, error) { return procStatusKB(pid, "VmHWM:") }

func procStatusKB(pid int, key string) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, err := strconv.ParseInt(f[1], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", key, pid)
}

// procCPU returns user+system CPU seconds of pid (assumes USER_HZ = 100,
// the Linux default).
func procCPU(pid int) (float64, error) {
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

type baselineResult struct{ wallMs, cpuMs float64 }

// runBaseline starts the baseline server as a child process, connects m
// echoing clients and reads the server's measurements.
func runBaseline(m, outBytes, inBytes, reps int) (baselineResult, error) {
	addr, err := freeAddr()
	if err != nil {
		return baselineResult{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return baselineResult{}, err
	}
	cmd := exec.Command(self, "-baseline-server", addr, "-m", strconv.Itoa(m), "-baseline-out", strconv.Itoa(outBytes),
		"-baseline-in", strconv.Itoa(inBytes), "-baseline-reps", strconv.Itoa(reps))
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return baselineResult{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := make([]byte, inBytes)
	var conns []*websocket.Conn
	deadline := time.Now().Add(10 * time.Second)
	for len(conns) < m {
		c, _, err := websocket.Dial(ctx, "ws://"+addr, nil)
		if err != nil {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				return baselineResult{}, err
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		c.SetReadLimit(int64(outBytes + 1024))
		conns = append(conns, c)
		go func() {
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
				if err := c.Write(ctx, websocket.MessageBinary, in); err != nil {
					return
				}
			}
		}()
	}
	if err := cmd.Wait(); err != nil {
		return baselineResult{}, err
	}
	var r baselineResult
	if _, err := fmt.Sscan(out.String(), &r.wallMs, &r.cpuMs); err != nil {
		return baselineResult{}, fmt.Errorf("baseline server output %q: %w", out.String(), err)
	}
	return r, nil
}

// baselineServer accepts m websocket clients on addr, then reps times
// writes an outBytes frame to each and waits for an inBytes reply from
// each; it prints the median wall time per round and its own CPU per
// round, both in ms.
func baselineServer(addr string, m, outBytes, inBytes, reps int, stdout io.Writer) error {
	out := make([]byte, outBytes)
	conns := make(chan *websocket.Conn, m)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(int64(inBytes + 1024))
		conns <- ws
		<-r.Context().Done()
	})}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go srv.Serve(ln)
	defer srv.Close()
	ctx := context.Background()
	server := make([]*websocket.Conn, m)
	for i := range server {
		server[i] = <-conns
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
	cpu0, err := procCPU(os.Getpid())
	if err != nil {
		return err
	}
	var times []float64
	for range reps {
		t0 := time.Now()
		round()
		times = append(times, float64(time.Since(t0).Microseconds())/1000)
	}
	cpu1, err := procCPU(os.Getpid())
	if err != nil {
		return err
	}
	slices.Sort(times)
	fmt.Fprintf(stdout, "%f %f\n", times[len(times)/2], (cpu1-cpu0)*1000/float64(reps))
	return nil
}
