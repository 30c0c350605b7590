package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"browserfl/coordinator"
	"browserfl/device"
	"browserfl/shared/wire"
)

// clusterRoundGap is the session's pause between rounds in the cluster
// mode (see runCluster).
const clusterRoundGap = 500 * time.Millisecond

// component is one process of the cluster shape the load test runs.
type component struct {
	name   string
	addr   string // HTTP listen address
	c      *child
	killed atomic.Bool // its exit is the load test's doing
	rss0   int64       // RSS before any device connected
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
	natsAddr, err := freeAddr()
	if err != nil {
		return err
	}
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	fail := func(err error) error {
		if c := context.Cause(ctx); c != nil && c != ctx.Err() {
			return fmt.Errorf("%w (%v)", err, c)
		}
		return err
	}
	var comps []*component // comps[0] is the session process
	defer func() { stopComponents(comps) }()
	start := func(name, addr string, args []string) (*component, error) {
		c, err := startChild(o.coordinator, args, io.Discard, stderr)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		comp := &component{name: name, addr: addr, c: c}
		comps = append(comps, comp)
		// A component that exits early ends the run.
		go func() {
			select {
			case <-c.done:
				if !comp.killed.Load() {
					cancelRun(fmt.Errorf("%s exited: %v", name, c.err))
				}
			case <-ctx.Done():
			}
		}()
		return comp, nil
	}
	// The session has one round more than the load test measures, and a
	// gap between rounds: the measurement ends in the gap after round T,
	// before the session's end sends every device its last messages
	// (which are per session, not per round).
	// With -kill-edge the session must not end: it has many more rounds
	// and is paused after round T.
	sessionT := o.T + 1
	if o.killEdge {
		sessionT = o.T + 1000
	}
	// The session process generates each edge's NATS key in its data
	// directory (DATA/nats/edge-ID.nk); the edges read them there.
	ids := make([]string, o.edges)
	for k := range ids {
		ids[k] = "e" + strconv.Itoa(k)
	}
	keysDir := filepath.Join(argValue(cargs, "-data"), "nats")
	sargs := append(cargs[:len(cargs):len(cargs)], "-role", "session", "-nats-listen", natsAddr, "-edges", strings.Join(ids, ","),
		"-T", strconv.Itoa(sessionT), "-round-gap", clusterRoundGap.String())
	sess, err := start("session process", addr, sargs)
	if err != nil {
		return err
	}
	base := "http://" + addr
	if err := waitHealthy(ctx, base); err != nil {
		return fail(err)
	}
	if err := teacher(ctx, base, "pause"); err != nil {
		return fail(err)
	}
	var params wire.SessionParams
	if err := getJSON(ctx, base+"/api/session?code=LOADTEST", &params); err != nil {
		return fail(err)
	}
	lim := strconv.Itoa(n + 10)
	var edges []*component
	for k := range o.edges {
		eaddr, err := freeAddr()
		if err != nil {
			return err
		}
		args := []string{"-role", "edge", "-nats", "nats://" + natsAddr, "-edge-id", ids[k],
			"-nats-nkey", coordinator.EdgeSeedFile(keysDir, ids[k]),
			"-listen", eaddr, "-session-url", base, "-max-devices", lim, "-log-level", "warn",
			// All devices come from one loopback address: lift the per-address gate.
			"-register-rate", "-1", "-register-global-rate", "-1", "-prehello-per-address", lim}
		e, err := start("edge e"+strconv.Itoa(k), eaddr, append(args, o.edgeArgs...))
		if err != nil {
			return err
		}
		edges = append(edges, e)
	}
	// An edge is healthy once it has heard the session's beat.
	for _, e := range edges {
		if err := waitHealthy(ctx, "http://"+e.addr); err != nil {
			return fail(fmt.Errorf("%s: %w", e.name, err))
		}
	}
	for _, c := range comps {
		c.rss0, _ = procRSS(c.c.cmd.Process.Pid)
	}

	cpuC0, err := componentsCPU(comps)
	if err != nil {
		return fail(err)
	}
	// One process holds at most its open-files limit of connections:
	// beyond, the devices run in device worker processes.
	procs := o.deviceProcs
	if procs <= 0 {
		per := max(int(noFileLimit())-1024, 1000)
		procs = (n + per - 1) / per
	}
	edgeAddrs := make([]string, len(edges))
	for k, e := range edges {
		edgeAddrs[k] = e.addr
	}
	var fl devices
	connectStart := time.Now()
	if procs <= 1 {
		f, err := startFleet(ctx, o, pol, params, 0, n, edgeTargets(edgeAddrs))
		fl = f
		defer f.stop()
		if err != nil {
			return fail(err)
		}
	} else {
		ws, err := startWorkers(o, o.args, n, procs, edgeAddrs, base, stderr, func(err error) { cancelRun(err) })
		if err != nil {
			return fail(err)
		}
		fl = ws
		defer ws.stop()
		fmt.Fprintf(stdout, "devices run in %d device worker processes\n", procs)
	}
	if err := fl.waitConnected(ctx, n); err != nil {
		return fail(err)
	}
	connectTime := time.Since(connectStart)
	cpuC1, err := componentsCPU(comps)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "%d devices connected over %d edges in %v\n", n, len(edges), connectTime.Round(time.Millisecond))

	// Idle memory: each edge's growth over the devices it holds, and the
	// session's over all of them (its device table).
	if err := sleep(ctx, 2*time.Second); err != nil {
		return fail(err)
	}
	var grew, held int64
	for _, e := range edges {
		rss, err := procRSS(e.c.cmd.Process.Pid)
		if err != nil {
			return fail(err)
		}
		met, err := scrapeMetrics(ctx, "http://"+e.addr+"/metrics")
		if err != nil {
			return fail(fmt.Errorf("%s: %w", e.name, err))
		}
		devs := int64(met["browserfl_edge_devices"])
		fmt.Fprintf(stdout, "%s: RSS %.1f MiB before devices, %.1f MiB with %d devices (%.1f KiB per device)\n",
			e.name, mib(e.rss0), mib(rss), devs, perDeviceKiB(rss-e.rss0, devs))
		grew += rss - e.rss0
		held += devs
	}
	fmt.Fprintf(stdout, "edges: idle memory %.1f KiB per connected device (RSS growth summed over the edges / devices they hold)\n",
		perDeviceKiB(grew, held))
	srss, err := procRSS(sess.c.cmd.Process.Pid)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "session process: RSS %.1f MiB before devices, %.1f MiB with %d devices (%.1f KiB per device: its device table)\n",
		mib(sess.rss0), mib(srss), n, perDeviceKiB(srss-sess.rss0, int64(n)))
	fmt.Fprintf(stdout, "load tool RSS (the %d client connections): %.1f MiB\n", n, mib(fl.rss()))

	// Idle CPU (heartbeats, beats, timers): paid during the rounds too,
	// and during the gaps between them.
	cpu0, err := componentsCPU(comps)
	if err != nil {
		return fail(err)
	}
	if err := sleep(ctx, o.idleWindow); err != nil {
		return fail(err)
	}
	cpu1, err := componentsCPU(comps)
	if err != nil {
		return fail(err)
	}
	idleRate := make([]float64, len(comps)) // CPU seconds per second
	for i, c := range comps {
		idleRate[i] = (cpu1[i] - cpu0[i]) / o.idleWindow.Seconds()
		fmt.Fprintf(stdout, "%s CPU with idle devices: %.1f ms per second (over %v)\n", c.name, idleRate[i]*1000, o.idleWindow)
	}
	// The connection phase: every device new, so each hello registers an
	// id (a store write in the session process). Net of idle: devices
	// arrive at a steady rate, so the phase held half of them on average
	// and paid half the idle rate measured with all of them.
	var ecpuC, eidleC float64
	for i := 1; i < len(comps); i++ {
		ecpuC += cpuC1[i] - cpuC0[i]
		eidleC += idleRate[i] * connectTime.Seconds() / 2
	}
	scpuC := cpuC1[0] - cpuC0[0]
	sidleC := idleRate[0] * connectTime.Seconds() / 2
	fmt.Fprintf(stdout, "connection phase (new devices, %.1f s): session process %.0f us CPU per hello (%.0f net of idle), edges %.0f us per connection (%.0f net of idle)\n",
		connectTime.Seconds(), scpuC*1e6/float64(n), (scpuC-sidleC)*1e6/float64(n), ecpuC*1e6/float64(n), (ecpuC-eidleC)*1e6/float64(n))
	if o.idle > 0 {
		return nil
	}

	var tap *natsTap
	var tap0 map[tapKey]tapCount
	if o.natsTap {
		if tap, err = startTap("nats://"+natsAddr, "browserfl", keysDir, ids); err != nil {
			return fail(err)
		}
		defer tap.close()
		tap0 = tap.snapshot()
	}
	s0, e0, err := scrapeCluster(ctx, sess, edges)
	if err != nil {
		return fail(err)
	}
	if cpu0, err = componentsCPU(comps); err != nil {
		return fail(err)
	}
	runStart := time.Now()
	if err := teacher(ctx, base, "resume"); err != nil {
		return fail(err)
	}
	if err := waitRounds(ctx, base, o.T, clusterRoundGap/10); err != nil {
		return fail(err)
	}
	elapsed := time.Since(runStart)
	if cpu1, err = componentsCPU(comps); err != nil {
		return fail(err)
	}
	if o.killEdge {
		if err := teacher(ctx, base, "pause"); err != nil {
			return fail(err)
		}
	}
	s1, e1, err := scrapeCluster(ctx, sess, edges)
	if err != nil {
		return fail(err)
	}
	var tap1 map[tapKey]tapCount
	if tap != nil {
		tap1 = tap.snapshot()
	}
	hwm := make([]int64, len(comps))
	for i, c := range comps {
		hwm[i], _ = procHWM(c.c.cmd.Process.Pid)
	}
	if !o.killEdge {
		fl.stop() // (with -kill-edge they stay for that)
	}
	rs, err := readRounds(ctx, base, o.T)
	if err != nil {
		return fail(err)
	}
	T := float64(o.T)
	fmt.Fprintf(stdout, "session: n = %d over %d edges, m = %d, d = %d, T = %d, %s, b = %d; %d of %d updates included\n",
		n, len(edges), o.m, params.Dim, o.T, o.algorithm, o.batch, rs.included, o.T*o.m)
	fmt.Fprintf(stdout, "round latency (start to commit): p50 %.0f ms, p99 %.0f ms; wall %.1f s for %d rounds\n",
		quantile(rs.lat, 0.5), quantile(rs.lat, 0.99), elapsed.Seconds(), o.T)
	// The window holds T rounds, the T-1 gaps of clusterRoundGap between
	// them and part of the gap after the last; the figure net of idle
	// subtracts the idle CPU rate over T-1 gaps.
	gaps := min(elapsed.Seconds(), (T-1)*clusterRoundGap.Seconds())
	fmt.Fprintf(stdout, "session process: %.3f CPU s per round, %.3f net of its idle CPU over the %.1f s of gaps (%.0f%% of one core over the %.1f s run), peak RSS %.1f MiB\n",
		(cpu1[0]-cpu0[0])/T, (cpu1[0]-cpu0[0]-idleRate[0]*gaps)/T, gaps, 100*(cpu1[0]-cpu0[0])/elapsed.Seconds(), elapsed.Seconds(), mib(hwm[0]))
	var ecpu, eidle float64
	var ehwm int64
	for i := 1; i < len(comps); i++ {
		ecpu += cpu1[i] - cpu0[i]
		eidle += idleRate[i]
		ehwm = max(ehwm, hwm[i])
	}
	fmt.Fprintf(stdout, "edges: %.3f CPU s per round summed over %d edges, %.3f net of idle, largest peak RSS %.1f MiB\n",
		ecpu/T, len(edges), (ecpu-eidle*gaps)/T, mib(ehwm))
	fmt.Fprintf(stdout, "edges <-> devices per round: %.2f MB in (updates), %.2f MB out (assignments)\n",
		float64(rs.bytesIn)/T/1e6, float64(rs.bytesOut)/T/1e6)
	var eUp, eDown, eIn, eUpd float64
	for k := range edges {
		eUp += e1[k]["browserfl_cluster_bytes_out_total"] - e0[k]["browserfl_cluster_bytes_out_total"]
		eDown += e1[k]["browserfl_cluster_bytes_in_total"] - e0[k]["browserfl_cluster_bytes_in_total"]
		eIn += e1[k]["browserfl_bytes_in_total"] - e0[k]["browserfl_bytes_in_total"]
		eUpd += e1[k]["browserfl_updates_total"] - e0[k]["browserfl_updates_total"]
	}
	fmt.Fprintf(stdout, "edges <-> NATS per round, summed over the edges: %.0f B up, %.0f B down\n", eUp/T, eDown/T)
	with := (s1["browserfl_cluster_bytes_in_total"] - s0["browserfl_cluster_bytes_in_total"]) / T
	out := (s1["browserfl_cluster_bytes_out_total"] - s0["browserfl_cluster_bytes_out_total"]) / T
	fmt.Fprintf(stdout, "NATS <-> session process per round: %.0f B in, %.0f B out (its browserfl_cluster_bytes_in/out_total)\n", with, out)
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
	fmt.Fprintf(stdout, "session inbound per round with edge pre-aggregation: %.0f B (%d sums of d = %d float64 values are %d B, plus headers and beats)\n",
		with, len(edges), params.Dim, len(edges)*8*params.Dim)
	fmt.Fprintf(stdout, "session inbound per round without pre-aggregation: %.0f B at least (%.1f included updates x %.0f B update frame; edges' /metrics: %.0f B read per update)\n",
		without, float64(rs.included)/T, perUpdate, metricPer)
	if with > 0 {
		fmt.Fprintf(stdout, "ratio session inbound without / with pre-aggregation: %.2f\n", without/with)
	}
	if tap != nil {
		printTap(stdout, tap0, tap1, o.T)
	}
	if o.drop > 0 {
		fmt.Fprintf(stdout, "%d of the %d devices of -drop disconnected for good in the middle of a round\n", fl.droppedCount(), o.drop)
	}
	if rs.included == 0 {
		return errors.New("no update was included")
	}
	if o.killEdge {
		return fail(killEdge(ctx, comps, idleRate, stdout))
	}
	return nil
}

func perDeviceKiB(bytes, devices int64) float64 {
	if devices <= 0 {
		return 0
	}
	return float64(bytes) / 1024 / float64(devices)
}

// stopComponents stops the edges (at once) and then the session process.
func stopComponents(comps []*component) {
	var wg sync.WaitGroup
	for i := len(comps) - 1; i >= 1; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comps[i].c.stop(10 * time.Second)
		}()
	}
	wg.Wait()
	if len(comps) > 0 {
		comps[0].c.stop(10 * time.Second)
	}
}

// componentsCPU returns each component's CPU seconds so far.
func componentsCPU(comps []*component) ([]float64, error) {
	out := make([]float64, len(comps))
	for i, c := range comps {
		s, err := procCPU(c.c.cmd.Process.Pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		out[i] = s
	}
	return out, nil
}

// scrapeCluster reads the session process's and every edge's /metrics.
func scrapeCluster(ctx context.Context, sess *component, edges []*component) (map[string]float64, []map[string]float64, error) {
	s, err := scrapeMetrics(ctx, "http://"+sess.addr+"/metrics")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", sess.name, err)
	}
	es := make([]map[string]float64, len(edges))
	for k, e := range edges {
		if es[k], err = scrapeMetrics(ctx, "http://"+e.addr+"/metrics"); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.name, err)
		}
	}
	return s, es, nil
}

// scrapeMetrics reads the unlabelled samples of a Prometheus text page.
func scrapeMetrics(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") || strings.ContainsRune(f[0], '{') {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[f[0]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return out, nil
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
			met, err := scrapeMetrics(ctx, "http://"+e.addr+"/metrics")
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
	syscall.Kill(-victim.c.cmd.Process.Pid, syscall.SIGKILL)
	<-victim.c.done
	for {
		n, err := held(comps[2:])
		if err != nil {
			return err
		}
		if n >= total {
			break
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
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

// argValue is the value of flag name in args ("" if absent).
func argValue(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}
