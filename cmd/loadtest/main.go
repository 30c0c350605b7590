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
//	    N connected idle devices (no round starts): coordinator RSS, and
//	    its CPU while they stay connected.
//
//	loadtest -coordinator bin/coordinator -edges 3 -n 30000 -m 300 -T 10
//	    the cluster shape (cluster.go): a session process with an embedded
//	    NATS server and K edge processes, the devices spread over the
//	    edges; per component memory per device, CPU per round and per
//	    connection, round latency, and the session process's inbound
//	    bytes per round with the edges' pre-aggregation and without. With
//	    more devices than one process may hold open files for, the devices
//	    run in device worker processes (workers.go). See docs/scaling.md.
//
// The session is paused while the devices connect and a round needs one
// eligible device, so devices that drop (-drop k makes k of them leave
// mid-round) never stall it. The coordinator (every process of the
// cluster shape) runs in its own process group and is stopped, with
// everything it started, when the run ends:
// normally, on SIGINT or SIGTERM, or at -timeout; the temporary data
// directory is removed. See docs/coordinator.md for results.
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
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"browserfl/device"
	"browserfl/shared/wire"
)

func main() {
	// SIGINT and SIGTERM cancel the run: the coordinator child (its whole
	// process group) is stopped and the temporary directory removed
	// before the process exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
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
	blocks      int
	paced       bool
	drop        int
	timeout     time.Duration
	idleWindow  time.Duration
	edges       int
	edgeArgs    []string
	natsTap     bool
	killEdge    bool
	deviceProcs int
	samples     int      // synthetic samples per device (0: samplesPerDevice)
	args        []string // the command line (device workers get it too)
}

// teacherSecret is the teacher secret the load test writes into the
// coordinator's data directory before starting it, so that it can pause
// the session while its devices connect and resume it afterwards.
const teacherSecret = "loadtest-teacher-secret"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// Children write to stderr at once (each through its own copying
	// goroutine unless it is a file).
	if _, ok := stderr.(*os.File); !ok {
		stderr = &lockedWriter{w: stderr}
	}
	var o options
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.coordinator, "coordinator", "bin/coordinator", "coordinator binary to start")
	fs.IntVar(&o.n, "n", 1000, "devices in the session")
	fs.IntVar(&o.m, "m", 100, "cohort size")
	fs.IntVar(&o.T, "T", 50, "rounds")
	fs.IntVar(&o.idle, "idle", 0, "if > 0: connect this many idle devices and report memory (and CPU over -idle-window) instead")
	fs.DurationVar(&o.idleWindow, "idle-window", 10*time.Second, "with -idle: how long to measure the coordinator's idle CPU")
	fs.IntVar(&o.batch, "b", 1, "device minibatch")
	fs.StringVar(&o.algorithm, "algorithm", "nc", "algorithm")
	fs.StringVar(&o.compressor, "compressor", "", "uplink compressor spec")
	fs.DurationVar(&o.stagger, "stagger", 2*time.Millisecond, "delay between device connections")
	fs.IntVar(&o.baselineRep, "baseline-reps", 50, "repetitions of the loopback baseline")
	fs.BoolVar(&o.paced, "baseline-paced", false, "the baseline's clients answer after a random delay, uniform up to the coordinator's median round latency, as the devices do (they compute between), instead of at once: a diagnostic of how much of the CPU ratio is the rounds' pace")
	fs.IntVar(&o.blocks, "blocks", 4, "interleave the measurement: the rounds run in this many blocks, each followed by a block of the baseline (load that comes and goes then hits both alike)")
	fs.IntVar(&o.drop, "drop", 0, "devices that disconnect for good when they are first assigned a round (checks that rounds go on without them)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up (and stop the coordinator) after this long")
	fs.IntVar(&o.edges, "edges", 0, "if > 0: the cluster shape: the coordinator runs as -role session (embedded NATS) plus this many -role edge processes, the devices spread over the edges round robin")
	fs.BoolVar(&o.natsTap, "nats-tap", false, "with -edges: also subscribe to every cluster subject and count the envelopes by direction and kind (the NATS server, in the session process, then sends a copy of everything)")
	fs.BoolVar(&o.killEdge, "kill-edge", false, "with -edges: after the rounds, SIGKILL the first edge and measure its devices' move to the others (time, session and edge CPU per device)")
	fs.IntVar(&o.deviceProcs, "device-procs", 0, "with -edges: processes that run the devices (0 = as many as the open-files limit needs: one process holds at most that many connections)")
	workerRange := fs.String("worker-range", "", "internal: run devices lo:hi as a device worker")
	workerEdges := fs.String("worker-edges", "", "internal: the device worker's edge addresses, comma separated")
	workerSession := fs.String("worker-session", "", "internal: the device worker's session process URL")
	var so sybilOptions
	fs.IntVar(&so.k, "sybils", 0, "if > 0: measure honest rounds per minute without and with this many idle ids from one address (they answer pings, never answer a round, say hello again every -sybil-rehello), in alternating windows")
	fs.IntVar(&so.windows, "sybil-windows", 2, "with -sybils: pairs of windows (without, with)")
	fs.DurationVar(&so.window, "sybil-window", time.Minute, "with -sybils: length of each window")
	fs.DurationVar(&so.rehello, "sybil-rehello", 20*time.Second, "with -sybils: an idle id says hello again this often")
	fs.DurationVar(&so.deadline, "sybil-deadline", 20*time.Second, "with -sybils: the session's round deadline (the coordinator's default)")
	fs.DurationVar(&so.gap, "sybil-round-gap", 250*time.Millisecond, "with -sybils: the pause between rounds (the coordinator's default is 1s; with none, rounds of a few ms ask each device more often than its message rate limit allows)")
	fs.IntVar(&o.samples, "samples", 0, "synthetic samples per device (0: 8; a single-pass device makes samples/b releases)")
	policy := device.PolicyFlags(fs)
	edgeArgs := fs.String("edge-args", "", "with -edges: extra edge flags, space separated")
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
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if *bsrv != "" {
		return baselineServer(ctx, *bsrv, o.m, *boutSize, *binSize, o.baselineRep, stdout)
	}
	if *workerRange != "" {
		lo, hi, err := parseRange(*workerRange)
		if err != nil {
			return err
		}
		return runWorker(ctx, o, pol, lo, hi, strings.Split(*workerEdges, ","), *workerSession, stdout)
	}
	o.args = args
	if so.k > 0 {
		return runSybils(ctx, o, so, pol, stdout, stderr)
	}
	n := o.n
	if o.idle > 0 {
		n = o.idle
	}
	if per := o.samplesPer() / max(o.batch, 1); o.idle == 0 && o.T*o.m > n*per {
		// Beyond that the devices run out of data, leave, and the session
		// cannot finish: say so now rather than wait for -timeout.
		return fmt.Errorf("-T %d with -m %d needs %d updates, but %d devices of %d samples each (b = %d) can send at most %d: lower -T or -m, or raise -n",
			o.T, o.m, o.T*o.m, n, o.samplesPer(), o.batch, n*per)
	}
	if o.drop >= n {
		return fmt.Errorf("-drop %d leaves no device of %d", o.drop, n)
	}
	if o.edges < 0 || o.edges > 200 {
		return fmt.Errorf("-edges %d: want 0 (one process) to 200", o.edges)
	}
	if o.killEdge && o.edges < 2 {
		return errors.New("-kill-edge needs -edges 2 or more")
	}
	o.edgeArgs = strings.Fields(*edgeArgs)
	// Every device is a socket here and one in the process that holds it
	// (the cluster mode runs devices in worker processes beyond the limit).
	if err := raiseNoFile(uint64(n) + 1024); err != nil && o.edges == 0 {
		fmt.Fprintf(stderr, "loadtest: %v (ulimit -n may be too low for %d devices)\n", err, n)
	}
	dir, err := os.MkdirTemp("", "bfl-loadtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The coordinator reads its teacher secret from host.json in its data
	// directory (coordinator.Host) and keeps one written before it starts.
	if err := os.WriteFile(filepath.Join(dir, "host.json"), []byte(`{"teacher_secret":"`+teacherSecret+`"}`), 0o600); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	// Rounds need one eligible device: a round starts at once with a whole
	// cohort, and with fewer after the coordinator's fill wait, so devices
	// that drop never stall the session. The session is paused until
	// every device has connected, so that the measured rounds all see n.
	cargs := []string{"-listen", addr, "-data", dir, "-join-code", "LOADTEST", "-M", strconv.Itoa(n),
		"-m", strconv.Itoa(o.m), "-T", strconv.Itoa(o.T), "-b", strconv.Itoa(o.batch), "-algorithm", o.algorithm,
		"-deadline", "300s", "-round-gap", "0",
		"-dataset", "none", "-min-devices", "1", "-max-devices", strconv.Itoa(n + 10), "-log-level", "warn",
		// All devices come from one loopback address: lift the per-address gate.
		"-register-rate", "-1", "-register-global-rate", "-1", "-prehello-per-address", strconv.Itoa(n + 10),
		"-max-inactive", strconv.Itoa(n + 10),
		"-seed", "1"}
	if o.compressor != "" {
		cargs = append(cargs, "-compressor", o.compressor)
	}
	cargs = append(cargs, strings.Fields(*extra)...)
	if o.edges > 0 {
		return runCluster(ctx, o, pol, n, addr, cargs, stdout, stderr)
	}
	coord, err := startChild(o.coordinator, cargs, io.Discard, stderr)
	if err != nil {
		return fmt.Errorf("start coordinator: %w", err)
	}
	defer coord.stop(10 * time.Second)
	// A coordinator that exits early ends the run.
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	go func() {
		select {
		case <-coord.done:
			cancelRun(fmt.Errorf("coordinator exited: %v", coord.err))
		case <-ctx.Done():
		}
	}()
	fail := func(err error) error {
		if c := context.Cause(ctx); c != nil && c != ctx.Err() {
			return fmt.Errorf("%w (%v)", err, c)
		}
		return err
	}
	pid := coord.cmd.Process.Pid
	base := "http://" + addr
	if err := waitHealthy(ctx, base); err != nil {
		return fail(err)
	}
	if err := teacher(ctx, base, "pause"); err != nil {
		return fail(err)
	}
	var sess wire.SessionParams
	if err := getJSON(ctx, base+"/api/session?code=LOADTEST", &sess); err != nil {
		return fail(err)
	}
	rssIdle, _ := procRSS(pid)

	fl, err := startFleet(ctx, o, pol, sess, 0, n, direct("ws://"+addr+"/ws"))
	defer fl.stop()
	if err != nil {
		return fail(err)
	}
	start := fl.start
	if err := fl.waitConnected(ctx, n); err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "%d devices connected in %v\n", n, time.Since(start).Round(time.Millisecond))

	if o.idle > 0 {
		if err := sleep(ctx, 2*time.Second); err != nil {
			return fail(err)
		}
		rss, err := procRSS(pid)
		if err != nil {
			return err
		}
		// The coordinator's CPU while its devices only stay connected
		// (heartbeats, timers): it is paid during every round too.
		cpu0, err := procCPU(pid)
		if err != nil {
			return err
		}
		if err := sleep(ctx, o.idleWindow); err != nil {
			return fail(err)
		}
		cpu1, err := procCPU(pid)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "coordinator CPU with %d idle devices: %.1f ms per second (over %v)\n",
			n, (cpu1-cpu0)*1000/o.idleWindow.Seconds(), o.idleWindow)
		fmt.Fprintf(stdout, "coordinator RSS: %.1f MiB before devices, %.1f MiB with %d idle devices (%.1f KiB per device)\n",
			mib(rssIdle), mib(rss), n, float64(rss-rssIdle)/1024/float64(n))
		self, _ := procRSS(os.Getpid())
		fmt.Fprintf(stdout, "load tool RSS (the %d client connections): %.1f MiB\n", n, mib(self))
		return nil
	}

	// The rounds run in blocks, each followed by a block of the baseline
	// (the same frames over plain websockets), so that load that comes
	// and goes on a shared machine hits both alike. The coordinator is
	// paused while the baseline runs; its CPU and committed rounds are
	// read at the start and end of each block of rounds, so a round still
	// open when a block ends counts in neither.
	blocks := max(1, min(o.blocks, o.T))
	var coordCPU, coordRounds []float64
	var bls []baselineResult // one per block of the baseline
	var coordSys syscalls
	// Heartbeat pings the coordinator sent during the blocks of rounds
	// (browserfl_pings_total; a diagnostic: pingsOK turns false if a
	// scrape fails).
	var pings float64
	pingsOK := true
	pingCount := func() float64 {
		m, err := scrapeMetrics(ctx, base+"/metrics")
		if err != nil {
			pingsOK = false
			fmt.Fprintf(stderr, "loadtest: reading the coordinator's pings: %v\n", err)
			return 0
		}
		return m["browserfl_pings_total"]
	}
	var elapsed time.Duration
	committed := 0
	for b := range blocks {
		target := o.T * (b + 1) / blocks
		if target <= committed {
			continue
		}
		cpu0, err := procCPU(pid)
		if err != nil {
			return err
		}
		sys0, err := procSyscalls(pid)
		if err != nil {
			return err
		}
		pings0 := pingCount()
		from := committed
		runStart := time.Now()
		if err := teacher(ctx, base, "resume"); err != nil {
			return fail(err)
		}
		if err := waitRounds(ctx, base, target, 250*time.Millisecond); err != nil {
			return fail(err)
		}
		if committed, err = lastCommitted(ctx, base, target-1); err != nil {
			return fail(err)
		}
		cpu1, err := procCPU(pid)
		if err != nil {
			return err
		}
		sys1, err := procSyscalls(pid)
		if err != nil {
			return err
		}
		coordSys.reads += sys1.reads - sys0.reads
		coordSys.writes += sys1.writes - sys0.writes
		pings += pingCount() - pings0
		elapsed += time.Since(runStart)
		coordCPU = append(coordCPU, cpu1-cpu0)
		coordRounds = append(coordRounds, float64(committed-from))
		if committed >= o.T {
			break
		}
		if err := teacher(ctx, base, "pause"); err != nil {
			return fail(err)
		}
		if committed, err = settle(ctx, base, committed); err != nil {
			return fail(err)
		}
		bl, err := baselineBlock(ctx, base, o, committed, blocks, stderr)
		if err != nil {
			return fail(err)
		}
		bls = append(bls, bl)
	}
	hwm, _ := procHWM(pid)
	fl.stop()
	rs, err := readRounds(ctx, base, o.T)
	if err != nil {
		return fail(err)
	}
	lat, bin, bout, included := rs.lat, rs.bytesIn, rs.bytesOut, rs.included
	p50, p99 := quantile(lat, 0.5), quantile(lat, 0.99)

	fmt.Fprintf(stdout, "session: n = %d, m = %d, d = %d, T = %d, %s, b = %d; %d of %d updates included\n",
		n, o.m, sess.Dim, o.T, o.algorithm, o.batch, included, o.T*o.m)
	fmt.Fprintf(stdout, "round latency (start to commit): p50 %.0f ms, p99 %.0f ms; wall %.1f s for the measured rounds\n",
		p50, p99, elapsed.Seconds())
	fmt.Fprintf(stdout, "bytes per round: %.2f MB in (updates), %.2f MB out (assignments)\n",
		float64(bin)/float64(o.T)/1e6, float64(bout)/float64(o.T)/1e6)
	var cpuSum, roundSum float64
	for i := range coordCPU {
		cpuSum += coordCPU[i]
		roundSum += coordRounds[i]
	}
	cpuPerRound := cpuSum / roundSum
	fmt.Fprintf(stdout, "coordinator: %.3f CPU s per round over %.0f measured rounds (%.0f%% of one core while they ran), peak RSS %.1f MiB\n",
		cpuPerRound, roundSum, 100*cpuSum/elapsed.Seconds(), mib(hwm))
	fmt.Fprintf(stdout, "device compute (assignment received to update sent, summed): %.0f ms per round over the cohort\n",
		float64(fl.prepNanos.Load())/1e6/float64(o.T))
	if o.drop > 0 {
		fmt.Fprintf(stdout, "%d of the %d devices of -drop disconnected for good in the middle of a round\n", fl.dropped.Load(), o.drop)
	}
	if included == 0 {
		return errors.New("no update was included")
	}
	if len(bls) == 0 {
		// One block (or every round in the first): the baseline runs once,
		// after the rounds.
		bl, err := baselineBlock(ctx, base, o, o.T, 1, stderr)
		if err != nil {
			return fail(err)
		}
		bls = append(bls, bl)
	}
	inPer, outPer := frameSizes(rs, o)
	var mean baselineResult
	for _, b := range bls {
		k := float64(len(bls))
		mean.wallMs += b.wallMs / k
		mean.cpuMs += b.cpuMs / k
		mean.reads += b.reads / k
		mean.writes += b.writes / k
	}
	blMs, blWallMs := mean.cpuMs, mean.wallMs
	paced := ""
	if o.paced {
		paced = "; clients answer after a random delay up to the coordinator's median round (-baseline-paced)"
	}
	fmt.Fprintf(stdout, "loopback baseline (%d x (%d B out + %d B in) websocket frames, no logic, server in its own process; %d blocks of %d rounds between the coordinator's%s): wall median %.1f ms, server CPU %.1f ms per round\n",
		o.m, outPer, inPer, len(bls), max(1, o.baselineRep/blocks), paced, blWallMs, blMs)
	ratios := make([]string, 0, len(coordCPU))
	for i := range min(len(coordCPU), len(bls)) {
		ratios = append(ratios, fmt.Sprintf("%.2f", coordCPU[i]*1000/coordRounds[i]/bls[i].cpuMs))
	}
	fmt.Fprintf(stdout, "ratio coordinator CPU per round / baseline server CPU per round: %.2f (per block: %s)\n",
		cpuPerRound*1000/blMs, strings.Join(ratios, ", "))
	pingsPer := "n/a"
	if pingsOK {
		pingsPer = fmt.Sprintf("%.0f", pings/roundSum)
	}
	fmt.Fprintf(stdout, "system calls per round (/proc/PID/io): coordinator %.0f reads, %.0f writes (heartbeat pings per round: %s); baseline server %.0f reads, %.0f writes\n",
		float64(coordSys.reads)/roundSum, float64(coordSys.writes)/roundSum, pingsPer, mean.reads, mean.writes)
	fmt.Fprintf(stdout, "ratio coordinator round p50 / baseline wall: %.2f (the round includes the devices' compute)\n", p50/blWallMs)
	return nil
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// sleep waits d or until ctx is done (then it returns ctx's error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// teacher calls the teacher endpoint POST /api/teacher/action.
func teacher(ctx context.Context, base, action string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/teacher/"+action, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Teacher-Secret", teacherSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("teacher %s: %w", action, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("teacher %s: HTTP %d: %s", action, resp.StatusCode, strings.TrimSpace(string(b)))
	}
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

// waitHealthy polls base/healthz until it answers 200 or ctx is done.
func waitHealthy(ctx context.Context, base string) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("coordinator did not become healthy: %w", err)
		}
	}
}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// child is a process started in its own process group, so that stop
// reaches everything it started too.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, set before done is closed
}

func startChild(name string, args []string, stdout, stderr io.Writer) (*child, error) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// stop interrupts the child's process group, waits up to grace for the
// child to exit, then kills whatever is left of the group.
func (c *child) stop(grace time.Duration) {
	pgid := c.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGINT)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	}
	syscall.Kill(-pgid, syscall.SIGKILL) // ESRCH when the group is gone
	<-c.done
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

// procRSS returns the resident set size of pid (Linux /proc).
func procRSS(pid int) (int64, error) { return procStatusKB(pid, "VmRSS") }

// procHWM returns the peak resident set size of pid.
func procHWM(pid int) (int64, error) { return procStatusKB(pid, "VmHWM") }

func procStatusKB(pid int, key string) (int64, error) {
	v, err := procKeys(pid, "status", key)
	if err != nil {
		return 0, err
	}
	return v[0] * 1024, nil
}

// procKeys reads /proc/PID/file, made of "key: value [unit]" lines, and
// returns the integer values of keys (keys without their colon), in
// order; it is an error if one is missing.
func procKeys(pid int, file string, keys ...string) ([]int64, error) {
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

// syscalls counts a process's read-like and write-like system calls
// (/proc/PID/io's syscr and syscw: read, recvmsg, ... and write,
// writev, pwrite, ...).
type syscalls struct{ reads, writes int64 }

// procSyscalls returns pid's system call counts so far.
func procSyscalls(pid int) (syscalls, error) {
	v, err := procKeys(pid, "io", "syscr", "syscw")
	if err != nil {
		return syscalls{}, err
	}
	return syscalls{reads: v[0], writes: v[1]}, nil
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

type baselineResult struct{ wallMs, cpuMs, reads, writes float64 }

// frameSizes returns the mean update frame and round frame sizes of the
// recorded rounds: the baseline moves frames of these sizes.
func frameSizes(rs rounds, o options) (in, out int) {
	return int(float64(rs.bytesIn) / float64(max(1, rs.included))), int(float64(rs.bytesOut) / float64(max(1, rs.recorded*o.m)))
}

// baselineBlock runs one block of the baseline (-baseline-reps / blocks
// repetitions) with the frame sizes of the first committed rounds.
func baselineBlock(ctx context.Context, base string, o options, committed, blocks int, stderr io.Writer) (baselineResult, error) {
	rs, err := readRounds(ctx, base, committed)
	if err != nil {
		return baselineResult{}, err
	}
	if rs.included == 0 {
		return baselineResult{}, errors.New("no update was included")
	}
	in, out := frameSizes(rs, o)
	var pace time.Duration
	if o.paced {
		pace = time.Duration(quantile(rs.lat, 0.5) * float64(time.Millisecond))
	}
	bl, err := runBaseline(ctx, o.m, out, in, max(1, o.baselineRep/blocks), pace, stderr)
	if err != nil {
		return bl, fmt.Errorf("baseline: %w", err)
	}
	return bl, nil
}

// lastCommitted returns the last committed round, at least after (which
// must be committed).
func lastCommitted(ctx context.Context, base string, after int) (int, error) {
	var recs []struct {
		T int `json:"t"`
	}
	if err := getJSON(ctx, base+"/api/rounds?code=LOADTEST&after="+strconv.Itoa(after), &recs); err != nil {
		return 0, err
	}
	last := after
	for _, r := range recs {
		last = max(last, r.T)
	}
	return last, nil
}

// settle waits, after a pause, until the round that was open (if any)
// has committed: until the last committed round has not changed for a
// second. It returns that round.
func settle(ctx context.Context, base string, committed int) (int, error) {
	for still := 0; still < 4; still++ {
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return 0, err
		}
		last, err := lastCommitted(ctx, base, committed)
		if err != nil {
			return 0, err
		}
		if last != committed {
			committed, still = last, -1
		}
	}
	return committed, nil
}

// runBaseline starts the baseline server as a child process, connects m
// echoing clients and reads the server's measurements.
func runBaseline(ctx context.Context, m, outBytes, inBytes, reps int, pace time.Duration, stderr io.Writer) (baselineResult, error) {
	addr, err := freeAddr()
	if err != nil {
		return baselineResult{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return baselineResult{}, err
	}
	var out strings.Builder
	srv, err := startChild(self, []string{"-baseline-server", addr, "-m", strconv.Itoa(m), "-baseline-out", strconv.Itoa(outBytes),
		"-baseline-in", strconv.Itoa(inBytes), "-baseline-reps", strconv.Itoa(reps)}, &out, stderr)
	if err != nil {
		return baselineResult{}, err
	}
	defer srv.stop(5 * time.Second)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make([]byte, inBytes)
	for range m {
		var c *websocket.Conn
		for {
			c, _, err = websocket.Dial(ctx, "ws://"+addr, nil)
			if err == nil {
				break
			}
			select {
			case <-srv.done:
				return baselineResult{}, fmt.Errorf("baseline server exited: %v", srv.err)
			default:
			}
			if err := sleep(ctx, 50*time.Millisecond); err != nil {
				return baselineResult{}, err
			}
		}
		defer c.CloseNow()
		c.SetReadLimit(int64(outBytes + 1024))
		go func() {
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
				if pace > 0 {
					if err := sleep(ctx, rand.N(pace)); err != nil {
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
		return baselineResult{}, ctx.Err()
	case <-srv.done:
	}
	if srv.err != nil {
		return baselineResult{}, srv.err
	}
	var r baselineResult
	if _, err := fmt.Sscan(out.String(), &r.wallMs, &r.cpuMs, &r.reads, &r.writes); err != nil {
		return baselineResult{}, fmt.Errorf("baseline server output %q: %w", out.String(), err)
	}
	return r, nil
}

// baselineServer accepts m websocket clients on addr, then reps times
// writes an outBytes frame to each and waits for an inBytes reply from
// each; it prints the median wall time per round and its own CPU per
// round, both in ms.
func baselineServer(ctx context.Context, addr string, m, outBytes, inBytes, reps int, stdout io.Writer) error {
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
	server := make([]*websocket.Conn, m)
	for i := range server {
		select {
		case server[i] = <-conns:
		case <-ctx.Done():
			return ctx.Err()
		}
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
	sys0, err := procSyscalls(os.Getpid())
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
	cpu1, err := procCPU(os.Getpid())
	if err != nil {
		return err
	}
	sys1, err := procSyscalls(os.Getpid())
	if err != nil {
		return err
	}
	slices.Sort(times)
	fmt.Fprintf(stdout, "%f %f %f %f\n", times[len(times)/2], (cpu1-cpu0)*1000/float64(reps),
		float64(sys1.reads-sys0.reads)/float64(reps), float64(sys1.writes-sys0.writes)/float64(reps))
	return nil
}
