package main

import (
	"browserfl/internal/loadtest"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// frameSizes returns the mean update frame and round frame sizes of the
// recorded rounds: the baseline moves frames of these sizes.
func frameSizes(rs rounds, o options) (in, out int) {
	return int(float64(rs.bytesIn) / float64(max(1, rs.included))), int(float64(rs.bytesOut) / float64(max(1, rs.recorded*o.m)))
}

// baselineBlock runs one block of the baseline (-baseline-reps / blocks
// repetitions) with the frame sizes of the first committed rounds.
func baselineBlock(ctx context.Context, base string, o options, committed, blocks int, stderr io.Writer) (loadtest.BaselineResult, error) {
	rs, err := readRounds(ctx, base, committed)
	if err != nil {
		return loadtest.BaselineResult{}, err
	}
	if rs.included == 0 {
		return loadtest.BaselineResult{}, errors.New("no update was included")
	}
	in, out := frameSizes(rs, o)
	var pace time.Duration
	if o.paced {
		pace = time.Duration(loadtest.Quantile(rs.lat, 0.5) * float64(time.Millisecond))
	}
	bl, err := loadtest.RunBaseline(ctx, o.m, out, in, max(1, o.baselineRep/blocks), pace, stderr)
	if err != nil {
		return bl, fmt.Errorf("baseline: %w", err)
	}
	return bl, nil
}
