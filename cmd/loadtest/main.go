// Command loadtest runs N headless devices (the device runtime of
// package device, real websockets) in one process against a coordinator
// it starts as a child process on loopback, and reports what item 8 of
// the coordinator issue asks for. Modes:
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
//	loadtest -coordinator bin/coordinator -demo 10
//	    the session make run starts, with N devices that load the page
//	    and a demo shard and train until it ends: the coordinator's RSS
//	    before any device and its peak RSS (demo.go).
//
//	loadtest -coordinator bin/coordinator -lesson -n 10 -b 32 -T 40 -blocks 4
//	    a lesson run by nc and by shared noise in alternating blocks of
//	    rounds (lesson.go): "lesson: shared/nc wall = R".
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
//
// The files split the command by job: flags.go reads and checks the
// command line, single.go runs and reports the one-coordinator modes,
// cluster.go the cluster shape, sybil.go the Sybil windows, demo.go
// the demo session's memory, lesson.go nc against shared noise in one
// lesson, baseline.go
// the loopback baseline, fleet.go and workers.go the devices, proc.go
// the child processes and their /proc figures, util.go small HTTP and
// timing helpers; main.go wires them.
package main

import (
	"browserfl/internal/loadtest"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
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
	demo        int  // devices of the demo mode (demo.go)
	lesson      bool // the lesson mode (lesson.go)
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
		stderr = loadtest.NewLockedWriter(stderr)
	}
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	o, pol := c.o, c.pol
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if *c.baselineServer != "" {
		return loadtest.BaselineServer(ctx, *c.baselineServer, o.m, *c.baselineOut, *c.baselineIn, o.baselineRep, stdout)
	}
	if *c.workerRange != "" {
		lo, hi, err := parseRange(*c.workerRange)
		if err != nil {
			return err
		}
		return runWorker(ctx, o, pol, lo, hi, strings.Split(*c.workerEdges, ","), *c.workerSession, stdout)
	}
	o.args = args
	if o.demo > 0 {
		return runDemo(ctx, o, pol, o.demo, *c.extra, stdout, stderr)
	}
	if o.lesson {
		return runLesson(ctx, o, pol, *c.extra, stdout, stderr)
	}
	if c.so.k > 0 && c.so.atStart {
		return runSybilsAtStart(ctx, o, c.so, pol, stdout, stderr)
	}
	if c.so.k > 0 {
		return runSybils(ctx, o, c.so, pol, stdout, stderr)
	}
	n := o.devices()
	if err := o.check(n); err != nil {
		return err
	}
	o.edgeArgs = strings.Fields(*c.edgeArgs)
	// Every device is a socket here and one in the process that holds it
	// (the cluster mode runs devices in worker processes beyond the limit).
	if err := loadtest.RaiseNoFile(uint64(n) + 1024); err != nil && o.edges == 0 {
		fmt.Fprintf(stderr, "loadtest: %v (ulimit -n may be too low for %d devices)\n", err, n)
	}
	dir, err := os.MkdirTemp("", "bfl-loadtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The coordinator reads its teacher secret from host.json in its data
	// directory (sessions.Host) and keeps one written before it starts.
	if err := os.WriteFile(filepath.Join(dir, "host.json"), []byte(`{"teacher_secret":"`+teacherSecret+`"}`), 0o600); err != nil {
		return err
	}
	addr, err := loadtest.FreeAddr()
	if err != nil {
		return err
	}
	cargs := coordinatorArgs(o, n, addr, dir, *c.extra)
	if o.edges > 0 {
		return runCluster(ctx, o, pol, n, addr, cargs, stdout, stderr)
	}
	return runSingle(ctx, o, pol, n, addr, cargs, stdout, stderr)
}
