package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"browserfl/coordinator"
	"browserfl/coordinator/bus"
	"browserfl/coordinator/edge"
	"browserfl/coordinator/internal/nctest"
	"browserfl/coordinator/sessionnode"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/device"
	"browserfl/internal/loopback"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/plausible"
	"browserfl/shared/wire"
)

// busKeys generates the cluster's credentials for a test: the session's
// and those of edges e0 to e3, in a temporary directory.
func busKeys(t *testing.T) *bus.Keys {
	t.Helper()
	keys, err := bus.EnsureKeys(filepath.Join(t.TempDir(), "nats"), []string{"e0", "e1", "e2", "e3"})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// startNATS starts an embedded NATS server on addr (":0"-style for any
// port) for a test, admitting the components of keys.
func startNATS(t *testing.T, addr string, keys *bus.Keys) *server.Server {
	t.Helper()
	s, err := bus.StartNATS(bus.NATSServerConfig{Listen: addr, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// connectNATS connects as the component whose seed file is seed.
func connectNATS(t *testing.T, url, seed, name string) *nats.Conn {
	t.Helper()
	nc, err := bus.ConnectNATS(bus.NATSClientConfig{URL: url, Name: name, NKey: seed, Log: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// edgeDialer returns an HTTP client whose connections for device i go
// to the edges in addrs, its home edge (i mod len) first and the next
// ones when that refuses: what a load balancer in front of the edges
// does for a device whose edge died. An edge marked in down (nil: none)
// is not dialled, as a load balancer's health check takes a dead edge
// out: its port, free once the edge died, may be any program's by then.
func edgeDialer(i int, addrs []string, down []atomic.Bool) *http.Client {
	d := &net.Dialer{Timeout: 2 * time.Second}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		last := errors.New("every edge is down")
		for k := range addrs {
			j := (i + k) % len(addrs)
			if down != nil && down[j].Load() {
				continue
			}
			c, err := d.DialContext(ctx, network, addrs[j])
			if err == nil {
				return c, nil
			}
			last = err
		}
		return nil, last
	}}
	return &http.Client{Transport: tr}
}

// clusterSession is the session of the cluster tests: the product's nc
// halves with the exact f64 uplink, so that qtilde = q + (1/m) sum_i Y_i
// can be checked after every round (checkRealInvariant).
func clusterSession(m, cohort, rounds, deadlineMs int) wire.SessionParams {
	return wire.SessionParams{Name: "cluster", Dim: 10, DeadlineMillis: deadlineMs, Algorithm: "nc", Model: "logreg",
		Features: 4, Classes: 2, M: m, Cohort: cohort, Rounds: rounds, Batch: 8, Clip: 1, Eta: 0.05, Rho: 50,
		Compressor: "f64"}
}

// TestClusterInProcess runs the cluster shape in one process: an
// embedded NATS server, the session's coordinator with its SessionNode
// and three edges, 24 devices with faults (disconnects, late updates,
// lost decisions) spread over the edges. Every round must keep the
// noise-cancellation identity and the model must learn.
func TestClusterInProcess(t *testing.T) {
	keys := busKeys(t)
	ns := startNATS(t, "127.0.0.1:0", keys)
	defer ns.Shutdown()
	sess := clusterSession(24, 8, 30, 600)
	var seed mechanism.Seed
	seed[0] = 9
	srv, err := optim.NewServer(sess, make([]float64, sess.Dim), mechanism.NewStream(seed, 0))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var mu sync.Mutex
	qs := map[int][]float64{}
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st,
		MinDevices: 4, Seed: 5, Logger: quietLogger(),
		OnCommit: func(round int) {
			mu.Lock()
			qs[round] = srv.(optim.Estimator).Estimate()
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	node, err := sessionnode.New(c, sessionnode.Config{
		Conn:         connectNATS(t, ns.ClientURL(), bus.SessionSeedFile(keys.Dir), "session"),
		BeatInterval: 100 * time.Millisecond, EdgeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	go node.Run(ctx)
	var addrs []string
	var edges []*edge.Edge
	for k := range 3 {
		id := fmt.Sprintf("e%d", k)
		e, err := edge.New(edge.Config{ID: id, Conn: connectNATS(t, ns.ClientURL(), bus.EdgeSeedFile(keys.Dir, id), "edge"),
			Logger: quietLogger(), BeatInterval: 100 * time.Millisecond, SessionTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		go e.Run(ctx)
		hs := httptest.NewServer(e.Handler(site.Assets{}, nil))
		defer hs.Close()
		addrs = append(addrs, strings.TrimPrefix(hs.URL, "http://"))
		edges = append(edges, e)
	}
	waitHealthy(t, edges)
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	var f faults
	rts, hist := realDevicesWith(t, ctx, "ws://edges/ws", sess, 0.1, 700*time.Millisecond, &f, func(i int, cfg *device.Config) {
		cfg.Transport = device.WebSocket{URL: cfg.URL, HTTPClient: edgeDialer(i, addrs, nil)}
	})
	runDevices(t, ctx, rts)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if f.disconnects.Load() == 0 || f.lates.Load() == 0 || f.drops.Load() == 0 {
		t.Fatal("no fault of some kind was injected")
	}
	mu.Lock()
	checkRealInvariant(t, qs, hist, sess.Cohort)
	mu.Unlock()
	es := c.Status().Edges
	if len(es) != 3 {
		t.Errorf("the session lists %d edges, want 3: %+v", len(es), es)
	}
	var held int
	for _, e := range edges {
		held += e.Devices()
	}
	mdl, _ := model.New("logreg", 4, 2)
	acc, _ := model.Evaluate(mdl, srv.Model(), blobs(2000, 999))
	t.Logf("accuracy %.3f; faults: %d disconnects, %d late, %d lost decisions; edges %+v", acc,
		f.disconnects.Load(), f.lates.Load(), f.drops.Load(), es)
	// The same band as TestRealAlgorithmOverWire: separable blobs.
	if acc < 0.9 {
		t.Errorf("accuracy %.3f, want at least 0.9", acc)
	}
}

func waitHealthy(t *testing.T, edges []*edge.Edge) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, e := range edges {
		for e.Healthy() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("edge not healthy: %v", e.Healthy())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// The scale-out test's processes: this test binary re-executed with
// BFL_CLUSTER_CHILD set to "session" or "edge" (see TestMain).
func runClusterChild(role string) error {
	ctx := context.Background()
	nc, err := bus.ConnectNATS(bus.NATSClientConfig{URL: os.Getenv("BFL_NATS"), Name: role,
		NKey: os.Getenv("BFL_NKEY"), Log: quietLogger()})
	if err != nil {
		return err
	}
	switch role {
	case "edge":
		e, err := edge.New(edge.Config{ID: os.Getenv("BFL_EDGE"), Conn: nc, Logger: quietLogger(),
			BeatInterval: 200 * time.Millisecond, SessionTimeout: 2 * time.Second})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", os.Getenv("BFL_ADDR"))
		if err != nil {
			return err
		}
		go http.Serve(ln, e.Handler(site.Assets{}, nil))
		return e.Run(ctx)
	case "session":
		var sess wire.SessionParams
		if err := json.Unmarshal([]byte(os.Getenv("BFL_SESSION")), &sess); err != nil {
			return err
		}
		killAfter, _ := strconv.Atoi(os.Getenv("BFL_KILL_AFTER"))
		st, err := store.Open(os.Getenv("BFL_STORE"))
		if err != nil {
			return err
		}
		snaps, err := os.OpenFile(os.Getenv("BFL_SNAPSHOTS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		var seed mechanism.Seed
		srv, err := optim.NewServer(sess, make([]float64, sess.Dim), mechanism.NewStream(seed, 0))
		if err != nil {
			return err
		}
		writeSnap := func(t int) {
			b, _ := json.Marshal(snapshot{T: t, Q: srv.(optim.Estimator).Estimate(), X: srv.Model()})
			snaps.Write(append(b, '\n'))
			snaps.Sync()
		}
		c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st,
			MinDevices: sess.Cohort, FillWait: 2 * time.Second, Seed: 42, Logger: quietLogger(),
			OnCommit: func(t int) {
				writeSnap(t)
				if t == killAfter {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
				}
			}})
		if err != nil {
			return err
		}
		if n := c.Committed(); n > 0 {
			writeSnap(n)
		}
		node, err := sessionnode.New(c, sessionnode.Config{Conn: nc,
			BeatInterval: 200 * time.Millisecond, EdgeTimeout: 2 * time.Second})
		if err != nil {
			return err
		}
		go node.Run(ctx)
		if err := c.Run(ctx); err != nil {
			return err
		}
		select {} // the parent kills us
	}
	return fmt.Errorf("unknown cluster role %q", role)
}

// TestScaleOut is the cluster shape across processes on loopback: an
// embedded NATS server (in this process), one session process and three
// edge processes (this test binary re-executed), and scaleOutDevices
// native devices (the device runtime cmd/loadtest runs) spread over the
// edges. Mid-session an edge is SIGKILLed (its devices reconnect to the
// others), the session process is SIGKILLed once at a random moment of a
// round and once kills itself right after a commit and before any
// decision (it is restarted from its store each time), and the NATS
// server is shut down and restarted twice. After every committed round the
// server's qtilde must equal (1/m) sum_i (S_i + Y_i) over the devices'
// own record of their included rounds: no update counted twice, none
// counted that its device aborted, none lost that its device committed.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("scale-out across processes: not in -short")
	}
	natsAddr := loopback.Addr(t)
	keys := busKeys(t)
	ns := startNATS(t, natsAddr, keys)
	var nsMu sync.Mutex
	defer func() { nsMu.Lock(); ns.Shutdown(); nsMu.Unlock() }()
	natsURL := "nats://" + natsAddr

	n := scaleOutDevices
	sess := clusterSession(n, n/10, 24, 3000)
	dir := t.TempDir()
	sj, _ := json.Marshal(sess)
	snapPath := filepath.Join(dir, "snaps.jsonl")
	senv := []string{"BFL_CLUSTER_CHILD=session", "BFL_NATS=" + natsURL, "BFL_NKEY=" + bus.SessionSeedFile(keys.Dir), "BFL_SESSION=" + string(sj),
		"BFL_STORE=" + filepath.Join(dir, "coord.db"), "BFL_SNAPSHOTS=" + snapPath}
	const killAfter = 12
	// Every session process kills itself right after committing round
	// killAfter (which is committed once).
	senv = append(senv, "BFL_KILL_AFTER="+strconv.Itoa(killAfter))
	session := startChild(t, senv)
	var smu sync.Mutex
	defer func() { smu.Lock(); session.kill(); smu.Unlock() }()
	var addrs []string
	var edges []*child
	for k := range 3 {
		addr := loopback.Addr(t)
		addrs = append(addrs, addr)
		id := "e" + strconv.Itoa(k)
		e := startChild(t, []string{"BFL_CLUSTER_CHILD=edge", "BFL_NATS=" + natsURL, "BFL_NKEY=" + bus.EdgeSeedFile(keys.Dir, id),
			"BFL_EDGE=" + id, "BFL_ADDR=" + addr})
		edges = append(edges, e)
		defer e.kill()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	down := make([]atomic.Bool, len(addrs))
	rts, hist := realDevicesWith(t, ctx, "ws://edges/ws", sess, 0, 0, nil, func(i int, cfg *device.Config) {
		cfg.Transport = device.WebSocket{URL: cfg.URL, HTTPClient: edgeDialer(i, addrs, down)}
		cfg.MinBackoff, cfg.MaxBackoff = 50*time.Millisecond, 500*time.Millisecond
	})
	// Devices keep their own record (hist); the session's snapshots are
	// read from its file.
	done := make(chan struct{})
	go func() {
		defer close(done)
		runDevices(t, ctx, rts)
	}()

	committed := func() int {
		best := 0
		for r := range readSnapshotsQuiet(snapPath) {
			best = max(best, r)
		}
		return best
	}
	rng := rand.New(rand.NewPCG(2026, 13))
	edgeKilled, natsRestarts, sessionRestarts, sessionKilledMid := false, 0, 0, false
	exited := make(chan struct{})
	watch := func(c *child, ch chan struct{}) { go func() { c.cmd.Process.Wait(); close(ch) }() }
	watch(session, exited)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	edgeKillAt := 4
	for {
		select {
		case <-done:
			t.Logf("session finished: edge killed %v, session restarted %d times, NATS restarted %d times", edgeKilled, sessionRestarts, natsRestarts)
			goto check
		case <-ctx.Done():
			t.Fatalf("the session did not finish (committed %d)", committed())
		case <-exited:
			smu.Lock()
			session.kill()
			session = startChild(t, senv)
			sessionRestarts++
			exited = make(chan struct{})
			watch(session, exited)
			smu.Unlock()
		case <-tick.C:
			r := committed()
			if !sessionKilledMid && r >= 8 {
				// The session process, SIGKILLed at a random moment of
				// a round (restarted from its store when it exits).
				time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
				smu.Lock()
				session.cmd.Process.Signal(syscall.SIGKILL)
				smu.Unlock()
				sessionKilledMid = true
				t.Logf("session process SIGKILLed mid-round after round %d", r)
			}
			if !edgeKilled && r >= edgeKillAt {
				// Mid-round: rounds follow each other without a gap,
				// and the kill lands a random time into the next one.
				time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
				down[0].Store(true)
				edges[0].kill()
				edgeKilled = true
				t.Logf("edge e0 SIGKILLed after round %d", r)
			}
			// NATS restarts twice: mid-session, and during the last round
			// (its decisions and the session's End may be lost: the edges
			// must still get every device its decision before End).
			if (natsRestarts == 0 && r >= 17) || (natsRestarts == 1 && r >= sess.Rounds-1) {
				nsMu.Lock()
				ns.Shutdown()
				ns.WaitForShutdown()
				time.Sleep(500 * time.Millisecond)
				ns = startNATS(t, natsAddr, keys)
				nsMu.Unlock()
				natsRestarts++
				t.Logf("NATS restarted after round %d", r)
			}
		}
	}
check:
	// Every session process kills itself after committing round
	// killAfter, so that kill always happens; the mid-round one may
	// coincide with it when rounds are fast (fewer devices under -race).
	if !edgeKilled || natsRestarts == 0 || sessionRestarts == 0 || !sessionKilledMid {
		t.Fatalf("a fault was not injected: edge %v, NATS restarts %d, session restarts %d", edgeKilled, natsRestarts, sessionRestarts)
	}
	snaps := readSnapshots(t, snapPath)
	if _, ok := snaps[sess.Rounds]; !ok {
		t.Fatalf("no snapshot of the final round %d", sess.Rounds)
	}
	qs := map[int][]float64{}
	for r, s := range snaps {
		qs[r] = s.Q
	}
	checkRealInvariant(t, qs, hist, sess.Cohort)
	included := 0
	for _, h := range hist {
		included += len(h)
	}
	mdl, _ := model.New("logreg", 4, 2)
	acc, _ := model.Evaluate(mdl, snaps[sess.Rounds].X, blobs(2000, 999))
	t.Logf("%d devices, %d rounds, %d inclusions, accuracy %.3f", n, sess.Rounds, included, acc)
	if acc < 0.9 {
		t.Errorf("accuracy %.3f, want at least 0.9 (separable blobs)", acc)
	}
}

// readSnapshotsQuiet returns the rounds with a snapshot so far (torn
// lines skipped).
func readSnapshotsQuiet(path string) map[int]bool {
	b, err := os.ReadFile(path)
	out := map[int]bool{}
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		var s struct {
			T int `json:"t"`
		}
		if json.Unmarshal([]byte(line), &s) == nil && s.T > 0 {
			out[s.T] = true
		}
	}
	return out
}

// oneEdge puts h's coordinator behind a session node and one edge over
// an embedded NATS server until ctx ends; it returns the edge's HTTP
// server and its websocket URL.
func oneEdge(t *testing.T, ctx context.Context, h *harness) (*httptest.Server, string) {
	t.Helper()
	keys := busKeys(t)
	ns := startNATS(t, "127.0.0.1:0", keys)
	t.Cleanup(ns.Shutdown)
	node, err := sessionnode.New(h.coord, sessionnode.Config{Conn: connectNATS(t, ns.ClientURL(), bus.SessionSeedFile(keys.Dir), "session"),
		BeatInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go node.Run(ctx)
	e, err := edge.New(edge.Config{ID: "e0", Conn: connectNATS(t, ns.ClientURL(), bus.EdgeSeedFile(keys.Dir, "e0"), "edge"),
		Logger: quietLogger(), BeatInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go e.Run(ctx)
	hs := httptest.NewServer(e.Handler(site.Assets{}, nil))
	t.Cleanup(hs.Close)
	waitHealthy(t, []*edge.Edge{e})
	return hs, "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
}

// TestEdgeRejectsHostileUpdates is TestHostileUpdatesRejected through an
// edge: an attacker connected to the edge answers every round with an
// update far above the norm bound (1e300 in f64, -1e8 and 1e4 in f32).
// The edge must reject each one itself (the attacker is told "rejected",
// counted in the edge's browserfl_rejected_updates_total), so that its
// honest neighbours' sum still reaches the session: every round commits
// with them and the identity holds.
func TestEdgeRejectsHostileUpdates(t *testing.T) {
	runEdgeRejectedAttacker(t, testSession(8, 3, 3, 6, 20000), hostilePayload(8))
}

// TestEdgeRejectsSpikeInsideNormBound: an edge applies the session's
// tests of each update (plausible.Checker, from the parameters that come with
// each round), not only its norm bound: a spike at 0.9 of the norm bound
// is refused at the edge every round, with the coordinate in the reason.
func TestEdgeRejectsSpikeInsideNormBound(t *testing.T) {
	sess := testSession(256, 3, 3, 6, 20000)
	res := runEdgeRejectedAttacker(t, sess, spikeInsideNormBound(t, sess, 7))
	for _, r := range res.reasons {
		if !strings.Contains(r, "coordinate 7") {
			t.Errorf("reason %q does not name the coordinate", r)
		}
	}
}

// runEdgeRejectedAttacker runs sess through one edge with a raw attacker
// answering each round with payload and M-1 honest devices: every round
// commits with the honest updates only, the attacker is told "rejected"
// every round, the edge counts it, and the noise-cancellation identity
// holds.
func runEdgeRejectedAttacker(t *testing.T, sess wire.SessionParams, payload func(t, n int) []byte) attackResult {
	t.Helper()
	h := newHarness(t, sess, sess.M)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hs, wsURL := oneEdge(t, ctx, h)
	runErr := make(chan error, 1)
	go func() { runErr <- h.coord.Run(ctx) }()
	attacker := dialRaw(t, ctx, wsURL, true)
	defer attacker.CloseNow()
	done := attack(ctx, attacker, sess.Dim, payload)
	var rts []*device.Runtime
	var fakes []*nctest.Device
	for i := range sess.M - 1 {
		rt, f := newDevice(t, wsURL, sess, i, nil, 0)
		rts, fakes = append(rts, rt), append(fakes, f)
	}
	runDevices(t, ctx, rts)
	if err := <-runErr; err != nil {
		t.Fatalf("session: %v", err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("attacker: %v", res.err)
	}
	if got := h.coord.Committed(); got != sess.Rounds {
		t.Fatalf("committed %d rounds, want %d", got, sess.Rounds)
	}
	if res.rejected != sess.Rounds {
		t.Errorf("attacker told 'rejected' %d times, want %d (reasons %q)", res.rejected, sess.Rounds, res.reasons)
	}
	if got := metric(t, hs.URL, "browserfl_rejected_updates_total"); got != fmt.Sprint(sess.Rounds) {
		t.Errorf("edge browserfl_rejected_updates_total = %s, want %d", got, sess.Rounds)
	}
	// Every honest update made it: M-1 per round.
	for r := 1; r <= sess.Rounds; r++ {
		rec, ok, err := h.store.Round(r)
		if err != nil || !ok || len(rec.Included) != sess.M-1 {
			t.Errorf("round %d included %d updates, want the %d honest ones", r, len(rec.Included), sess.M-1)
		}
	}
	checkInvariant(t, h.qs, sess.Cohort, fakes)
	return res
}

// readOfType reads frames on ws until one of type typ arrives and
// returns it (frames of the other type are skipped).
func readOfType(t *testing.T, ctx context.Context, ws *websocket.Conn, typ websocket.MessageType) []byte {
	t.Helper()
	for {
		got, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got == typ {
			return b
		}
	}
}

// readRoundT reads frames on ws until a round frame arrives and returns
// its round.
func readRoundT(t *testing.T, ctx context.Context, ws *websocket.Conn) int {
	t.Helper()
	r, err := wire.DecodeRound(readOfType(t, ctx, ws, websocket.MessageBinary), wire.Limits{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return r.T
}

func sendUpdate(t *testing.T, ctx context.Context, ws *websocket.Conn, round, dim int) {
	t.Helper()
	x := make([]float64, dim)
	x[0] = 0.1
	payload, _ := mechanism.Dense32{}.Compress(nil, make([]float64, dim), x, nil)
	b, err := wire.EncodeUpdate(wire.UpdateFrame{T: round, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageBinary, b); err != nil {
		t.Fatal(err)
	}
}

// TestEdgeDeviceGoneAfterAnswering: a device answers its round through
// an edge and drops its connection at once, while the edge still waits
// for another member. The edge must hand the session the update it
// holds before it reports the device gone, so that the session counts
// it (a device whose update is in the round stays in it); reporting the
// disconnect first would drop the device from the round and then refuse
// the edge's whole sum, excluding the other member too.
func TestEdgeDeviceGoneAfterAnswering(t *testing.T) {
	sess := testSession(8, 2, 2, 1, 30000)
	h := newHarness(t, sess, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, wsURL := oneEdge(t, ctx, h)
	go h.coord.Run(ctx)
	a := dialRaw(t, ctx, wsURL, true)
	b := dialRaw(t, ctx, wsURL, true)
	defer b.CloseNow()
	ra, rb := readRoundT(t, ctx, a), readRoundT(t, ctx, b)
	sendUpdate(t, ctx, a, ra, sess.Dim)
	// The update is read before the close (frames are read in order).
	a.Close(websocket.StatusNormalClosure, "")
	for h.coord.Status().Devices.Connected != 1 {
		if ctx.Err() != nil {
			t.Fatal("the session never heard that the device left")
		}
		time.Sleep(5 * time.Millisecond)
	}
	sendUpdate(t, ctx, b, rb, sess.Dim)
	for {
		m := readControl(t, ctx, b)
		if d, ok := m.(wire.Decision); ok {
			if d.State != wire.Included {
				t.Fatalf("the member that stayed got %+v, want included", d)
			}
			break
		}
	}
	rec, ok, err := h.store.Round(1)
	if err != nil || !ok || len(rec.Included) != 2 {
		t.Fatalf("round 1 included %v, want both devices", rec.Included)
	}
}

// readControl reads frames on ws until a control message arrives and
// returns it.
func readControl(t *testing.T, ctx context.Context, ws *websocket.Conn) wire.Message {
	t.Helper()
	m, err := wire.DecodeControl(readOfType(t, ctx, ws, websocket.MessageText))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEdgeKeepsHistories: an edge tests each device's running sum too
// (coordinator/edge/edgehist.go), not only each message. A raw attacker registered at the
// edge pushes the same coordinate every round at 0.9 of the coordinate
// limit for its rounds asked, which every per-message test lets through;
// the running sum of its included updates grows past the history's limit
// within a few rounds and the edge refuses it, naming the sum, in every
// round from the one the checker alone (offline, same history) refuses it
// in. Every round commits.
func TestEdgeKeepsHistories(t *testing.T) {
	sess := testSession(256, 3, 3, 8, 20000)
	chk, err := plausible.NewChecker(sess, sess.Dim)
	if err != nil {
		t.Fatal(err)
	}
	if !chk.Tracks() {
		t.Fatal("test setting: the session's checker keeps no history")
	}
	// Asked every round (m = M), so its a-th answer is round a's.
	push := func(a int) float64 { return 0.9 * chk.CoordLimit(a) }
	caught := 0
	var h plausible.History
	h.FromStart = true
	for a := 1; a <= sess.Rounds && caught == 0; a++ {
		x := make([]float64, sess.Dim)
		x[3] = push(a)
		h.Ask()
		if err := chk.Check(x, math.Abs(x[3]), &h); err != nil {
			caught = a
		}
		h.Add(x)
	}
	if caught < 2 {
		t.Fatalf("test setting: the drift is refused at round %d by the tests alone (want the history to catch it, from round 2)", caught)
	}
	h2 := newHarness(t, sess, sess.M)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hs, wsURL := oneEdge(t, ctx, h2)
	runErr := make(chan error, 1)
	go func() { runErr <- h2.coord.Run(ctx) }()
	attacker := dialRaw(t, ctx, wsURL, true)
	defer attacker.CloseNow()
	done := attack(ctx, attacker, sess.Dim, func(r, _ int) []byte {
		x := make([]float64, sess.Dim)
		x[3] = push(r)
		p, _ := mechanism.Dense64{}.Compress(nil, make([]float64, sess.Dim), x, nil)
		return p
	})
	var rts []*device.Runtime
	for i := range sess.M - 1 {
		rt, _ := newDevice(t, wsURL, sess, i, nil, 0)
		rts = append(rts, rt)
	}
	runDevices(t, ctx, rts)
	if err := <-runErr; err != nil {
		t.Fatalf("session: %v", err)
	}
	res := <-done
	if res.rejected == 0 {
		t.Fatalf("the edge never refused the drift (reasons %q): it tests messages only", res.reasons)
	}
	for _, r := range res.reasons {
		if !strings.Contains(r, "sum of this device's last") {
			t.Errorf("reason %q is not the history's", r)
		}
	}
	if got := metric(t, hs.URL, "browserfl_rejected_updates_total"); got != fmt.Sprint(res.rejected) {
		t.Errorf("edge browserfl_rejected_updates_total = %s, want %d", got, res.rejected)
	}
	if want := sess.Rounds - caught + 1; res.rejected != want {
		t.Errorf("the edge refused the drift %d times, want %d (every round from %d on, as the checker alone does)", res.rejected, want, caught)
	}
	if got := h2.coord.Committed(); got != sess.Rounds {
		t.Fatalf("committed %d rounds, want %d", got, sess.Rounds)
	}
	t.Logf("the drift passes each message test and is refused by the edge from round %d on (%d refusals)", caught, res.rejected)
}
