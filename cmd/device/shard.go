package main

import (
	"context"
	"errors"
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

	"browserfl/shared/dataset"
)

// readShard returns the device's data shard: DIR/shard.bin, or, if it is
// missing, the coordinator's demo shard (asked again with backoff until
// it answers; Ctrl-C stops the waiting with context.Canceled), kept
// there.
func readShard(ctx context.Context, dir, wsURL, code string, log *slog.Logger) ([]byte, error) {
	shardPath := filepath.Join(dir, "shard.bin")
	blob, err := os.ReadFile(shardPath)
	if !errors.Is(err, os.ErrNotExist) {
		return blob, err
	}
	// Ctrl-C stops the waiting for a coordinator that is not up.
	fctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	err = retry{Min: 500 * time.Millisecond, Max: 30 * time.Second, OnWait: logRetries(log, "demo shard")}.do(fctx,
		func(ctx context.Context) (err error) {
			blob, err = fetchShard(ctx, wsURL, code)
			return err
		})
	stop()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(shardPath, blob, 0o600); err != nil {
		return nil, err
	}
	return blob, nil
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
