package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"browserfl/device"
	"browserfl/internal/loadtest"
	"browserfl/shared/wire"
)

// sybilOptions configure the -sybils mode: honest
// devices train while, in every other window, K idle ids from one address
// stay connected, answer pings, never answer a round and say hello again
// every -sybil-rehello.
type sybilOptions struct {
	k        int           // idle ids
	windows  int           // pairs of windows (without, with)
	window   time.Duration // length of each window
	rehello  time.Duration // an idle id says hello again this often
	deadline time.Duration // the session's round deadline
	gap      time.Duration // the session's pause between rounds
	atStart  bool          // the idle ids are connected before the session's first round
}

// runSybils measures honest rounds per minute without and with the idle
// ids, the windows interleaved in one coordinator process and one
// session. Each window with Sybils brings K new ids (the worst case: none
// has missed a round yet).
func runSybils(ctx context.Context, o options, so sybilOptions, pol device.Policy, stdout, stderr io.Writer) error {
	n := o.n
	if so.k <= 0 || so.windows <= 0 || so.window <= 0 {
		return errors.New("-sybils, -sybil-windows and -sybil-window must be positive")
	}
	ctx, addr, stop, err := startPausedCoordinator(ctx, o, so, n, stderr)
	if err != nil {
		return err
	}
	defer stop()
	base := "http://" + addr
	var sess wire.SessionParams
	if err := loadtest.GetJSON(ctx, base+"/api/session?code=LOADTEST", &sess); err != nil {
		return err
	}
	fl, err := startFleet(ctx, o, pol, sess, 0, n, direct("ws://"+addr+"/ws"))
	defer fl.stop()
	if err != nil {
		return err
	}
	if err := fl.waitConnected(ctx, n); err != nil {
		return err
	}
	if err := teacher(ctx, base, "resume"); err != nil {
		return err
	}
	// Warm up: every honest device has had the chance to be included.
	if err := loadtest.WaitRounds(ctx, base, 10, 100*time.Millisecond); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d honest devices, cohort m = %d, deadline %v, round gap %v; %d windows of %v, alternately without and with %d idle ids (hello again every %v)\n",
		n, o.m, so.deadline, so.gap, 2*so.windows, so.window, so.k, so.rehello)
	var rate [2][]float64
	var incl [2][]float64
	for w := range 2 * so.windows {
		with := w%2 == 1
		perMin, perRound, err := sybilWindow(ctx, so, w, with, addr, stdout)
		if err != nil {
			return err
		}
		i := 0
		if with {
			i = 1
		}
		rate[i] = append(rate[i], perMin)
		incl[i] = append(incl[i], perRound)
	}
	reportSybils(ctx, so, base, rate, incl, stdout)
	return nil
}

// reportSybils prints the rounds per minute and the updates included
// per round without (index 0) and with (1) the idle ids, and the
// coordinator's counters of the rounds' fill.
func reportSybils(ctx context.Context, so sybilOptions, base string, rate, incl [2][]float64, stdout io.Writer) {
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	without, with := mean(rate[0]), mean(rate[1])
	fmt.Fprintf(stdout, "honest rounds per minute: %.1f without, %.1f with %d idle ids (%+.1f%%); updates included per round %.2f and %.2f\n",
		without, with, so.k, 100*(with-without)/without, mean(incl[0]), mean(incl[1]))
	if m, err := loadtest.ScrapeMetrics(ctx, base+"/metrics"); err == nil {
		var parts []string
		for _, k := range []string{"browserfl_overselected_total", "browserfl_rounds_closed_at_target_total", "browserfl_late_updates_total", "browserfl_grace_drops_total"} {
			parts = append(parts, fmt.Sprintf("%s %.0f", strings.TrimPrefix(k, "browserfl_"), m[k]))
		}
		fmt.Fprintf(stdout, "coordinator counters: %s\n", strings.Join(parts, ", "))
	}
}

// sybilArgs returns the coordinator's command line for the -sybils
// mode at addr with its data in dir: the product's round settings
// (deadline, min-devices, fill wait); only the gate's per-address limits
// are lifted, because the honest devices share the Sybils' loopback
// address here.
func sybilArgs(o options, so sybilOptions, n int, addr, dir string) []string {
	total := n + so.k*so.windows + 10
	return []string{"-listen", addr, "-data", dir, "-join-code", "LOADTEST", "-M", strconv.Itoa(n),
		"-m", strconv.Itoa(o.m), "-T", strconv.Itoa(o.T), "-b", strconv.Itoa(o.batch), "-algorithm", o.algorithm,
		"-deadline", so.deadline.String(), "-round-gap", so.gap.String(),
		"-dataset", "none", "-max-devices", strconv.Itoa(total), "-log-level", "warn",
		"-register-rate", "-1", "-register-global-rate", "-1", "-prehello-per-address", strconv.Itoa(total),
		"-max-inactive", strconv.Itoa(total), "-seed", "1"}
}

// sybilWindow runs window w (with the idle ids if with) against the
// coordinator at addr and reports it: it returns the honest rounds per
// minute and the updates included per round.
func sybilWindow(ctx context.Context, so sybilOptions, w int, with bool, addr string, stdout io.Writer) (perMin, perRound float64, err error) {
	base := "http://" + addr
	sctx, stopSybils := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var asked, hellos atomic.Int64
	if with {
		for range so.k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				idleID(sctx, "ws://"+addr+"/ws", so.rehello, &asked, &hellos)
			}()
		}
	}
	c0, err := committedNow(ctx, base)
	if err != nil {
		stopSybils()
		return 0, 0, err
	}
	t0 := time.Now()
	err = loadtest.Sleep(ctx, so.window)
	c1, err2 := committedNow(ctx, base)
	elapsed := time.Since(t0)
	stopSybils()
	wg.Wait()
	if err = errors.Join(err, err2); err != nil {
		return 0, 0, err
	}
	included, lat, err := includedAfter(ctx, base, c0, c1)
	if err != nil {
		return 0, 0, err
	}
	perMin = float64(c1-c0) / elapsed.Minutes()
	if c1 > c0 {
		perRound = float64(included) / float64(c1-c0)
	}
	label := "without idle ids"
	if with {
		label = fmt.Sprintf("with %d idle ids (asked %d times, %d hellos)", so.k, asked.Load(), hellos.Load())
	}
	fmt.Fprintf(stdout, "window %d, %s: %d rounds in %.1f s = %.1f rounds per minute, %.2f updates included per round, round latency p50 %.0f ms, p99 %.0f ms\n",
		w+1, label, c1-c0, elapsed.Seconds(), perMin, perRound, loadtest.Quantile(lat, 0.5), loadtest.Quantile(lat, 0.99))
	return perMin, perRound, nil
}

// committedNow is the last committed round (/api/status).
func committedNow(ctx context.Context, base string) (int, error) {
	var st struct {
		Committed int `json:"committed"`
	}
	err := loadtest.GetJSON(ctx, base+"/api/status?code=LOADTEST", &st)
	return st.Committed, err
}

// includedAfter sums the included updates of rounds after+1 to upto
// (/api/rounds answers at most 1,000 records a request) and returns their
// latencies in ms, sorted.
func includedAfter(ctx context.Context, base string, after, upto int) (int, []float64, error) {
	n := 0
	var lat []float64
	for after < upto {
		var recs []loadtest.RoundRecord
		if err := loadtest.GetJSON(ctx, base+"/api/rounds?code=LOADTEST&after="+strconv.Itoa(after), &recs); err != nil {
			return 0, nil, err
		}
		if len(recs) == 0 {
			return 0, nil, fmt.Errorf("no round records after %d (want up to %d)", after, upto)
		}
		for _, r := range recs {
			if r.T <= upto {
				n += r.Included
				lat = append(lat, float64(r.LatencyMs))
			}
			after = max(after, r.T)
		}
	}
	slices.Sort(lat)
	return n, lat, nil
}

// idleID is one idle identity until ctx ends: it says hello (a new id the
// first time), reads (the websocket library answers pings), never answers
// a round, and every rehello closes its connection and says hello again
// with its id and secret.
func idleID(ctx context.Context, url string, rehello time.Duration, asked, hellos *atomic.Int64) {
	var id, secret string
	for ctx.Err() == nil {
		ws, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			loadtest.Sleep(ctx, time.Second)
			continue
		}
		ws.SetReadLimit(1 << 24)
		b, _ := wire.EncodeControl(wire.Hello{Version: wire.Version, JoinCode: "LOADTEST", DeviceID: id, Secret: secret})
		if ws.Write(ctx, websocket.MessageText, b) == nil {
			hellos.Add(1)
			rctx, cancel := context.WithTimeout(ctx, rehello)
			for {
				typ, b, err := ws.Read(rctx)
				if err != nil {
					if os.Getenv("SYBIL_DEBUG") != "" {
						fmt.Fprintln(os.Stderr, "idle id:", err)
					}
					break
				}
				if typ == websocket.MessageBinary {
					asked.Add(1)
					continue
				}
				if m, err := wire.DecodeControl(b); err == nil {
					if w, ok := m.(wire.Welcome); ok && id == "" {
						id, secret = w.DeviceID, w.Secret
					}
				}
			}
			cancel()
		}
		ws.CloseNow()
	}
}

// runSybilsAtStart measures the committed rounds in the first window
// after Start of fresh sessions, alternately without and with the idle
// ids connected before it (a class whose lobby holds so.k idle ids from
// one address when the teacher presses Start): each window starts its
// own coordinator, connects the idle ids (when with) and the n honest
// devices while it is paused, resumes it and counts the rounds committed
// within so.window.
func runSybilsAtStart(ctx context.Context, o options, so sybilOptions, pol device.Policy, stdout, stderr io.Writer) error {
	if so.k <= 0 || so.windows <= 0 || so.window <= 0 {
		return errors.New("-sybils, -sybil-windows and -sybil-window must be positive")
	}
	fmt.Fprintf(stdout, "%d honest devices, cohort m = %d, deadline %v, round gap %v; %d fresh sessions, alternately without and with %d idle ids present at Start; rounds committed in the first %v\n",
		o.n, o.m, so.deadline, so.gap, 2*so.windows, so.k, so.window)
	var rounds [2][]float64
	for w := range 2 * so.windows {
		with := w%2 == 1
		c, asked, err := sybilStartWindow(ctx, o, so, pol, with, stderr)
		if err != nil {
			return err
		}
		i, label := 0, "without idle ids"
		if with {
			i, label = 1, fmt.Sprintf("with %d idle ids present at Start (asked %d times)", so.k, asked)
		}
		rounds[i] = append(rounds[i], float64(c))
		fmt.Fprintf(stdout, "session %d, %s: %d rounds committed in the first %v after Start\n", w+1, label, c, so.window)
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	without, with := mean(rounds[0]), mean(rounds[1])
	fmt.Fprintf(stdout, "rounds in the first %v after Start: %.1f without, %.1f with %d idle ids present: ratio %.2f\n", so.window, without, with, so.k, with/without)
	return nil
}

// sybilStartWindow runs one fresh session of runSybilsAtStart and
// returns the rounds it committed in so.window after Start and how often
// the idle ids were asked.
func sybilStartWindow(ctx context.Context, o options, so sybilOptions, pol device.Policy, with bool, stderr io.Writer) (int, int64, error) {
	ctx, addr, stop, err := startPausedCoordinator(ctx, o, so, o.n, stderr)
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	base := "http://" + addr
	var sess wire.SessionParams
	if err := loadtest.GetJSON(ctx, base+"/api/session?code=LOADTEST", &sess); err != nil {
		return 0, 0, err
	}
	sctx, stopSybils := context.WithCancel(ctx)
	defer stopSybils()
	var wg sync.WaitGroup
	defer wg.Wait()
	var asked, hellos atomic.Int64
	if with {
		for range so.k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				idleID(sctx, "ws://"+addr+"/ws", so.window+time.Hour, &asked, &hellos)
			}()
		}
		for hellos.Load() < int64(so.k) {
			if err := loadtest.Sleep(ctx, 50*time.Millisecond); err != nil {
				return 0, 0, err
			}
		}
	}
	fl, err := startFleet(ctx, o, pol, sess, 0, o.n, direct("ws://"+addr+"/ws"))
	defer fl.stop()
	if err != nil {
		return 0, 0, err
	}
	if err := fl.waitConnected(ctx, o.n); err != nil {
		return 0, 0, err
	}
	if err := teacher(ctx, base, "resume"); err != nil {
		return 0, 0, err
	}
	if err := loadtest.Sleep(ctx, so.window); err != nil {
		return 0, 0, err
	}
	c, err := committedNow(ctx, base)
	stopSybils()
	return c, asked.Load(), err
}

// startPausedCoordinator starts the coordinator of the -sybils modes for
// n honest devices in a temporary directory, waits until it is healthy
// and pauses it before its first round. It returns the context that ends
// with the coordinator, its address and stop (which also removes the
// directory).
func startPausedCoordinator(ctx context.Context, o options, so sybilOptions, n int, stderr io.Writer) (context.Context, string, func(), error) {
	dir, err := os.MkdirTemp("", "bfl-loadtest-")
	if err != nil {
		return nil, "", nil, err
	}
	fail := func(err error) (context.Context, string, func(), error) {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "host.json"), []byte(`{"teacher_secret":"`+teacherSecret+`"}`), 0o600); err != nil {
		return fail(err)
	}
	addr, err := loadtest.FreeAddr()
	if err != nil {
		return fail(err)
	}
	_, cctx, stopCoord, err := loadtest.StartCoordinator(ctx, o.coordinator, sybilArgs(o, so, n, addr, dir), stderr)
	if err != nil {
		return fail(err)
	}
	stop := func() { stopCoord(); os.RemoveAll(dir) }
	base := "http://" + addr
	if err := loadtest.WaitHealthy(cctx, base); err != nil {
		stop()
		return nil, "", nil, err
	}
	if err := teacher(cctx, base, "pause"); err != nil {
		stop()
		return nil, "", nil, err
	}
	return cctx, addr, stop, nil
}
