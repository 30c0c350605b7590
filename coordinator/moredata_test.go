package coordinator_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"browserfl/coordinator/internal/nctest"
	"browserfl/device"
)

// TestDeviceWaitsForMoreData: a single-pass device whose samples run out
// while more are on their way (device.Config.MoreData, the page fetching
// the rest of its demo shard) stays in the session instead of leaving as
// done, and answers rounds again once they arrive, against the real
// coordinator. The samples arrive either within the device's wait (the
// round is answered late) or only after rounds went on without it (they
// pass unanswered, EventWaiting). A device that left as done at its third
// round (the check of MoreData skipped) would have answered 3 rounds,
// and Run would return its error.
func TestDeviceWaitsForMoreData(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wait     time.Duration // the device's DataWait
		arriveAt int           // the samples come with this EventWaiting
		deadline int           // the rounds' deadline (ms)
		all      bool          // every round includes the waiting device
		min      int           // min-devices
	}{
		// A 10 s deadline nobody misses, even under -race on a loaded
		// machine: the round waited for is answered, so the device is
		// in all of them.
		{"within the wait", 5 * time.Second, 1, 10000, true, 1},
		// One device is enough for a round: the other is asked as a
		// probe once it has missed rounds (engine.PlanCohort).
		{"after unanswered rounds", 50 * time.Millisecond, 3, 400, false, 1},
		// Two needed, and one of the two no longer sampled: the probe
		// counts (engine.Askable), or no round would start again and the
		// device would never be asked.
		{"after unanswered rounds, two needed", 50 * time.Millisecond, 3, 400, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := testSession(8, 2, 2, 10, tc.deadline)
			h := newHarness(t, sess, tc.min)
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			go h.coord.Run(ctx)

			full, _ := newDevice(t, h.wsURL(), sess, 0, nil, 0)
			fake := nctest.NewDevice(target(1, sess.Dim), 1, 0.3, 1001)
			cfg := deviceConfig(t, h.wsURL(), 1, fake)
			cfg.Data = zeros()[:3] // three rounds at b = 1
			var more atomic.Bool
			more.Store(true)
			cfg.MoreData = more.Load
			cfg.DataWait = tc.wait
			var (
				mu      sync.Mutex
				waiting []int
				rt      *device.Runtime
			)
			ready := make(chan struct{})
			cfg.OnEvent = func(e device.Event) {
				if e.Kind != device.EventWaiting {
					return
				}
				mu.Lock()
				waiting = append(waiting, e.T)
				n := len(waiting)
				mu.Unlock()
				if n == tc.arriveAt {
					go func() {
						<-ready
						if err := rt.AddData(zeros()[:20]); err != nil {
							t.Errorf("AddData: %v", err)
						}
						more.Store(false)
					}()
				}
			}
			var err error
			rt, err = device.New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			close(ready)
			errs := make(chan error, 2)
			for _, r := range []*device.Runtime{full, rt} {
				go func() {
					err := r.Run(ctx)
					if err != nil {
						cancel() // a device that left ends the test at once
					}
					errs <- err
				}()
			}
			for range 2 {
				if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("Run: %v", err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(waiting) < tc.arriveAt {
				t.Errorf("EventWaiting at rounds %v, want at least %d", waiting, tc.arriveAt)
			}
			if l := rt.Leaving(); l != "" {
				t.Errorf("the waiting device left (%q)", l)
			}
			st := rt.State()
			// Answered rounds after its first three samples: a probe's
			// update may be excluded (a round closes at its target as
			// soon as its sure members delivered), but it was sent.
			if st.Included+st.Excluded <= 3 || !st.Ended {
				t.Errorf("waiting device: %+v; want more than 3 rounds answered (it had samples for 3) and the session ended", st)
			}
			if tc.all && st.Included != sess.Rounds {
				t.Errorf("waiting device included in %d of %d rounds, want all: the samples came within its wait", st.Included, sess.Rounds)
			}
			if c := h.coord.Committed(); c != sess.Rounds {
				t.Errorf("%d of %d rounds committed", c, sess.Rounds)
			}
			t.Logf("waited at rounds %v; included in %d of %d rounds, excluded from %d", waiting, st.Included, sess.Rounds, st.Excluded)
		})
	}
}
