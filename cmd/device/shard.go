package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

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
	err = waitFor(ctx, log, "demo shard", func(ctx context.Context) (err error) {
		blob, err = fetchShard(ctx, wsURL, code)
		return err
	})
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
	b, h, err := apiGet(ctx, wsURL, "/api/demo/shard", code, dataset.MaxShardBytes)
	if err != nil {
		return nil, fmt.Errorf("demo shard: %w", err)
	}
	if n, _ := strconv.Atoi(h.Get("X-Shard-Classes")); n > 0 && n != 10 {
		return nil, fmt.Errorf("demo shard has %d classes, this device expects 10: %w", n, errPermanent)
	}
	return b, nil
}
