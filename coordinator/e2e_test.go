package coordinator_test

import (
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/internal/nctest"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
)

// testSession is a valid "nc" session definition; the fake algorithm of
// nctest stands in for the halves, so only M, Cohort, Rounds, Dim and the
// deadline matter to the run.
func testSession(dim, m, cohort, rounds, deadlineMs int) wire.SessionParams {
	return wire.SessionParams{Name: "test", Dim: dim, DeadlineMillis: deadlineMs, Algorithm: "nc", Model: "logreg",
		Features: 1, Classes: 2, M: m, Cohort: cohort, Rounds: rounds, Batch: 1, Clip: 1, Eta: 1, Rho: 1}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type harness struct {
	t       *testing.T
	coord   *coordinator.Coordinator
	server  *nctest.Server
	srv     *httptest.Server
	mu      sync.Mutex
	qs      map[int][]float64 // server qtilde after each committed round
	store   *store.Store
	session wire.SessionParams
}

func newHarness(t *testing.T, sess wire.SessionParams, minDevices int) *harness {
	t.Helper()
	return newHarnessLimits(t, sess, minDevices, wsconn.Limits{})
}

func newHarnessLimits(t *testing.T, sess wire.SessionParams, minDevices int, lim wsconn.Limits) *harness {
	t.Helper()
	return newHarnessWith(t, sess, func(cfg *coordinator.Config) {
		cfg.MinDevices, cfg.Limits = minDevices, lim
	})
}

// newHarnessWith builds the harness with the standard test configuration
// (stand-in nc server, qtilde recorded at every commit), changed by edit
// before the coordinator is created.
func newHarnessWith(t *testing.T, sess wire.SessionParams, edit func(*coordinator.Config)) *harness {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "coord.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, server: nctest.NewServer(sess.Dim, sess.Cohort, 0.5), qs: map[int][]float64{}, store: st, session: sess}
	cfg := coordinator.Config{
		Session: sess, JoinCode: "join-me", Server: h.server, Store: st, MinDevices: sess.Cohort,
		Seed: 42, Logger: quietLogger(),
		OnCommit: func(round int) {
			h.mu.Lock()
			h.qs[round] = append([]float64(nil), h.server.Q...)
			h.mu.Unlock()
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	h.coord, err = coordinator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = newTestServer(t, h.coord)
	return h
}

func newTestServer(t *testing.T, c *coordinator.Coordinator) *httptest.Server {
	srv := httptest.NewServer(api.Handler(c, site.Assets{}, nil))
	t.Cleanup(srv.Close)
	return srv
}

func (h *harness) wsURL() string { return "ws" + strings.TrimPrefix(h.srv.URL, "http") + "/ws" }

// target returns device i's target in dimension d (seeded): 1.5 + U(-1, 1)
// per coordinate, so the mean target is far from the start x = 0.
func target(i, d int) []float64 {
	rng := rand.New(rand.NewPCG(7, uint64(i)))
	c := make([]float64, d)
	for k := range c {
		c[k] = 1.5 + 2*rng.Float64() - 1
	}
	return c
}

type faults struct {
	disconnects, lates, drops, afterSend atomic.Int64
}

// newDevice returns a runtime for device i whose algorithm is the nctest
// fake; with f non-nil it injects faults with probability p each (seeded
// per device).
func newDevice(t *testing.T, url string, sess wire.SessionParams, i int, f *faults, p float64) (*device.Runtime, *nctest.Device) {
	t.Helper()
	fake := nctest.NewDevice(target(i, sess.Dim), 1, 0.3, uint64(1000+i))
	cfg := deviceConfig(t, url, i, fake)
	if f != nil {
		deadline := time.Duration(sess.DeadlineMillis) * time.Millisecond
		cfg.Hooks = faultHooks(rand.New(rand.NewPCG(99, uint64(i))), p, deadline+50*time.Millisecond, f)
	}
	rt, err := device.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt, fake
}

// deviceConfig is the runtime configuration of test device i running the
// nctest fake.
func deviceConfig(t *testing.T, url string, i int, fake *nctest.Device) device.Config {
	return device.Config{
		URL: url, JoinCode: "join-me", Storage: &device.MemStorage{},
		Data:       zeros(),
		Unlimited:  true, // the crash tests' sessions spend more than the default budget
		NewDevice:  func(optim.Params) (optim.Device, error) { return fake, nil },
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		OnEvent: func(e device.Event) {
			if e.Kind == device.EventError {
				t.Logf("device %d (%.8s): %v", i, e.DeviceID, e.Err)
			}
		},
	}
}

// checkInvariant checks qtilde_t = (1/m) sum_i (Ssum_i + Y_i) as of every
// committed round t. Both sides add the same float64 terms in different
// orders; 1e-9 is many orders above that rounding (terms are O(1), a few
// hundred of them) and many below a missed or doubled message (O(0.1)).
func checkInvariant(t *testing.T, qs map[int][]float64, m int, devs []*nctest.Device) {
	t.Helper()
	if len(qs) == 0 {
		t.Fatal("no committed rounds recorded")
	}
	for round, q := range qs {
		if r := nctest.ResidualAsOf(q, m, round, devs); r > 1e-9 {
			t.Errorf("round %d: |qtilde - q - (1/m) sum Y_i| = %g", round, r)
		}
	}
}

func runDevices(t *testing.T, ctx context.Context, rts []*device.Runtime) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(rts))
	for i, rt := range rts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = rt.Run(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("device %d: %v", i, err)
		}
	}
}

func TestEndToEndUndisturbed(t *testing.T) {
	// A 10 s deadline: nobody misses it, even under -race on a loaded
	// machine, so every cohort member must be included.
	sess := testSession(8, 6, 3, 12, 10000)
	h := newHarness(t, sess, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	var rts []*device.Runtime
	var fakes []*nctest.Device
	for i := range sess.M {
		rt, f := newDevice(t, h.wsURL(), sess, i, nil, 0)
		rts, fakes = append(rts, rt), append(fakes, f)
	}
	runDevices(t, ctx, rts)
	if err := <-runErr; err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	if got := h.coord.Committed(); got != sess.Rounds {
		t.Fatalf("committed %d rounds, want %d", got, sess.Rounds)
	}
	total := 0
	for i, rt := range rts {
		st := rt.State()
		if st.Pending != 0 {
			t.Errorf("device %d ended with pending round %d", i, st.Pending)
		}
		total += st.Included
	}
	// Undisturbed with a generous deadline: every cohort member is
	// included, m per round.
	if want := sess.Rounds * sess.Cohort; total != want {
		recs, _ := h.store.Rounds(0, 100)
		for _, r := range recs {
			t.Logf("round %d: cohort %v included %v latency %v", r.T, r.Cohort, r.Included, r.Committed.Sub(r.Started))
		}
		t.Errorf("%d inclusions, want %d", total, want)
	}
	checkInvariant(t, h.qs, sess.Cohort, fakes)
	checkExposition(t, h.srv.URL, sess.Rounds)
}

// checkExposition parses base's /metrics as the Prometheus text format
// (the client library's own parser) and checks the round latency
// histogram and the round counter against rounds committed rounds, and
// that every rejection kind is there.
func checkExposition(t *testing.T, base string, rounds int) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not valid Prometheus text: %v", err)
	}
	hist := fams["browserfl_round_latency_seconds"]
	if hist == nil || hist.GetType() != dto.MetricType_HISTOGRAM || len(hist.Metric) != 1 {
		t.Fatalf("round latency histogram: %v", hist)
	}
	if h := hist.Metric[0].GetHistogram(); h.GetSampleCount() != uint64(rounds) || !(h.GetSampleSum() > 0) || len(h.GetBucket()) == 0 {
		t.Errorf("round latency histogram: %d samples (want %d), sum %v, %d buckets", h.GetSampleCount(), rounds, h.GetSampleSum(), len(h.GetBucket()))
	}
	if c := fams["browserfl_rounds_committed_total"]; c == nil || c.GetType() != dto.MetricType_COUNTER || c.Metric[0].GetCounter().GetValue() != float64(rounds) {
		t.Errorf("browserfl_rounds_committed_total: %v, want %d", c, rounds)
	}
	if r := fams["browserfl_rejections_total"]; r == nil || len(r.Metric) != metrics.NumRejections-1 {
		t.Errorf("browserfl_rejections_total: %v, want %d kinds", r, metrics.NumRejections-1)
	}
}

// applyOnly hides the server half's ApplySum: the coordinator then keeps
// each update's payload and applies the round with Apply.
type applyOnly struct{ optim.Server }

func TestEndToEndFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(optim.Server) optim.Server
	}{
		{"ApplySum", nil},
		{"Apply", func(s optim.Server) optim.Server { return applyOnly{s} }},
	} {
		t.Run(tc.name, func(t *testing.T) { testEndToEndFaults(t, tc.wrap) })
	}
}

func testEndToEndFaults(t *testing.T, wrap func(optim.Server) optim.Server) {
	sess := testSession(8, 8, 4, 20, 250)
	h := newHarnessWith(t, sess, func(cfg *coordinator.Config) {
		cfg.MinDevices = 2
		if wrap != nil {
			cfg.Server = wrap(cfg.Server)
			if _, ok := cfg.Server.(optim.SumApplier); ok {
				t.Fatal("the wrapped server still has ApplySum")
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	var f faults
	var rts []*device.Runtime
	var fakes []*nctest.Device
	for i := range sess.M {
		rt, fk := newDevice(t, h.wsURL(), sess, i, &f, 0.12)
		rts, fakes = append(rts, rt), append(fakes, fk)
	}
	runDevices(t, ctx, rts)
	if err := <-runErr; err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	t.Logf("faults injected: %d disconnects before send, %d late updates, %d disconnects right after send, %d lost decisions",
		f.disconnects.Load(), f.lates.Load(), f.afterSend.Load(), f.drops.Load())
	if f.disconnects.Load() == 0 || f.lates.Load() == 0 || f.drops.Load() == 0 || f.afterSend.Load() == 0 {
		t.Fatalf("the seeded fault schedule injected no fault of some kind; the test would prove nothing")
	}
	for i, rt := range rts {
		if st := rt.State(); st.Pending != 0 {
			t.Errorf("device %d ended with pending round %d", i, st.Pending)
		}
	}
	checkInvariant(t, h.qs, sess.Cohort, fakes)
}

func TestRefusals(t *testing.T) {
	sess := testSession(4, 2, 1, 1, 500)
	h := newHarness(t, sess, 5) // never starts a round
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Wrong join code.
	rt, err := device.New(ctx, device.Config{URL: h.wsURL(), JoinCode: "nope", Storage: &device.MemStorage{},
		Data: zeros()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Run(ctx); !errors.Is(err, device.ErrRefused) {
		t.Errorf("wrong join code: Run = %v, want ErrRefused", err)
	}

	// A device over its owner's budget refuses the session itself.
	rt, err = device.New(ctx, device.Config{URL: h.wsURL(), JoinCode: "join-me", Storage: &device.MemStorage{},
		Data: zeros(), Budget: plan.Budget{Epsilon: 0.5, Delta: plan.DefaultDelta}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Run(ctx); !errors.Is(err, device.ErrRefused) || !strings.Contains(err.Error(), "budget") {
		t.Errorf("over budget: Run = %v, want ErrRefused about the budget", err)
	}

	// Resuming with a stolen device id and a wrong secret.
	var st device.MemStorage
	st.Save(ctx, []byte(fmt.Sprintf(`{"device_id":%q,"secret":"00"}`, "0123456789abcdef0123456789abcdef")))
	rt, err = device.New(ctx, device.Config{URL: h.wsURL(), JoinCode: "join-me", Storage: &st,
		Data: zeros()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Run(ctx); !errors.Is(err, device.ErrRefused) {
		t.Errorf("wrong secret: Run = %v, want ErrRefused", err)
	}
}

// TestMinDevicesAboveCohort: a round waits for more devices than it
// samples (regression: the round loop once spun without starting).
func TestMinDevicesAboveCohort(t *testing.T) {
	sess := testSession(4, 6, 2, 4, 2000)
	h := newHarness(t, sess, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	var rts []*device.Runtime
	var fakes []*nctest.Device
	for i := range sess.M {
		rt, f := newDevice(t, h.wsURL(), sess, i, nil, 0)
		rts, fakes = append(rts, rt), append(fakes, f)
	}
	runDevices(t, ctx, rts)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	checkInvariant(t, h.qs, sess.Cohort, fakes)
}

// TestDeviceCrashes kills devices (their Run is cancelled at seeded random
// moments, whatever they are doing) and restarts each from its Storage
// alone, with a fresh algorithm object: a process crash without torn
// writes. The invariant must hold after every round. Each life lasts 5-65
// ms counted from its welcome, so that a slow machine (the race detector
// under load) still lets every life reach the session: counted from its
// start, a life could end before its hello is answered, every time, and
// the session would never end.
func TestDeviceCrashes(t *testing.T) {
	sess := testSession(8, 6, 3, 80, 300)
	h := newHarness(t, sess, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	var mu sync.Mutex
	fakes := make([]*nctest.Device, sess.M)
	var restarts atomic.Int64
	var wg sync.WaitGroup
	for i := range sess.M {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := &device.MemStorage{}
			rng := rand.New(rand.NewPCG(55, uint64(i)))
			for {
				cfg := device.Config{URL: h.wsURL(), JoinCode: "join-me", Storage: st,
					Data:       zeros(),
					MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
					NewDevice: func(optim.Params) (optim.Device, error) {
						d := nctest.NewDevice(target(i, sess.Dim), 1, 0.3, uint64(1000+i))
						mu.Lock()
						fakes[i] = d
						mu.Unlock()
						return d, nil
					}}
				welcomed := make(chan struct{})
				var once sync.Once
				cfg.OnEvent = func(e device.Event) {
					if e.Kind == device.EventConnected {
						once.Do(func() { close(welcomed) })
					}
				}
				rt, err := device.New(ctx, cfg)
				if err != nil {
					t.Error(err)
					return
				}
				life := time.Duration(5+rng.IntN(60)) * time.Millisecond
				rctx, rcancel := context.WithCancelCause(ctx)
				go func() {
					select {
					case <-welcomed:
					case <-rctx.Done():
						return
					}
					select {
					case <-time.After(life):
						rcancel(context.DeadlineExceeded)
					case <-rctx.Done():
					}
				}()
				err = rt.Run(rctx)
				if errors.Is(context.Cause(rctx), context.DeadlineExceeded) && ctx.Err() == nil {
					err = context.DeadlineExceeded // the crash, whatever Run made of it
				}
				rcancel(nil)
				switch {
				case err == nil:
					return // the session ended
				case ctx.Err() != nil:
					t.Errorf("device %d: session did not end: %v", i, err)
					return
				case !errors.Is(err, context.DeadlineExceeded):
					t.Errorf("device %d: %v", i, err)
					return
				}
				restarts.Add(1)
			}
		}()
	}
	wg.Wait()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d device crashes and restarts", restarts.Load())
	if restarts.Load() < int64(sess.M) {
		t.Fatalf("only %d restarts: the test would prove little", restarts.Load())
	}
	checkInvariant(t, h.qs, sess.Cohort, fakes)
}

// TestTLS runs a short session over wss:// (the same handler behind TLS).
func TestTLS(t *testing.T) {
	sess := testSession(4, 3, 2, 3, 2000)
	h := newHarness(t, sess, 2)
	srv := httptest.NewTLSServer(api.Handler(h.coord, site.Assets{}, nil))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	var rts []*device.Runtime
	var fakes []*nctest.Device
	for i := range sess.M {
		fake := nctest.NewDevice(target(i, sess.Dim), 1, 0.3, uint64(i))
		rt, err := device.New(ctx, device.Config{Transport: device.WebSocket{URL: "wss" + strings.TrimPrefix(srv.URL, "https") + "/ws", HTTPClient: srv.Client()},
			JoinCode: "join-me", Storage: &device.MemStorage{}, Data: zeros(),
			NewDevice: func(optim.Params) (optim.Device, error) { return fake, nil }})
		if err != nil {
			t.Fatal(err)
		}
		rts, fakes = append(rts, rt), append(fakes, fake)
	}
	runDevices(t, ctx, rts)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	checkInvariant(t, h.qs, sess.Cohort, fakes)
}

// zeros is local data for the stand-in algorithm, which ignores samples:
// enough of them that no device runs out in a test (the runtime uses each
// sample once for single-pass algorithms).
func zeros() []dataset.Sample {
	s := make([]dataset.Sample, 10000)
	for i := range s {
		s[i] = dataset.Sample{X: []float32{0}}
	}
	return s
}

// faultHooks injects device faults drawn from rng: with probability p each
// a disconnect before sending, an update sent late (after late), a
// disconnect right after sending (before the decision), and a lost
// decision; f counts them.
func faultHooks(rng *rand.Rand, p float64, late time.Duration, f *faults) *device.Hooks {
	return &device.Hooks{
		BeforeSend: func(int) (time.Duration, bool) {
			switch u := rng.Float64(); {
			case u < p:
				f.disconnects.Add(1)
				return 0, true
			case u < 2*p:
				f.lates.Add(1)
				return late, false
			}
			return 0, false
		},
		DropDecision: func(int) bool {
			if rng.Float64() < p {
				f.drops.Add(1)
				return true
			}
			return false
		},
		AfterSend: func(int) bool {
			if rng.Float64() < p {
				f.afterSend.Add(1)
				return true
			}
			return false
		},
	}
}
