package main

import (
	"context"
	crand "crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/internal/loopback"
	"browserfl/shared/dataset"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// startCoordinator serves a real coordinator with demo shards (join code
// "join-me") on ln.
func startCoordinator(t *testing.T, ln net.Listener) {
	t.Helper()
	startCoordinatorShape(t, ln, 1, 100, 3, 1)
}

// startCoordinatorShape is startCoordinator with a training set of n
// samples of the given features, and demo shards sized for T rounds of b.
func startCoordinatorShape(t *testing.T, ln net.Listener, features, n, rounds, batch int) {
	t.Helper()
	sess := wire.SessionParams{Name: "test", Algorithm: "nc", Model: "logreg", Features: features, Classes: 10, Dim: (features + 1) * 10,
		DeadlineMillis: 500, M: 4, Cohort: 2, Rounds: rounds, Batch: batch, Clip: 1, Eta: 1, Rho: 1, DemoShards: true}
	set := dataset.Set{Name: "ids", Features: features, Classes: 10, Samples: make([]dataset.Sample, n)}
	for i := range set.Samples {
		x := make([]float32, features)
		for j := range x {
			x[j] = float32((i+j)%n) / float32(n)
		}
		set.Samples[i] = dataset.Sample{X: x, Label: i % 10}
	}
	serveCoordinator(t, ln, sess, set, nil)
}

// serveCoordinator serves a real coordinator of session sess (join code
// "join-me", never enough devices for a round) on ln, with demo shards
// of train: pictures, or a row task's rows written by csv.
func serveCoordinator(t *testing.T, ln net.Listener, sess wire.SessionParams, train dataset.Set, csv func([]int) ([]byte, error)) {
	t.Helper()
	srvHalf, err := optim.NewServer(sess, make([]float64, sess.Dim), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "coord.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: srvHalf, Store: st, MinDevices: 100, Seed: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	shards, err := shards.New(train, shards.Config{Classes: train.Classes, Rounds: sess.Rounds, Batch: sess.Batch, Alpha: 1, Seed: 1, Max: 4, CSV: csv})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api.Handler(c, site.Assets{}, shards), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// TestFetchShardRetries: the native device started before its
// coordinator asks for its demo shard again with growing, jittered,
// capped waits, each reported (logged by the command), and gets it once
// the real coordinator is up; a wrong join code stops it at once;
// cancelling stops the waiting.
func TestFetchShardRetries(t *testing.T) {
	// An address with nothing listening: the coordinator is down.
	addr := loopback.Addr(t)
	url := "ws://" + addr + "/ws"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const upAfter = 4
	var waits []time.Duration
	var blob []byte
	r := retry{Min: time.Millisecond, Max: 4 * time.Millisecond, OnWait: func(attempt int, wait time.Duration, err error) {
		waits = append(waits, wait)
		if attempt == upAfter { // the coordinator comes up now
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("listening on %s: %v", addr, err)
			}
			startCoordinator(t, ln)
		}
	}}
	err := r.do(ctx, func(ctx context.Context) (err error) {
		blob, _, err = fetchShard(ctx, url, "join-me")
		return err
	})
	if err != nil {
		t.Fatalf("after the coordinator came up: %v", err)
	}
	if set, err := dataset.DecodeShard(blob, 10); err != nil || len(set.Samples) == 0 {
		t.Errorf("the shard: %d samples, %v", len(set.Samples), err)
	}
	if len(waits) != upAfter {
		t.Errorf("%d waits, want %d (one per failed attempt)", len(waits), upAfter)
	}
	for i, w := range waits {
		d := min(r.Min<<i, r.Max) // the doubling, capped
		if w < d/2 || w > d {
			t.Errorf("wait %d: %v, want within [%v, %v]", i+1, w, d/2, d)
		}
	}

	// A wrong join code is not worth a second attempt.
	attempts := 0
	err = r.do(ctx, func(ctx context.Context) error {
		attempts++
		_, _, err := fetchShard(ctx, url, "wrong-code")
		return err
	})
	if !errors.Is(err, errPermanent) || attempts != 1 || !strings.Contains(err.Error(), "wrong join code") {
		t.Errorf("wrong join code: %d attempts, %v; want 1 and a permanent error that says the code is wrong", attempts, err)
	}

	// Cancelling stops the waiting for a coordinator that never comes,
	// in the middle of an hour-long wait.
	cctx, ccancel := context.WithCancel(ctx)
	down := retry{Min: time.Hour, Max: time.Hour, OnWait: func(int, time.Duration, error) { ccancel() }}
	done := make(chan error, 1)
	go func() {
		done <- down.do(cctx, func(ctx context.Context) error {
			_, _, err := fetchShard(ctx, "ws://127.0.0.1:1/ws", "join-me")
			return err
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v, want context.Canceled", err)
		}
	case <-ctx.Done(): // a guard against hanging, not a measurement
		t.Fatal("cancelling did not stop the wait")
	}
}

// TestRunRefusesABadURL: a -url that is not a websocket address stops
// the device at once with what to give, instead of retrying a request
// that can never be made.
func TestRunRefusesABadURL(t *testing.T) {
	for _, u := range []string{"not a url", "localhost:8080", "http://localhost:8080/ws", "ws:///ws"} {
		err := run([]string{"-url", u, "-code", "C", "-dir", t.TempDir()}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "-url") {
			t.Errorf("-url %q: %v, want an error naming -url", u, err)
		}
	}
}

// TestRunRefusesABadNickname: a nickname the coordinator would refuse at
// hello is refused before anything is fetched (the URL names no server).
func TestRunRefusesABadNickname(t *testing.T) {
	for _, nick := range []string{"Bad<name>", "🦄", strings.Repeat("a", 25)} {
		err := run([]string{"-url", "ws://127.0.0.1:1/ws", "-code", "C", "-dir", t.TempDir(), "-nickname", nick}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "-nickname") {
			t.Errorf("-nickname %q: %v, want an error naming -nickname", nick, err)
		}
	}
}
