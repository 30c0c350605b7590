package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"browserfl/device"
)

// cmdline is the parsed command line.
type cmdline struct {
	o   options
	so  sybilOptions
	pol device.Policy
	// The device worker's flags (internal: workers.go).
	workerRange, workerEdges, workerSession *string
	// Extra edge and coordinator flags, space separated.
	edgeArgs, extra *string
	// The baseline server's flags (internal: baseline.go).
	baselineServer          *string
	baselineOut, baselineIn *int
}

// parseFlags parses args and the owner's policy flags.
func parseFlags(args []string, stderr io.Writer) (cmdline, error) {
	var c cmdline
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.o.coordinator, "coordinator", "bin/coordinator", "coordinator binary to start")
	fs.IntVar(&c.o.n, "n", 1000, "devices in the session")
	fs.IntVar(&c.o.m, "m", 100, "cohort size")
	fs.IntVar(&c.o.T, "T", 50, "rounds")
	fs.IntVar(&c.o.idle, "idle", 0, "if > 0: connect this many idle devices and report memory (and CPU over -idle-window) instead")
	fs.IntVar(&c.o.demo, "demo", 0, "if > 0: the session make run starts (-lobby, the default task's data) with this many devices, each loading the page and a demo shard as a browser does, until the session ends; reports the coordinator's RSS before any device and its peak RSS (demo.go)")
	fs.BoolVar(&c.o.lesson, "lesson", false, "the same lesson of -n devices (all of them every round, b = -b) run by nc and by shared noise, in -blocks alternating blocks of -T/-blocks rounds each, with the coordinator's round gap and a lesson's deadline: prints each mode's wall time a round and \"lesson: shared/nc wall = R\" (lesson.go)")
	fs.DurationVar(&c.o.idleWindow, "idle-window", 10*time.Second, "with -idle: how long to measure the coordinator's idle CPU")
	fs.IntVar(&c.o.batch, "b", 1, "device minibatch")
	fs.StringVar(&c.o.algorithm, "algorithm", "nc", "algorithm")
	fs.StringVar(&c.o.compressor, "compressor", "", "uplink compressor spec")
	fs.DurationVar(&c.o.stagger, "stagger", 2*time.Millisecond, "delay between device connections")
	fs.IntVar(&c.o.baselineRep, "baseline-reps", 50, "repetitions of the loopback baseline")
	fs.BoolVar(&c.o.paced, "baseline-paced", false, "the baseline's clients answer after a random delay, uniform up to the coordinator's median round latency, as the devices do (they compute between), instead of at once: a diagnostic of how much of the CPU ratio is the rounds' pace")
	fs.IntVar(&c.o.blocks, "blocks", 4, "interleave the measurement: the rounds run in this many blocks, each followed by a block of the baseline (load that comes and goes then hits both alike)")
	fs.IntVar(&c.o.drop, "drop", 0, "devices that disconnect for good when they are first assigned a round (checks that rounds go on without them)")
	fs.DurationVar(&c.o.timeout, "timeout", 30*time.Minute, "give up (and stop the coordinator) after this long")
	fs.IntVar(&c.o.edges, "edges", 0, "if > 0: the cluster shape: the coordinator runs as -role session (embedded NATS: a coordinator built whole, go build -o bin/coordinator ./cmd/coordinator, not make run's) plus this many -role edge processes, the devices spread over the edges round robin")
	fs.BoolVar(&c.o.natsTap, "nats-tap", false, "with -edges: also subscribe to every cluster subject and count the envelopes by direction and kind (the NATS server, in the session process, then sends a copy of everything)")
	fs.BoolVar(&c.o.killEdge, "kill-edge", false, "with -edges: after the rounds, SIGKILL the first edge and measure its devices' move to the others (time, session and edge CPU per device)")
	fs.IntVar(&c.o.deviceProcs, "device-procs", 0, "with -edges: processes that run the devices (0 = as many as the open-files limit needs: one process holds at most that many connections)")
	c.workerRange = fs.String("worker-range", "", "internal: run devices lo:hi as a device worker")
	c.workerEdges = fs.String("worker-edges", "", "internal: the device worker's edge addresses, comma separated")
	c.workerSession = fs.String("worker-session", "", "internal: the device worker's session process URL")
	fs.IntVar(&c.so.k, "sybils", 0, "if > 0: measure honest rounds per minute without and with this many idle ids from one address (they answer pings, never answer a round, say hello again every -sybil-rehello), in alternating windows")
	fs.BoolVar(&c.so.atStart, "sybils-at-start", false, "with -sybils: the idle ids (quiet: they never say hello again) are connected before Start of a fresh session; counts the rounds committed in the first -sybil-window of sessions alternately without and with them")
	fs.IntVar(&c.so.windows, "sybil-windows", 2, "with -sybils: pairs of windows (without, with)")
	fs.DurationVar(&c.so.window, "sybil-window", time.Minute, "with -sybils: length of each window")
	fs.DurationVar(&c.so.rehello, "sybil-rehello", 20*time.Second, "with -sybils: an idle id says hello again this often")
	fs.DurationVar(&c.so.deadline, "sybil-deadline", 20*time.Second, "with -sybils: the session's round deadline (the coordinator's default)")
	fs.DurationVar(&c.so.gap, "sybil-round-gap", 250*time.Millisecond, "with -sybils: the pause between rounds (the coordinator's default is 1s; with none, rounds of a few ms ask each device more often than its message rate limit allows)")
	fs.IntVar(&c.o.samples, "samples", 0, "synthetic samples per device (0: twice what an average device uses in the run, at least 8; a single-pass device makes samples/b releases)")
	policy := device.PolicyFlags(fs)
	c.edgeArgs = fs.String("edge-args", "", "with -edges: extra edge flags, space separated")
	c.extra = fs.String("coordinator-args", "", "extra coordinator flags, space separated (e.g. -cpuprofile /tmp/c.prof)")
	c.baselineServer = fs.String("baseline-server", "", "internal: run the baseline's server side on this address")
	c.baselineOut = fs.Int("baseline-out", 0, "internal: baseline frame size out")
	c.baselineIn = fs.Int("baseline-in", 0, "internal: baseline frame size in")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	pol, err := policy()
	if err != nil {
		return c, err
	}
	c.pol = pol
	return c, nil
}

// devices returns the devices the run connects: -idle's if set, else -n.
func (o options) devices() int {
	if o.idle > 0 {
		return o.idle
	}
	return o.n
}

// check refuses a run that cannot finish with n devices or asks for an
// impossible cluster.
func (o options) check(n int) error {
	if per := o.samplesPer() / max(o.batch, 1); o.idle == 0 && o.T*o.m > (n-o.drop)*per {
		// Beyond that the devices run out of data, leave, and the session
		// cannot finish: say so now rather than wait for -timeout.
		return fmt.Errorf("-T %d with -m %d needs %d updates, but %d devices of %d samples each (b = %d) can send at most %d: lower -T or -m, or raise -n",
			o.T, o.m, o.T*o.m, n-o.drop, o.samplesPer(), o.batch, (n-o.drop)*per)
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
	return nil
}

// coordinatorArgs returns the coordinator's command line for n devices
// at addr with its data in dir, then extra's flags.
func coordinatorArgs(o options, n int, addr, dir, extra string) []string {
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
	return append(cargs, strings.Fields(extra)...)
}
