package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// errPermanent marks a fetch error that retrying cannot mend (a wrong
// join code, no demo shards on this coordinator, a shard for another
// task): the device stops with it at once.
var errPermanent = errors.New("asking again will not help")

// retry bounds the waits between attempts to reach a coordinator that is
// not up yet: the first wait is about Min, each next one doubles, up to
// Max, each drawn uniformly from [d/2, d] so that a classroom of native
// devices started together does not knock in step. (The same jittered
// doubling as the device runtime's reconnect loop, device.Config
// MinBackoff/MaxBackoff; a loop of a dozen lines, so no backoff library.)
type retry struct {
	Min, Max time.Duration
	// OnWait, if set, is called before each wait with the attempt that
	// failed (1 for the first), the wait and the error; the command logs
	// it (tests use it as their event).
	OnWait func(attempt int, wait time.Duration, err error)
}

// do calls f until it succeeds, fails with an error wrapping
// errPermanent, or ctx is done (then ctx's error, wrapping the last
// failure's).
func (r retry) do(ctx context.Context, f func(context.Context) error) error {
	d := r.Min
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil || errors.Is(err, errPermanent) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		}
		wait := d/2 + rand.N(d/2+1)
		if r.OnWait != nil {
			r.OnWait(attempt, wait, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		case <-t.C:
		}
		d = min(2*d, r.Max)
	}
}

// logRetries is the OnWait of the command: one line per failed attempt.
func logRetries(log *slog.Logger, what string) func(int, time.Duration, error) {
	return func(attempt int, wait time.Duration, err error) {
		log.Warn("coordinator not reachable yet: retrying", "what", what, "attempt", attempt,
			"retry_in", wait.Round(time.Millisecond), "err", err)
	}
}
