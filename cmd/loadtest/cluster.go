package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"browserfl/coordinator/bus"
	"browserfl/device"
	"browserfl/internal/loadtest"
	"browserfl/shared/wire"
)

// clusterRoundGap is the session's pause between rounds in the cluster
// mode (see runCluster).
const clusterRoundGap = 500 * time.Millisecond

// component is one process of the cluster shape the load test runs.
type component struct {
	name   string
	addr   string // HTTP listen address
	c      *loadtest.Child
	killed atomic.Bool // its exit is the load test's doing
	rss0   int64       // RSS before any device connected
}

// clusterRun is one run of the cluster shape: its components and what
// its stages share.
type clusterRun struct {
	ctx            context.Context
	cancel         context.CancelCauseFunc
	o              options
	n              int
	stdout, stderr io.Writer

	comps    []*component // comps[0] is the session process
	sess     *component
	edges    []*component
	base     string // the session process's HTTP URL
	natsAddr string
	ids      []string // the edges' ids
	keysDir  string   // the edges' NATS keys
	params   wire.SessionParams
	// connectStart is when the devices started to connect.
	connectStart time.Time
}

// fail adds the run's cause (a component that exited) to err.
func (r *clusterRun) fail(err error) error {
	if c := context.Cause(r.ctx); c != nil && c != r.ctx.Err() {
		return fmt.Errorf("%w (%v)", err, c)
	}
	return err
}

// runCluster is the load test against the cluster shape (-edges K): the
// coordinator binary as -role session with an embedded NATS server, and K
// -role edge processes, each on its own port; device i dials edge i mod
// K. cargs are the session's flags (the one-process coordinator's),
// addr its HTTP address. It reports, per component, what the
// one-process run reports for the coordinator, and the session
// process's inbound bytes per round with the edges' pre-aggregation
// against what it would receive if every update were forwarded.
func runCluster(ctx context.Context, o options, pol device.Policy, n int, addr string, cargs []string, stdout, stderr io.Writer) error {
	natsAddr, err := loadtest.FreeAddr()
	if err != nil {
		return err
	}
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	r := &clusterRun{ctx: ctx, cancel: cancelRun, o: o, n: n, stdout: stdout, stderr: stderr, natsAddr: natsAddr}
	defer func() { stopComponents(r.comps) }()
	if err := r.startSession(addr, cargs); err != nil {
		return err
	}
	if err := r.startEdges(); err != nil {
		return err
	}
	cpuC0, err := componentsCPU(r.comps)
	if err != nil {
		return r.fail(err)
	}
	fl, stopDevices, err := r.connectDevices(pol)
	defer stopDevices()
	if err != nil {
		return err
	}
	connectTime := time.Since(r.connectStart)
	cpuC1, err := componentsCPU(r.comps)
	if err != nil {
		return r.fail(err)
	}
	fmt.Fprintf(stdout, "%d devices connected over %d edges in %v\n", n, len(r.edges), connectTime.Round(time.Millisecond))
	if err := r.reportIdleMemory(fl); err != nil {
		return err
	}
	idleRate, err := r.idleCPU()
	if err != nil {
		return err
	}
	r.reportConnection(cpuC0, cpuC1, idleRate, connectTime)
	if o.idle > 0 {
		return nil
	}
	return r.rounds(fl, idleRate)
}

// start starts a component; one that exits early (not killed by the
// load test) ends the run.
func (r *clusterRun) start(name, addr string, args []string) (*component, error) {
	c, err := loadtest.StartChild(r.o.coordinator, args, io.Discard, r.stderr)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	comp := &component{name: name, addr: addr, c: c}
	r.comps = append(r.comps, comp)
	go func() {
		select {
		case <-c.Done:
			if !comp.killed.Load() {
				r.cancel(fmt.Errorf("%s exited: %v", name, c.Err))
			}
		case <-r.ctx.Done():
		}
	}()
	return comp, nil
}

// startSession starts the session process at addr with cargs, waits
// until it is healthy, pauses its session and reads its parameters.
func (r *clusterRun) startSession(addr string, cargs []string) error {
	// The session has one round more than the load test measures, and a
	// gap between rounds: the measurement ends in the gap after round T,
	// before the session's end sends every device its last messages
	// (which are per session, not per round).
	// With -kill-edge the session must not end: it has many more rounds
	// and is paused after round T.
	sessionT := r.o.T + 1
	if r.o.killEdge {
		sessionT = r.o.T + 1000
	}
	// The session process generates each edge's NATS key in its data
	// directory (DATA/nats/edge-ID.nk); the edges read them there.
	r.ids = make([]string, r.o.edges)
	for k := range r.ids {
		r.ids[k] = "e" + strconv.Itoa(k)
	}
	r.keysDir = filepath.Join(loadtest.ArgValue(cargs, "-data"), "nats")
	sargs := append(cargs[:len(cargs):len(cargs)], "-role", "session", "-nats-listen", r.natsAddr, "-edges", strings.Join(r.ids, ","),
		"-T", strconv.Itoa(sessionT), "-round-gap", clusterRoundGap.String())
	sess, err := r.start("session process", addr, sargs)
	if err != nil {
		return err
	}
	r.sess = sess
	r.base = "http://" + addr
	if err := loadtest.WaitHealthy(r.ctx, r.base); err != nil {
		return r.fail(err)
	}
	if err := teacher(r.ctx, r.base, "pause"); err != nil {
		return r.fail(err)
	}
	if err := loadtest.GetJSON(r.ctx, r.base+"/api/session?code=LOADTEST", &r.params); err != nil {
		return r.fail(err)
	}
	return nil
}

// startEdges starts the edges and waits until each is healthy, then
// reads every component's RSS before the devices.
func (r *clusterRun) startEdges() error {
	lim := strconv.Itoa(r.n + 10)
	for k := range r.o.edges {
		eaddr, err := loadtest.FreeAddr()
		if err != nil {
			return err
		}
		args := []string{"-role", "edge", "-nats", "nats://" + r.natsAddr, "-edge-id", r.ids[k],
			"-nats-nkey", bus.EdgeSeedFile(r.keysDir, r.ids[k]),
			"-listen", eaddr, "-session-url", r.base, "-max-devices", lim, "-log-level", "warn",
			// All devices come from one loopback address: lift the per-address gate.
			"-register-rate", "-1", "-register-global-rate", "-1", "-prehello-per-address", lim}
		e, err := r.start("edge e"+strconv.Itoa(k), eaddr, append(args, r.o.edgeArgs...))
		if err != nil {
			return err
		}
		r.edges = append(r.edges, e)
	}
	// An edge is healthy once it has heard the session's beat.
	for _, e := range r.edges {
		if err := loadtest.WaitHealthy(r.ctx, "http://"+e.addr); err != nil {
			return r.fail(fmt.Errorf("%s: %w", e.name, err))
		}
	}
	for _, c := range r.comps {
		c.rss0, _ = loadtest.RSS(c.c.Cmd.Process.Pid)
	}
	return nil
}

// connectDevices starts the devices, in this process or in device
// worker processes, and waits until all n are connected; stop stops
// them (call it even on an error).
func (r *clusterRun) connectDevices(pol device.Policy) (fl devices, stop func(), err error) {
	stop = func() {}
	// One process holds at most its open-files limit of connections:
	// beyond, the devices run in device worker processes.
	procs := r.o.deviceProcs
	if procs <= 0 {
		per := max(int(loadtest.NoFileLimit())-1024, 1000)
		procs = (r.n + per - 1) / per
	}
	edgeAddrs := make([]string, len(r.edges))
	for k, e := range r.edges {
		edgeAddrs[k] = e.addr
	}
	r.connectStart = time.Now()
	if procs <= 1 {
		f, err := startFleet(r.ctx, r.o, pol, r.params, 0, r.n, edgeTargets(edgeAddrs))
		fl, stop = f, f.stop
		if err != nil {
			return nil, stop, r.fail(err)
		}
	} else {
		ws, err := startWorkers(r.o, r.o.args, r.n, procs, edgeAddrs, r.base, r.stderr, func(err error) { r.cancel(err) })
		if err != nil {
			return nil, stop, r.fail(err)
		}
		fl, stop = ws, ws.stop
		fmt.Fprintf(r.stdout, "devices run in %d device worker processes\n", procs)
	}
	if err := fl.waitConnected(r.ctx, r.n); err != nil {
		return nil, stop, r.fail(err)
	}
	return fl, stop, nil
}

// reportIdleMemory reports the idle memory: each edge's growth over the
// devices it holds, and the session's over all of them (its device
// table).
func (r *clusterRun) reportIdleMemory(fl devices) error {
	if err := loadtest.Sleep(r.ctx, 2*time.Second); err != nil {
		return r.fail(err)
	}
	var grew, held int64
	for _, e := range r.edges {
		rss, err := loadtest.RSS(e.c.Cmd.Process.Pid)
		if err != nil {
			return r.fail(err)
		}
		met, err := loadtest.ScrapeMetrics(r.ctx, "http://"+e.addr+"/metrics")
		if err != nil {
			return r.fail(fmt.Errorf("%s: %w", e.name, err))
		}
		devs := int64(met["browserfl_edge_devices"])
		fmt.Fprintf(r.stdout, "%s: RSS %.1f MiB before devices, %.1f MiB with %d devices (%.1f KiB per device)\n",
			e.name, loadtest.MiB(e.rss0), loadtest.MiB(rss), devs, loadtest.PerDeviceKiB(rss-e.rss0, devs))
		grew += rss - e.rss0
		held += devs
	}
	fmt.Fprintf(r.stdout, "edges: idle memory %.1f KiB per connected device (RSS growth summed over the edges / devices they hold)\n",
		loadtest.PerDeviceKiB(grew, held))
	srss, err := loadtest.RSS(r.sess.c.Cmd.Process.Pid)
	if err != nil {
		return r.fail(err)
	}
	fmt.Fprintf(r.stdout, "session process: RSS %.1f MiB before devices, %.1f MiB with %d devices (%.1f KiB per device: its device table)\n",
		loadtest.MiB(r.sess.rss0), loadtest.MiB(srss), r.n, loadtest.PerDeviceKiB(srss-r.sess.rss0, int64(r.n)))
	fmt.Fprintf(r.stdout, "load tool RSS (the %d client connections): %.1f MiB\n", r.n, loadtest.MiB(fl.rss()))
	return nil
}

// idleCPU measures and reports each component's idle CPU (heartbeats,
// beats, timers), paid during the rounds too and during the gaps between
// them, in CPU seconds per second.
func (r *clusterRun) idleCPU() ([]float64, error) {
	cpu0, err := componentsCPU(r.comps)
	if err != nil {
		return nil, r.fail(err)
	}
	if err := loadtest.Sleep(r.ctx, r.o.idleWindow); err != nil {
		return nil, r.fail(err)
	}
	cpu1, err := componentsCPU(r.comps)
	if err != nil {
		return nil, r.fail(err)
	}
	idleRate := make([]float64, len(r.comps))
	for i, c := range r.comps {
		idleRate[i] = (cpu1[i] - cpu0[i]) / r.o.idleWindow.Seconds()
		fmt.Fprintf(r.stdout, "%s CPU with idle devices: %.1f ms per second (over %v)\n", c.name, idleRate[i]*1000, r.o.idleWindow)
	}
	return idleRate, nil
}

// reportConnection reports the connection phase's CPU (cpuC0 to cpuC1):
// every device new, so each hello registers an id (a store write in the
// session process). Net of idle: devices arrive at a steady rate, so the
// phase held half of them on average and paid half the idle rate
// measured with all of them.
func (r *clusterRun) reportConnection(cpuC0, cpuC1, idleRate []float64, connectTime time.Duration) {
	var ecpuC, eidleC float64
	for i := 1; i < len(r.comps); i++ {
		ecpuC += cpuC1[i] - cpuC0[i]
		eidleC += idleRate[i] * connectTime.Seconds() / 2
	}
	scpuC := cpuC1[0] - cpuC0[0]
	sidleC := idleRate[0] * connectTime.Seconds() / 2
	n := float64(r.n)
	fmt.Fprintf(r.stdout, "connection phase (new devices, %.1f s): session process %.0f us CPU per hello (%.0f net of idle), edges %.0f us per connection (%.0f net of idle)\n",
		connectTime.Seconds(), scpuC*1e6/n, (scpuC-sidleC)*1e6/n, ecpuC*1e6/n, (ecpuC-eidleC)*1e6/n)
}

// clusterWindow is what the cluster run reads around its T rounds.
type clusterWindow struct {
	cpu0, cpu1 []float64                             // per component
	s0, s1     map[string]float64                    // the session process's metrics
	e0, e1     []map[string]float64                  // each edge's
	tap0, tap1 map[loadtest.TapKey]loadtest.TapCount // with -nats-tap
	hwm        []int64                               // peak RSS per component
	elapsed    time.Duration
}

// rounds runs the T measured rounds and reports them (then, with
// -kill-edge, the edge's loss).
func (r *clusterRun) rounds(fl devices, idleRate []float64) error {
	var tap *loadtest.Tap
	var w clusterWindow
	var err error
	if r.o.natsTap {
		if tap, err = loadtest.StartTap("nats://"+r.natsAddr, "browserfl", r.keysDir, r.ids); err != nil {
			return r.fail(err)
		}
		defer tap.Close()
		w.tap0 = tap.Snapshot()
	}
	if err := r.window(&w); err != nil {
		return err
	}
	if tap != nil {
		w.tap1 = tap.Snapshot()
	}
	w.hwm = make([]int64, len(r.comps))
	for i, c := range r.comps {
		w.hwm[i], _ = loadtest.HWM(c.c.Cmd.Process.Pid)
	}
	if !r.o.killEdge {
		fl.stop() // (with -kill-edge they stay for that)
	}
	rs, err := readRounds(r.ctx, r.base, r.o.T)
	if err != nil {
		return r.fail(err)
	}
	r.reportCost(rs, w, idleRate)
	r.reportBytes(rs, w)
	if tap != nil {
		loadtest.PrintTap(r.stdout, w.tap0, w.tap1, r.o.T)
	}
	if r.o.drop > 0 {
		fmt.Fprintf(r.stdout, "%d of the %d devices of -drop disconnected for good in the middle of a round\n", fl.droppedCount(), r.o.drop)
	}
	if rs.included == 0 {
		return errors.New("no update was included")
	}
	if r.o.killEdge {
		return r.fail(killEdge(r.ctx, r.comps, idleRate, r.stdout))
	}
	return nil
}

// window resumes the session, waits for round T and reads the
// components' CPU and metrics around it into w.
func (r *clusterRun) window(w *clusterWindow) error {
	var err error
	if w.s0, w.e0, err = scrapeCluster(r.ctx, r.sess, r.edges); err != nil {
		return r.fail(err)
	}
	if w.cpu0, err = componentsCPU(r.comps); err != nil {
		return r.fail(err)
	}
	runStart := time.Now()
	if err := teacher(r.ctx, r.base, "resume"); err != nil {
		return r.fail(err)
	}
	if err := loadtest.WaitRounds(r.ctx, r.base, r.o.T, clusterRoundGap/10); err != nil {
		return r.fail(err)
	}
	w.elapsed = time.Since(runStart)
	if w.cpu1, err = componentsCPU(r.comps); err != nil {
		return r.fail(err)
	}
	if r.o.killEdge {
		if err := teacher(r.ctx, r.base, "pause"); err != nil {
			return r.fail(err)
		}
	}
	if w.s1, w.e1, err = scrapeCluster(r.ctx, r.sess, r.edges); err != nil {
		return r.fail(err)
	}
	return nil
}

// reportCost reports the rounds' latency and each component's CPU and
// peak memory.
func (r *clusterRun) reportCost(rs rounds, w clusterWindow, idleRate []float64) {
	o, T, elapsed := r.o, float64(r.o.T), w.elapsed
	fmt.Fprintf(r.stdout, "session: n = %d over %d edges, m = %d, d = %d, T = %d, %s, b = %d; %d of %d updates included\n",
		r.n, len(r.edges), o.m, r.params.Dim, o.T, o.algorithm, o.batch, rs.included, o.T*o.m)
	fmt.Fprintf(r.stdout, "round latency (start to commit): p50 %.0f ms, p99 %.0f ms; wall %.1f s for %d rounds\n",
		loadtest.Quantile(rs.lat, 0.5), loadtest.Quantile(rs.lat, 0.99), elapsed.Seconds(), o.T)
	// The window holds T rounds, the T-1 gaps of clusterRoundGap between
	// them and part of the gap after the last; the figure net of idle
	// subtracts the idle CPU rate over T-1 gaps.
	gaps := min(elapsed.Seconds(), (T-1)*clusterRoundGap.Seconds())
	cpu0, cpu1 := w.cpu0, w.cpu1
	fmt.Fprintf(r.stdout, "session process: %.3f CPU s per round, %.3f net of its idle CPU over the %.1f s of gaps (%.0f%% of one core over the %.1f s run), peak RSS %.1f MiB\n",
		(cpu1[0]-cpu0[0])/T, (cpu1[0]-cpu0[0]-idleRate[0]*gaps)/T, gaps, 100*(cpu1[0]-cpu0[0])/elapsed.Seconds(), elapsed.Seconds(), loadtest.MiB(w.hwm[0]))
	var ecpu, eidle float64
	var ehwm int64
	for i := 1; i < len(r.comps); i++ {
		ecpu += cpu1[i] - cpu0[i]
		eidle += idleRate[i]
		ehwm = max(ehwm, w.hwm[i])
	}
	fmt.Fprintf(r.stdout, "edges: %.3f CPU s per round summed over %d edges, %.3f net of idle, largest peak RSS %.1f MiB\n",
		ecpu/T, len(r.edges), (ecpu-eidle*gaps)/T, loadtest.MiB(ehwm))
}

// reportBytes reports the bytes per round between the devices, the edges,
// NATS and the session process, and the session's inbound bytes with the
// edges' pre-aggregation and without.
func (r *clusterRun) reportBytes(rs rounds, w clusterWindow) {
	T, e0, e1, s0, s1 := float64(r.o.T), w.e0, w.e1, w.s0, w.s1
	fmt.Fprintf(r.stdout, "edges <-> devices per round: %.2f MB in (updates), %.2f MB out (assignments)\n",
		float64(rs.bytesIn)/T/1e6, float64(rs.bytesOut)/T/1e6)
	var eUp, eDown, eIn, eUpd float64
	for k := range r.edges {
		eUp += e1[k]["browserfl_cluster_bytes_out_total"] - e0[k]["browserfl_cluster_bytes_out_total"]
		eDown += e1[k]["browserfl_cluster_bytes_in_total"] - e0[k]["browserfl_cluster_bytes_in_total"]
		eIn += e1[k]["browserfl_bytes_in_total"] - e0[k]["browserfl_bytes_in_total"]
		eUpd += e1[k]["browserfl_updates_total"] - e0[k]["browserfl_updates_total"]
	}
	fmt.Fprintf(r.stdout, "edges <-> NATS per round, summed over the edges: %.0f B up, %.0f B down\n", eUp/T, eDown/T)
	with := (s1["browserfl_cluster_bytes_in_total"] - s0["browserfl_cluster_bytes_in_total"]) / T
	out := (s1["browserfl_cluster_bytes_out_total"] - s0["browserfl_cluster_bytes_out_total"]) / T
	fmt.Fprintf(r.stdout, "NATS <-> session process per round: %.0f B in, %.0f B out (its browserfl_cluster_bytes_in/out_total)\n", with, out)
	// Without pre-aggregation the session would receive every included
	// update's frame (and an envelope header for each, not counted here):
	// the round records' update bytes, which the edges count frame by
	// frame.
	without := float64(rs.bytesIn) / T
	perUpdate := 0.0
	if rs.included > 0 {
		perUpdate = float64(rs.bytesIn) / float64(rs.included)
	}
	metricPer := 0.0
	if eUpd > 0 {
		metricPer = eIn / eUpd
	}
	fmt.Fprintf(r.stdout, "session inbound per round with edge pre-aggregation: %.0f B (%d sums of d = %d float64 values are %d B, plus headers and beats)\n",
		with, len(r.edges), r.params.Dim, len(r.edges)*8*r.params.Dim)
	fmt.Fprintf(r.stdout, "session inbound per round without pre-aggregation: %.0f B at least (%.1f included updates x %.0f B update frame; edges' /metrics: %.0f B read per update)\n",
		without, float64(rs.included)/T, perUpdate, metricPer)
	if with > 0 {
		fmt.Fprintf(r.stdout, "ratio session inbound without / with pre-aggregation: %.2f\n", without/with)
	}
}

// stopComponents stops the edges (at once) and then the session process.
func stopComponents(comps []*component) {
	var wg sync.WaitGroup
	for i := len(comps) - 1; i >= 1; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comps[i].c.Stop(10 * time.Second)
		}()
	}
	wg.Wait()
	if len(comps) > 0 {
		comps[0].c.Stop(10 * time.Second)
	}
}

// componentsCPU returns each component's CPU seconds so far.
func componentsCPU(comps []*component) ([]float64, error) {
	out := make([]float64, len(comps))
	for i, c := range comps {
		s, err := loadtest.ProcCPU(c.c.Cmd.Process.Pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		out[i] = s
	}
	return out, nil
}

// scrapeCluster reads the session process's and every edge's /metrics.
func scrapeCluster(ctx context.Context, sess *component, edges []*component) (map[string]float64, []map[string]float64, error) {
	s, err := loadtest.ScrapeMetrics(ctx, "http://"+sess.addr+"/metrics")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", sess.name, err)
	}
	es := make([]map[string]float64, len(edges))
	for k, e := range edges {
		if es[k], err = loadtest.ScrapeMetrics(ctx, "http://"+e.addr+"/metrics"); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.name, err)
		}
	}
	return s, es, nil
}

// killEdge SIGKILLs the first edge (comps[1]) and waits until the other
// edges hold every device it held: its devices reconnect, through the
// next edge in turn (edgeTargets), and say hello again as known devices.
// It reports the time that took and the CPU it cost, per device moved:
// the session process (authenticating the hellos) and the other edges
// (accepting the connections), both net of their idle CPU.
func killEdge(ctx context.Context, comps []*component, idleRate []float64, stdout io.Writer) error {
	victim, rest := comps[1], append([]*component{comps[0]}, comps[2:]...)
	held := func(es []*component) (int64, error) {
		var sum int64
		for _, e := range es {
			met, err := loadtest.ScrapeMetrics(ctx, "http://"+e.addr+"/metrics")
			if err != nil {
				return 0, fmt.Errorf("%s: %w", e.name, err)
			}
			sum += int64(met["browserfl_edge_devices"])
		}
		return sum, nil
	}
	total, err := held(comps[1:])
	if err != nil {
		return err
	}
	moved, err := held([]*component{victim})
	if err != nil {
		return err
	}
	before, err := componentsCPU(rest)
	if err != nil {
		return err
	}
	victim.killed.Store(true)
	t0 := time.Now()
	syscall.Kill(-victim.c.Cmd.Process.Pid, syscall.SIGKILL)
	<-victim.c.Done
	for {
		n, err := held(comps[2:])
		if err != nil {
			return err
		}
		if n >= total {
			break
		}
		if err := loadtest.Sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("after %s was killed, the other edges hold %d of its %d devices: %w", victim.name, n-(total-moved), moved, err)
		}
	}
	took := time.Since(t0)
	after, err := componentsCPU(rest)
	if err != nil {
		return err
	}
	// Net of idle: the idle rates were measured before, with the moved
	// devices on the killed edge.
	var edgesCPU, edgesIdle float64
	for i := 1; i < len(rest); i++ {
		edgesCPU += after[i] - before[i]
		edgesIdle += idleRate[i+1] * took.Seconds()
	}
	per := func(cpu float64) float64 { return cpu * 1e6 / float64(max(moved, 1)) }
	scpu := after[0] - before[0]
	fmt.Fprintf(stdout, "%s SIGKILLed holding %d devices: all on the other edges after %.1f s; session process %.0f us CPU per returning device (its hello, authenticated; %.0f net of idle), the other edges %.0f us per reconnection (%.0f net of idle)\n",
		victim.name, moved, took.Seconds(), per(scpu), per(scpu-idleRate[0]*took.Seconds()), per(edgesCPU), per(edgesCPU-edgesIdle))
	return nil
}
