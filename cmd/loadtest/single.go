package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"browserfl/device"
	"browserfl/internal/loadtest"
	"browserfl/shared/wire"
)

// runSingle runs the load test against one coordinator process at addr,
// started with cargs: the idle measurement (-idle) or the session's
// rounds interleaved with the loopback baseline, and their report.
func runSingle(ctx context.Context, o options, pol device.Policy, n int, addr string, cargs []string, stdout, stderr io.Writer) error {
	coord, ctx, stop, err := loadtest.StartCoordinator(ctx, o.coordinator, cargs, stderr)
	if err != nil {
		return err
	}
	defer stop()
	fail := func(err error) error {
		if c := context.Cause(ctx); c != nil && c != ctx.Err() {
			return fmt.Errorf("%w (%v)", err, c)
		}
		return err
	}
	pid := coord.Cmd.Process.Pid
	base := "http://" + addr
	if err := loadtest.WaitHealthy(ctx, base); err != nil {
		return fail(err)
	}
	if err := teacher(ctx, base, "pause"); err != nil {
		return fail(err)
	}
	var sess wire.SessionParams
	if err := loadtest.GetJSON(ctx, base+"/api/session?code=LOADTEST", &sess); err != nil {
		return fail(err)
	}
	rssIdle, _ := loadtest.RSS(pid)

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
		return measureIdle(ctx, o, pid, n, rssIdle, fl.stop, fail, stdout)
	}
	ms, err := measureRounds(ctx, o, pid, base, fail, stderr)
	if err != nil {
		return err
	}
	hwm, _ := loadtest.HWM(pid)
	fl.stop()
	rs, err := readRounds(ctx, base, o.T)
	if err != nil {
		return fail(err)
	}
	return report(ctx, o, n, sess, rs, ms, hwm, fl, base, fail, stdout, stderr)
}

// measureIdle reports the coordinator's RSS and CPU with its n devices
// connected and idle (no round starts); rssIdle is its RSS before them.
// Then it closes them (stopFleet) and measures a plain server holding as
// many.
func measureIdle(ctx context.Context, o options, pid, n int, rssIdle int64, stopFleet func(), fail func(error) error, stdout io.Writer) error {
	if err := loadtest.Sleep(ctx, 2*time.Second); err != nil {
		return fail(err)
	}
	rss, err := loadtest.RSS(pid)
	if err != nil {
		return err
	}
	// The coordinator's CPU while its devices only stay connected
	// (heartbeats, timers): it is paid during every round too.
	cpu0, err := loadtest.ProcCPU(pid)
	if err != nil {
		return err
	}
	if err := loadtest.Sleep(ctx, o.idleWindow); err != nil {
		return fail(err)
	}
	cpu1, err := loadtest.ProcCPU(pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "coordinator CPU with %d idle devices: %.1f ms per second (over %v)\n",
		n, (cpu1-cpu0)*1000/o.idleWindow.Seconds(), o.idleWindow)
	fmt.Fprintf(stdout, "coordinator RSS: %.1f MiB before devices, %.1f MiB with %d idle devices (%.1f KiB per device)\n",
		loadtest.MiB(rssIdle), loadtest.MiB(rss), n, float64(rss-rssIdle)/1024/float64(n))
	self, _ := loadtest.RSS(os.Getpid())
	fmt.Fprintf(stdout, "load tool RSS (the %d client connections): %.1f MiB\n", n, loadtest.MiB(self))
	// The same connections held by a plain websocket server, once the
	// devices' are closed (both sets at once would need twice the
	// descriptors).
	stopFleet()
	b0, b1, err := loadtest.IdleBaseline(ctx, n, io.Discard)
	if err != nil {
		return fmt.Errorf("idle baseline: %w", err)
	}
	coordPer, plainPer := float64(rss-rssIdle)/1024/float64(n), float64(b1-b0)/1024/float64(n)
	fmt.Fprintf(stdout, "plain websocket server RSS: %.1f MiB before, %.1f MiB with %d idle connections (%.1f KiB per connection)\n",
		loadtest.MiB(b0), loadtest.MiB(b1), n, plainPer)
	fmt.Fprintf(stdout, "idle memory per device, coordinator / plain server: %.2f\n", coordPer/plainPer)
	return nil
}

// measured is what measureRounds read over the blocks of rounds.
type measured struct {
	coordCPU, coordRounds []float64                 // per block of rounds
	bls                   []loadtest.BaselineResult // one per block of the baseline
	coordSys              loadtest.Syscalls
	// Heartbeat pings the coordinator sent during the blocks of rounds
	// (browserfl_pings_total; a diagnostic: pingsOK turns false if a
	// scrape fails).
	pings   float64
	pingsOK bool
	elapsed time.Duration
}

// measureRounds runs the rounds in blocks, each followed by a block of
// the baseline (the same frames over plain websockets), so that load
// that comes and goes on a shared machine hits both alike. The
// coordinator is paused while the baseline runs; its CPU and committed
// rounds are read at the start and end of each block of rounds, so a
// round still open when a block ends counts in neither.
func measureRounds(ctx context.Context, o options, pid int, base string, fail func(error) error, stderr io.Writer) (measured, error) {
	blocks := max(1, min(o.blocks, o.T))
	ms := measured{pingsOK: true}
	pingCount := func() float64 {
		m, err := loadtest.ScrapeMetrics(ctx, base+"/metrics")
		if err != nil {
			ms.pingsOK = false
			fmt.Fprintf(stderr, "loadtest: reading the coordinator's pings: %v\n", err)
			return 0
		}
		return m["browserfl_pings_total"]
	}
	committed := 0
	for b := range blocks {
		target := o.T * (b + 1) / blocks
		if target <= committed {
			continue
		}
		cpu0, err := loadtest.ProcCPU(pid)
		if err != nil {
			return ms, err
		}
		sys0, err := loadtest.ProcSyscalls(pid)
		if err != nil {
			return ms, err
		}
		pings0 := pingCount()
		from := committed
		runStart := time.Now()
		if committed, err = roundsBlock(ctx, base, target, fail); err != nil {
			return ms, err
		}
		cpu1, err := loadtest.ProcCPU(pid)
		if err != nil {
			return ms, err
		}
		sys1, err := loadtest.ProcSyscalls(pid)
		if err != nil {
			return ms, err
		}
		ms.coordSys.Reads += sys1.Reads - sys0.Reads
		ms.coordSys.Writes += sys1.Writes - sys0.Writes
		ms.pings += pingCount() - pings0
		ms.elapsed += time.Since(runStart)
		ms.coordCPU = append(ms.coordCPU, cpu1-cpu0)
		ms.coordRounds = append(ms.coordRounds, float64(committed-from))
		if committed >= o.T {
			break
		}
		bl, c, err := baselineBetween(ctx, base, o, committed, blocks, fail, stderr)
		if errors.Is(err, errEnded) {
			break // the last rounds ran before the pause could land
		}
		if err != nil {
			return ms, err
		}
		committed = c
		ms.bls = append(ms.bls, bl)
	}
	return ms, nil
}

// roundsBlock resumes the session and waits until round target has
// committed; it returns the last committed round.
func roundsBlock(ctx context.Context, base string, target int, fail func(error) error) (int, error) {
	if err := teacher(ctx, base, "resume"); err != nil {
		return 0, fail(err)
	}
	if err := loadtest.WaitRounds(ctx, base, target, 250*time.Millisecond); err != nil {
		return 0, fail(err)
	}
	committed, err := loadtest.LastCommitted(ctx, base, target-1)
	if err != nil {
		return 0, fail(err)
	}
	return committed, nil
}

// errEnded is baselineBetween's answer when the session ended before
// its pause: no block of the baseline is left to run.
var errEnded = errors.New("loadtest: the session ended before the pause")

// baselineBetween pauses the session, waits for its open round and runs
// a block of the baseline; it returns the block's result and the last
// committed round.
func baselineBetween(ctx context.Context, base string, o options, committed, blocks int, fail func(error) error, stderr io.Writer) (loadtest.BaselineResult, int, error) {
	if err := teacher(ctx, base, "pause"); err != nil {
		// Rounds of a few milliseconds can finish the session between
		// the read of the last committed round and this pause.
		if last, lerr := loadtest.LastCommitted(ctx, base, committed); lerr == nil && last >= o.T {
			return loadtest.BaselineResult{}, last, errEnded
		}
		return loadtest.BaselineResult{}, 0, fail(err)
	}
	committed, err := loadtest.Settle(ctx, base, committed)
	if err != nil {
		return loadtest.BaselineResult{}, 0, fail(err)
	}
	bl, err := baselineBlock(ctx, base, o, committed, blocks, stderr)
	if err != nil {
		return loadtest.BaselineResult{}, 0, fail(err)
	}
	return bl, committed, nil
}

// report prints the session's rounds (rs), the coordinator's measured
// cost (ms) and its ratio to the loopback baseline.
func report(ctx context.Context, o options, n int, sess wire.SessionParams, rs rounds, ms measured, hwm int64, fl *fleet, base string,
	fail func(error) error, stdout, stderr io.Writer) error {
	lat, bin, bout, included := rs.lat, rs.bytesIn, rs.bytesOut, rs.included
	p50, p99 := loadtest.Quantile(lat, 0.5), loadtest.Quantile(lat, 0.99)

	fmt.Fprintf(stdout, "session: n = %d, m = %d, d = %d, T = %d, %s, b = %d; %d of %d updates included\n",
		n, o.m, sess.Dim, o.T, o.algorithm, o.batch, included, o.T*o.m)
	fmt.Fprintf(stdout, "round latency (start to commit): p50 %.0f ms, p99 %.0f ms; wall %.1f s for the measured rounds\n",
		p50, p99, ms.elapsed.Seconds())
	fmt.Fprintf(stdout, "bytes per round: %.2f MB in (updates), %.2f MB out (assignments)\n",
		float64(bin)/float64(o.T)/1e6, float64(bout)/float64(o.T)/1e6)
	fmt.Fprintf(stdout, "model points per device-round: %.2f (assignment bytes / (devices asked x 4 d B))\n", rs.pointsPerAsk(sess.Dim))
	var cpuSum, roundSum float64
	for i := range ms.coordCPU {
		cpuSum += ms.coordCPU[i]
		roundSum += ms.coordRounds[i]
	}
	cpuPerRound := cpuSum / roundSum
	fmt.Fprintf(stdout, "coordinator: %.3f CPU s per round over %.0f measured rounds (%.0f%% of one core while they ran), peak RSS %.1f MiB\n",
		cpuPerRound, roundSum, 100*cpuSum/ms.elapsed.Seconds(), loadtest.MiB(hwm))
	fmt.Fprintf(stdout, "device compute (assignment received to update sent, summed): %.0f ms per round over the cohort\n",
		float64(fl.prepNanos.Load())/1e6/float64(o.T))
	if o.drop > 0 {
		fmt.Fprintf(stdout, "%d of the %d devices of -drop disconnected for good in the middle of a round\n", fl.dropped.Load(), o.drop)
	}
	if included == 0 {
		return errors.New("no update was included")
	}
	if len(ms.bls) == 0 {
		// One block (or every round in the first): the baseline runs once,
		// after the rounds.
		bl, err := baselineBlock(ctx, base, o, o.T, 1, stderr)
		if err != nil {
			return fail(err)
		}
		ms.bls = append(ms.bls, bl)
	}
	reportBaseline(o, rs, ms, cpuPerRound, roundSum, p50, stdout)
	return nil
}

// reportBaseline prints the loopback baseline's mean over its blocks and
// the coordinator's ratios to it.
func reportBaseline(o options, rs rounds, ms measured, cpuPerRound, roundSum, p50 float64, stdout io.Writer) {
	blocks := max(1, min(o.blocks, o.T))
	inPer, outPer := frameSizes(rs, o)
	var mean loadtest.BaselineResult
	for _, b := range ms.bls {
		k := float64(len(ms.bls))
		mean.WallMs += b.WallMs / k
		mean.CPUMs += b.CPUMs / k
		mean.Reads += b.Reads / k
		mean.Writes += b.Writes / k
	}
	blMs, blWallMs := mean.CPUMs, mean.WallMs
	paced := ""
	if o.paced {
		paced = "; clients answer after a random delay up to the coordinator's median round (-baseline-paced)"
	}
	fmt.Fprintf(stdout, "loopback baseline (%d x (%d B out + %d B in) websocket frames, no logic, server in its own process; %d blocks of %d rounds between the coordinator's%s): wall median %.1f ms, server CPU %.1f ms per round\n",
		o.m, outPer, inPer, len(ms.bls), max(1, o.baselineRep/blocks), paced, blWallMs, blMs)
	ratios := make([]string, 0, len(ms.coordCPU))
	for i := range min(len(ms.coordCPU), len(ms.bls)) {
		ratios = append(ratios, fmt.Sprintf("%.2f", ms.coordCPU[i]*1000/ms.coordRounds[i]/ms.bls[i].CPUMs))
	}
	fmt.Fprintf(stdout, "ratio coordinator CPU per round / baseline server CPU per round: %.2f (per block: %s)\n",
		cpuPerRound*1000/blMs, strings.Join(ratios, ", "))
	pingsPer := "n/a"
	if ms.pingsOK {
		pingsPer = fmt.Sprintf("%.0f", ms.pings/roundSum)
	}
	fmt.Fprintf(stdout, "system calls per round (/proc/PID/io): coordinator %.0f reads, %.0f writes (heartbeat pings per round: %s); baseline server %.0f reads, %.0f writes\n",
		float64(ms.coordSys.Reads)/roundSum, float64(ms.coordSys.Writes)/roundSum, pingsPer, mean.Reads, mean.Writes)
	fmt.Fprintf(stdout, "ratio coordinator round p50 / baseline wall: %.2f (the round includes the devices' compute)\n", p50/blWallMs)
}
