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
	"browserfl/shared/wire"
)

// readShard returns the device's data shard: DIR/shard.bin, or, if it is
// missing or damaged, the coordinator's demo shard (asked again with
// backoff until it answers; Ctrl-C stops the waiting with
// context.Canceled), kept there with its digest (keep). A kept shard
// that does not match its digest, or one without a digest that does not
// decode, is set aside and fetched again: never trusted, never fatal.
func readShard(ctx context.Context, dir, wsURL, code string, log *slog.Logger) ([]byte, error) {
	shardPath := filepath.Join(dir, "shard.bin")
	blob, sidecar, err := readKept(shardPath)
	if err == nil && !sidecar {
		// The owner's shard, or one kept before digests: sound if it
		// decodes.
		if _, derr := dataset.DecodeShard(blob, 10); derr != nil {
			err = fmt.Errorf("%s: %w: %w", shardPath, errDamaged, derr)
		} else if err = keepDigest(shardPath, blob); err != nil {
			return nil, err
		}
	}
	switch {
	case err == nil:
		return blob, nil
	case errors.Is(err, errDamaged):
		if err := setAside(shardPath, err, log); err != nil {
			return nil, err
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	// Ctrl-C stops the waiting for a coordinator that is not up.
	err = waitFor(ctx, log, "demo shard", func(ctx context.Context) (err error) {
		var stated string
		if blob, stated, err = fetchShard(ctx, wsURL, code); err != nil {
			return err
		}
		if _, err := dataset.DecodeShard(blob, 10); err != nil {
			return fmt.Errorf("demo shard: %w", err) // cut short on the way: ask again
		}
		return keep(shardPath, blob, stated)
	})
	if err != nil {
		return nil, err
	}
	return blob, nil
}

// fetchShard asks the coordinator for a demo shard (demo only), and the
// digest it states for it (empty if none).
func fetchShard(ctx context.Context, wsURL, code string) ([]byte, string, error) {
	b, h, err := apiGet(ctx, wsURL, "/api/demo/shard", code, dataset.MaxShardBytes)
	if err != nil {
		return nil, "", fmt.Errorf("demo shard: %w", err)
	}
	if n, _ := strconv.Atoi(h.Get("X-Shard-Classes")); n > 0 && n != 10 {
		return nil, "", fmt.Errorf("demo shard has %d classes, this device expects 10: %w", n, errPermanent)
	}
	return b, h.Get(wire.DigestHeader), nil
}
