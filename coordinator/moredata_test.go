package coordinator_test

import (
	"context"
	"errors"
	"slices"
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
// coordinator:
//
//   - the samples come while the round waits: it is answered, and no
//     round passes without the device (no EventWaiting);
//   - a chunk too small for a minibatch comes first: the round keeps
//     waiting (no sample is used twice), then answers with the next;
//   - they come only after rounds went on without it (EventWaiting):
//     the coordinator asks it as a probe and it answers again, also when
//     the session needs both devices (min-devices 2, engine.Askable).
//
// A device that left as done at its fourth round (the check of MoreData
// skipped) would have answered 3 rounds and Run would return its error.
func TestDeviceWaitsForMoreData(t *testing.T) {
	for _, tc := range []struct {
		name     string
		batch    int
		wait     time.Duration    // the device's DataWait
		deadline int              // the rounds' deadline (ms)
		min      int              // min-devices
		on       device.EventKind // the chunks start coming at the n-th event of this kind
		n        int
		chunks   []int         // samples in each chunk
		apart    time.Duration // before each chunk
		inAll    bool          // every round includes the waiting device
	}{
		// A 10 s deadline nobody misses, even under -race on a loaded
		// machine.
		{"within the wait", 1, 5 * time.Second, 10000, 1, device.EventRound, 4, []int{20}, 200 * time.Millisecond, true},
		{"a chunk too small first", 2, 5 * time.Second, 10000, 1, device.EventRound, 4, []int{1, 20}, 200 * time.Millisecond, true},
		// Rounds without the device close as soon as the other one
		// delivered: the samples come at once, before the session ends.
		{"after unanswered rounds", 1, 50 * time.Millisecond, 400, 1, device.EventWaiting, 3, []int{20}, 0, false},
		{"after unanswered rounds, two needed", 1, 50 * time.Millisecond, 400, 2, device.EventWaiting, 3, []int{20}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := testSession(8, 2, 2, 10, tc.deadline)
			sess.Batch = tc.batch
			h := newHarness(t, sess, tc.min)
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			go h.coord.Run(ctx)

			full, _ := newDevice(t, h.wsURL(), sess, 0, nil, 0)
			fake := nctest.NewDevice(target(1, sess.Dim), 1, 0.3, 1001)
			cfg := deviceConfig(t, h.wsURL(), 1, fake)
			cfg.Data = zeros()[:3*tc.batch] // three rounds
			var more atomic.Bool
			more.Store(true)
			cfg.MoreData = more.Load
			cfg.DataWait = tc.wait
			var (
				mu      sync.Mutex
				waiting []int
				seen    int
				rt      *device.Runtime
			)
			ready := make(chan struct{})
			cfg.OnEvent = func(e device.Event) {
				mu.Lock()
				defer mu.Unlock()
				if e.Kind == device.EventWaiting {
					waiting = append(waiting, e.T)
				}
				if e.Kind != tc.on {
					return
				}
				if seen++; seen != tc.n {
					return
				}
				go func() {
					<-ready
					for _, n := range tc.chunks {
						time.Sleep(tc.apart)
						if err := rt.AddData(zeros()[:n]); err != nil {
							t.Errorf("AddData: %v", err)
						}
					}
					more.Store(false)
				}()
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
			if l := rt.Leaving(); l != "" {
				t.Errorf("the waiting device left (%q)", l)
			}
			st := rt.State()
			// Answered rounds after its first three: a probe's update
			// may be excluded (a round closes at its target as soon as
			// its sure members delivered), but it was sent.
			if st.Included+st.Excluded <= 3 || !st.Ended {
				t.Errorf("waiting device: %+v; want more than 3 rounds answered (it had samples for 3) and the session ended", st)
			}
			if n := rt.DataLen(); st.Cursor > n {
				t.Errorf("cursor %d beyond the %d samples held: samples used twice", st.Cursor, n)
			}
			if tc.inAll && (st.Included != sess.Rounds || len(waiting) != 0) {
				t.Errorf("waiting device included in %d of %d rounds, rounds passed without it %v; want all, none: the samples came within its wait", st.Included, sess.Rounds, waiting)
			}
			if !tc.inAll && len(waiting) < tc.n {
				t.Errorf("rounds passed without the device: %v, want at least %d", waiting, tc.n)
			}
			if c := h.coord.Committed(); c != sess.Rounds {
				t.Errorf("%d of %d rounds committed", c, sess.Rounds)
			}
			t.Logf("rounds passed without it %v; included in %d of %d rounds, excluded from %d", waiting, st.Included, sess.Rounds, st.Excluded)
		})
	}
}

// TestClassWaitsForMoreData: every device of a class runs out of samples
// at the same round with more on their way (all the pages of a lesson
// fetch their next pictures at once), so every device misses two rounds
// (committed empty) and none is eligible any more. The coordinator then
// asks them in recovery rounds (engine.PlanRecovery, all probes):
//
//   - devices that delivered before: rounds 4 and 5 pass, round 6 (a
//     recovery round) comes while they still wait, so it too is committed
//     empty, and after the recovery pause (2 s) round 7 asks them again,
//     now with their samples;
//   - devices that never delivered to this coordinator (as after a
//     restart): rounds 1 and 2 pass, round 3 (a recovery round) asks them
//     with their samples.
//
// Either way the session finishes. Before recovery rounds, no round
// started after the second missed one: the devices were never asked again
// and the session waited for ever (here: until the 45 s limit).
func TestClassWaitsForMoreData(t *testing.T) {
	for _, tc := range []struct {
		name   string
		batch  int
		held   int   // samples each device holds at first
		passed []int // the rounds that pass without each device
	}{
		{"delivered before", 1, 3, []int{4, 5, 6}},
		{"never delivered", 2, 1, []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) { classWaits(t, tc.batch, tc.held, tc.passed) })
	}
}

// classWaits runs TestClassWaitsForMoreData's class of two: batch b, held
// samples each at first, the rest coming once the rounds passed went by.
func classWaits(t *testing.T, batch, held int, passed []int) {
	sess := testSession(8, 2, 2, 10, 400)
	sess.Batch = batch
	h := newHarness(t, sess, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	go h.coord.Run(ctx)

	var (
		mu      sync.Mutex
		waiting = map[int][]int{}
	)
	rts := make([]*device.Runtime, 2)
	ready := make(chan struct{})
	for i := range rts {
		fake := nctest.NewDevice(target(i, sess.Dim), 1, 0.3, uint64(1001+i))
		cfg := deviceConfig(t, h.wsURL(), i, fake)
		cfg.Data = zeros()[:held]
		var more atomic.Bool
		more.Store(true)
		cfg.MoreData = more.Load
		cfg.DataWait = 50 * time.Millisecond
		cfg.OnEvent = func(e device.Event) {
			if e.Kind != device.EventWaiting {
				return
			}
			mu.Lock()
			waiting[i] = append(waiting[i], e.T)
			n := len(waiting[i])
			mu.Unlock()
			if n != len(passed) { // the samples come after the last round that passes
				return
			}
			go func() {
				<-ready
				if err := rts[i].AddData(zeros()[:40]); err != nil {
					t.Errorf("AddData: %v", err)
				}
				more.Store(false)
			}()
		}
		rt, err := device.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rts[i] = rt
	}
	close(ready)
	errs := make(chan error, len(rts))
	for _, r := range rts {
		go func() {
			err := r.Run(ctx)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	for range rts {
		if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if c := h.coord.Committed(); c != sess.Rounds {
		t.Fatalf("%d of %d rounds committed; rounds passed without each device %v", c, sess.Rounds, waiting)
	}
	for i, rt := range rts {
		st := rt.State()
		// Included again after the rounds that passed (a loaded machine
		// may make it miss a later 400 ms deadline: not counted here).
		if l := rt.Leaving(); l != "" || st.Included <= passed[0]-1 || !slices.Equal(waiting[i], passed) {
			t.Errorf("device %d: left %q, %+v, rounds passed without it %v; want %v, then included again", i, l, st, waiting[i], passed)
		}
		t.Logf("device %d: rounds passed without it %v; included in %d of %d rounds", i, waiting[i], st.Included, sess.Rounds)
	}
}
