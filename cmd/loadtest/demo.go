package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"

	"browserfl/coordinator/view"
	"browserfl/device"
	"browserfl/internal/loadtest"
	"browserfl/shared/dataset"
	"browserfl/shared/plan"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// The demo mode (-demo N) measures the coordinator's memory in the
// session `make run` starts: the default task's training set, the demo
// session in a lobby, N devices that each load the page and its assets
// and fetch a demo shard as a browser does (brotli), then train on it
// until the session ends. It prints the coordinator's RSS before any
// device and its peak RSS (VmHWM) over the whole run:
//
//	loadtest -coordinator bin/coordinator -demo 10
//
// The devices are the runtime of package device, in this process.

// demoResult is what a demo run measured.
type demoResult struct {
	devices        int
	samples        int     // samples in the first device's shard
	shardBytes     int     // its bytes as sent (compressed)
	pageBytes      int     // the page and its assets as sent, for one device
	rounds         int     // rounds committed
	planned        int     // the session's rounds
	accuracy       float64 // the last evaluation's accuracy (after round evalRound, on evalSamples test samples)
	evalRound      int
	evalSamples    int
	wall           float64 // seconds from Start to the last round
	rssIdle        int64   // RSS before any device (bytes)
	hwmIdle        int64   // peak RSS up to then
	hwm            int64   // peak RSS over the run
	startedIn      float64 // seconds from the process's start to /healthz answering
	datasetComment string
}

// printDemo writes r's report; its last line, "coordinator peak RSS: X
// MiB", is the figure docs/performance.md tracks.
func printDemo(w io.Writer, r demoResult) {
	fmt.Fprintf(w, "demo session: %d devices, %s; %d of %d rounds committed in %.1f s after Start\n",
		r.devices, r.datasetComment, r.rounds, r.planned, r.wall)
	if r.evalSamples > 0 {
		fmt.Fprintf(w, "final accuracy: %.1f%% after round %d on %d test samples\n", 100*r.accuracy, r.evalRound, r.evalSamples)
	}
	fmt.Fprintf(w, "each device: the page and its assets %.2f MB, a demo shard of %d samples %.2f MB (as sent)\n",
		float64(r.pageBytes)/1e6, r.samples, float64(r.shardBytes)/1e6)
	fmt.Fprintf(w, "coordinator RSS before any device: %.1f MiB (healthy after %.1f s; peak until then %.1f MiB)\n",
		loadtest.MiB(r.rssIdle), r.startedIn, loadtest.MiB(r.hwmIdle))
	fmt.Fprintf(w, "coordinator peak RSS: %.1f MiB\n", loadtest.MiB(r.hwm))
}

// demoArgs returns the coordinator's command line for the demo mode: the
// session `make run` starts (-lobby, the default task and its data), on
// addr with its data in dir, then extra's flags.
func demoArgs(addr, dir, extra string) []string {
	args := []string{"-lobby", "-listen", addr, "-data", dir, "-join-code", "LOADTEST", "-log-level", "warn", "-seed", "1"}
	return append(args, strings.Fields(extra)...)
}

// runDemo runs the demo mode with n devices.
func runDemo(ctx context.Context, o options, pol device.Policy, n int, extra string, stdout, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "bfl-loadtest-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "host.json"), []byte(`{"teacher_secret":"`+teacherSecret+`"}`), 0o600); err != nil {
		return fmt.Errorf("demo: teacher secret: %w", err)
	}
	addr, err := loadtest.FreeAddr()
	if err != nil {
		return err
	}
	t0 := time.Now()
	coord, ctx, stop, err := loadtest.StartCoordinator(ctx, o.coordinator, demoArgs(addr, dir, extra), stderr)
	if err != nil {
		return err
	}
	defer stop()
	pid := coord.Cmd.Process.Pid
	base := "http://" + addr
	if err := loadtest.WaitHealthy(ctx, base); err != nil {
		return fmt.Errorf("demo: coordinator: %w", err)
	}
	r := demoResult{devices: n, startedIn: time.Since(t0).Seconds()}
	if r.rssIdle, err = loadtest.RSS(pid); err != nil {
		return err
	}
	if r.hwmIdle, err = loadtest.HWM(pid); err != nil {
		return err
	}
	var sess wire.SessionParams
	if err := loadtest.GetJSON(ctx, base+"/api/session?code=LOADTEST", &sess); err != nil {
		return fmt.Errorf("demo: session: %w", err)
	}
	def, err := plan.SessionTask(sess)
	if err != nil {
		return fmt.Errorf("demo: session: %w", err)
	}
	r.datasetComment = fmt.Sprintf("%d features, %d classes, b = %d", sess.Features, sess.Classes, sess.Batch)

	// The devices arrive as a class does: each loads the page, fetches
	// its shard and joins the lobby; then the teacher presses Start.
	devCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	var connected sync.WaitGroup
	connected.Add(n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pageBytes, err := loadPage(devCtx, base)
			if err != nil {
				connected.Done()
				errs <- fmt.Errorf("device %d: %w", i, err)
				return
			}
			set, sent, err := fetchDemoShard(devCtx, base, sess, def)
			if err != nil {
				connected.Done()
				errs <- fmt.Errorf("device %d: %w", i, err)
				return
			}
			if i == 0 {
				r.pageBytes, r.samples, r.shardBytes = pageBytes, set.Len(), sent
			}
			once := sync.OnceFunc(connected.Done)
			cfg := device.Config{URL: "ws://" + addr + "/ws", JoinCode: "LOADTEST", Storage: &device.MemStorage{}, Data: set.Samples, Task: def,
				MinBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second,
				OnEvent: func(e device.Event) {
					if e.Kind == device.EventConnected || e.Kind == device.EventLobby {
						once()
					}
				}}
			cfg.SetPolicy(pol)
			rt, err := device.New(devCtx, cfg)
			if err != nil {
				once()
				errs <- fmt.Errorf("device %d: %w", i, err)
				return
			}
			err = rt.Run(devCtx)
			once()
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, device.ErrDataUsedUp) && !errors.Is(err, device.ErrBudgetSpent) {
				errs <- fmt.Errorf("device %d: %w", i, err)
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	connected.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("demo: %w", err)
	default:
	}
	fmt.Fprintf(stdout, "%d devices in the lobby after %v\n", n, time.Since(t0).Round(time.Millisecond))
	if err := teacher(ctx, base, "start"); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	started := time.Now()
	if err := loadtest.GetJSON(ctx, base+"/api/session?code=LOADTEST", &sess); err != nil {
		return fmt.Errorf("demo: session after Start: %w", err)
	}
	st, err := waitFinished(ctx, base, sess.Rounds, errs)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	r.rounds, r.planned, r.wall = st.Committed, sess.Rounds, time.Since(started).Seconds()
	if st.LastEval != nil {
		r.accuracy, r.evalRound, r.evalSamples = st.LastEval.Accuracy, st.LastEval.T, st.LastEval.Samples
	}
	if r.hwm, err = loadtest.HWM(pid); err != nil {
		return err
	}
	printDemo(stdout, r)
	return nil
}

// waitFinished waits until the session at base has ended (after its last
// round, or earlier when every device has used its shard up) and returns
// its last status; a device's error (errs) ends the wait.
func waitFinished(ctx context.Context, base string, rounds int, errs <-chan error) (view.Status, error) {
	var st view.Status
	for !st.Finished {
		select {
		case err := <-errs:
			return st, err
		default:
		}
		if err := loadtest.Sleep(ctx, time.Second); err != nil {
			return st, fmt.Errorf("%d of %d rounds committed: %w", st.Committed, rounds, err)
		}
		if err := loadtest.GetJSON(ctx, base+"/api/status?code=LOADTEST", &st); err != nil {
			return st, fmt.Errorf("status: %w", err)
		}
	}
	return st, nil
}

// assetRef finds the page's references to its assets.
var assetRef = regexp.MustCompile(`"(/web/[A-Za-z0-9_.-]+)"`)

// loadPage fetches the page and every asset it names, as a browser that
// accepts brotli does, and returns the bytes sent.
func loadPage(ctx context.Context, base string) (int, error) {
	page, n, err := getEncoded(ctx, base+"/", 1<<20)
	if err != nil {
		return 0, fmt.Errorf("page: %w", err)
	}
	refs := assetRef.FindAllStringSubmatch(string(page), -1)
	if len(refs) == 0 {
		return 0, errors.New("page: no /web/ asset named")
	}
	for _, ref := range refs {
		_, m, err := getEncoded(ctx, base+ref[1], 64<<20)
		if err != nil {
			return 0, fmt.Errorf("page asset %s: %w", ref[1], err)
		}
		n += m
	}
	return n, nil
}

// fetchDemoShard fetches a demo shard as the page's browser would
// (brotli) and decodes it; it returns the shard and the bytes sent.
func fetchDemoShard(ctx context.Context, base string, sess wire.SessionParams, def *task.Definition) (dataset.Set, int, error) {
	if def != nil {
		// A row task: the example rows as CSV, read as the page reads
		// a student's file.
		body, n, err := getEncoded(ctx, base+"/api/demo/rows?code=LOADTEST", dataset.MaxShardBytes)
		if err != nil {
			return dataset.Set{}, 0, fmt.Errorf("demo rows: %w", err)
		}
		rows, refused, err := def.ReadCSV(bytes.NewReader(body))
		if err == nil && len(refused) > 0 {
			err = refused[0]
		}
		if err != nil {
			return dataset.Set{}, 0, fmt.Errorf("demo rows: %w", err)
		}
		set, err := def.Set("demo", rows)
		return set, n, err
	}
	blob, n, err := getEncoded(ctx, base+"/api/demo/shard?code=LOADTEST", dataset.MaxShardBytes)
	if err != nil {
		return dataset.Set{}, 0, fmt.Errorf("demo shard: %w", err)
	}
	set, err := dataset.DecodeShard(blob, sess.Classes)
	if err != nil {
		return dataset.Set{}, 0, fmt.Errorf("demo shard: %w", err)
	}
	return set, n, nil
}

// getEncoded GETs url accepting brotli and gzip and returns the decoded
// body (at most limit bytes) and the bytes as sent.
func getEncoded(ctx context.Context, url string, limit int64) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept-Encoding", "gzip, deflate, br")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	sent, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, 0, err
	}
	body, err := decodeBody(resp.Header.Get("Content-Encoding"), sent, limit)
	if err != nil {
		return nil, 0, err
	}
	return body, len(sent), nil
}

// decodeBody decodes a body sent with Content-Encoding enc ("", "br" or
// "gzip"), refusing more than limit bytes.
func decodeBody(enc string, sent []byte, limit int64) ([]byte, error) {
	var r io.Reader
	switch enc {
	case "":
		r = bytes.NewReader(sent)
	case "br":
		r = brotli.NewReader(bytes.NewReader(sent))
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(sent))
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		r = zr
	default:
		return nil, fmt.Errorf("Content-Encoding %q", enc)
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s body: %w", enc, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("body over %s bytes", strconv.FormatInt(limit, 10))
	}
	return b, nil
}
