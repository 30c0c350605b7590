// Command device is a native headless device: the same device runtime as
// the browser page (package device), with its own local data shard and a
// persistent state file. It joins a session, trains until the session
// ends, and can be stopped and restarted at any time (it resumes with its
// device id, secret and pending round from the state file).
//
//	device -url ws://localhost:8080/ws -code ABC123 -dir ./dev1
//
// The owner's budget is the page's default, epsilon 8 at delta 1e-5
// (-budget, -budget-delta); -unlimited removes it, and -allow-trusted and
// -allow-nonprivate accept trusted-server and non-private sessions.
//
// The shard is read from DIR/shard.bin; if missing, the coordinator's
// demo shard endpoint is asked (demo only: a real device has its own
// data) and the shard is kept there. A coordinator that is not up yet is
// asked again with jittered exponential backoff (0.5 s doubling up to
// 30 s, each attempt logged) until it answers or the device is stopped
// (Ctrl-C); a wrong join code or a coordinator without demo shards stops
// it at once. Once it has its data, the runtime reconnects the same way.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/wire"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "device:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("device", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wsURL := fs.String("url", "ws://localhost:8080/ws", "coordinator websocket URL")
	code := fs.String("code", "", "session join code (required)")
	dir := fs.String("dir", "device-state", "directory for the state file and the data shard")
	policy := device.PolicyFlags(fs)
	origin := fs.String("origin", "", "Origin header to send (if the coordinator requires one)")
	nickname := fs.String("nickname", "", "optional nickname for the teacher's lobby list (letters, digits, space, - and _; at most 24)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *code == "" {
		return errors.New("-code is required")
	}
	pol, err := policy()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	shardPath := filepath.Join(*dir, "shard.bin")
	blob, err := os.ReadFile(shardPath)
	if errors.Is(err, os.ErrNotExist) {
		// Ctrl-C stops the waiting for a coordinator that is not up.
		fctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		err = retry{Min: 500 * time.Millisecond, Max: 30 * time.Second, OnWait: logRetries(log, "demo shard")}.do(fctx,
			func(ctx context.Context) (err error) {
				blob, err = fetchShard(ctx, *wsURL, *code)
				return err
			})
		stop()
		if errors.Is(err, context.Canceled) {
			log.Info("stopped by its owner before the coordinator answered", "err", err)
			return nil
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(shardPath, blob, 0o600); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	set, err := dataset.DecodeShard(blob, 10)
	if err != nil {
		return err
	}
	log.Info("local data", "samples", len(set.Samples))

	cfg := device.Config{
		URL: *wsURL, JoinCode: *code, Storage: device.NewFileStorage(filepath.Join(*dir, "state.json")),
		Data: set.Samples, Origin: *origin, Nickname: *nickname,
		OnEvent: func(e device.Event) {
			if e.Err != nil {
				log.Warn(string(e.Kind), "round", e.T, "err", e.Err)
				return
			}
			log.Info(string(e.Kind), "round", e.T, "included_so_far", e.Participations)
		},
	}
	cfg.SetPolicy(pol)
	rt, err := device.New(ctx, cfg)
	if err != nil {
		return err
	}
	// The first SIGINT or SIGTERM makes the device leave (it tells the
	// coordinator, which stops sampling it, and closes the connection);
	// a second one stops it at once.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
		case <-ctx.Done():
			return
		}
		log.Info("stopping: leaving the session")
		rt.Leave(wire.LeaveStopped)
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	err = rt.Run(ctx)
	logLeft(log, rt, err)
	if errors.Is(err, context.Canceled) || errors.Is(err, device.ErrLeft) ||
		errors.Is(err, device.ErrDataUsedUp) || errors.Is(err, device.ErrBudgetSpent) {
		return nil
	}
	return err
}

// logLeft says why the device stopped taking part.
func logLeft(log *slog.Logger, rt *device.Runtime, err error) {
	st := rt.State()
	args := []any{"included", st.Included, "excluded", st.Excluded, "samples_used", st.Cursor, "pending_round", st.Pending}
	switch {
	case err == nil:
		log.Info("left the session: it has finished", args...)
	case errors.Is(err, device.ErrDataUsedUp):
		log.Info("left the session: the local data is used up (each sample is used once)", append(args, "detail", err.Error())...)
	case errors.Is(err, device.ErrBudgetSpent):
		log.Info("left the session: the privacy budget is spent", append(args, "detail", err.Error())...)
	case errors.Is(err, device.ErrLeft):
		log.Info("left the session: stopped by its owner", args...)
	case errors.Is(err, context.Canceled):
		log.Warn("stopped without leaving (second signal)", args...)
	default:
		log.Error("stopped", append(args, "err", err)...)
	}
}

// fetchShard asks the coordinator for a demo shard (demo only).
func fetchShard(ctx context.Context, wsURL, code string) ([]byte, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return nil, fmt.Errorf("-url: %w: %w", err, errPermanent)
	}
	u.Scheme = strings.Replace(strings.Replace(u.Scheme, "wss", "https", 1), "ws", "http", 1)
	u.Path = "/api/demo/shard"
	u.RawQuery = "code=" + url.QueryEscape(code)
	req, err := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("demo shard: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound:
		// A wrong join code, or no demo shards here: asking again will not help.
		return nil, fmt.Errorf("demo shard: HTTP %d: %w", resp.StatusCode, errPermanent)
	case resp.StatusCode != 200:
		// 429 (the gate's backoff), 5xx, a proxy's 502 while the coordinator starts.
		return nil, fmt.Errorf("demo shard: HTTP %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, dataset.MaxShardBytes+1))
	if err != nil {
		return nil, fmt.Errorf("demo shard: %w", err)
	}
	if n, _ := strconv.Atoi(resp.Header.Get("X-Shard-Classes")); n > 0 && n != 10 {
		return nil, fmt.Errorf("demo shard has %d classes, this device expects 10: %w", n, errPermanent)
	}
	return b, nil
}
