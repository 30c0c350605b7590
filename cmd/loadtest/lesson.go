package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"browserfl/device"
	"browserfl/internal/loadtest"
	"browserfl/shared/wire"
)

// The lesson mode (-lesson) measures what shared noise costs a lesson in
// wall time: the same lesson (-n devices, all of them every round, the
// demo's session: logistic regression on 784 features, b = -b, the
// coordinator's round gap and a lesson's round deadline) run by nc and by
// shared noise, side by side in one run:
//
//	loadtest -coordinator bin/coordinator -lesson -n 10 -m 10 -b 32 -T 40 -blocks 4
//
// Two coordinators start, one per mode, each with its own n device
// runtimes in this process, both paused. Then the modes take turns, block
// by block (nc then shared, then shared then nc, ...): one mode's
// session resumes until T/blocks more rounds have committed while the
// other stays paused, so load that comes and goes on a shared machine
// falls on both alike. The wall time of a mode's lesson is the sum of its
// blocks (resume to the block's last commit); the report's last line is
// "lesson: shared/nc wall = R".

// lessonGap is the pause between rounds in the lesson mode: the
// coordinator's default, which a lesson runs with.
const lessonGap = "1s"

// lessonDeadline is a lesson's round deadline (lesson.Deadline).
const lessonDeadline = "8s"

// lessonSide is one mode's coordinator and devices.
type lessonSide struct {
	alg       string
	base      string
	pid       int
	stop      func()
	fl        *fleet
	committed int
	wall      time.Duration // the blocks', summed
	rounds    int           // committed within the blocks
	cpu       float64       // the coordinator's CPU seconds within the blocks
}

// startLessonSide starts alg's coordinator and its n devices, paused.
// Stop it with its stop (also on error).
func startLessonSide(ctx context.Context, o options, pol device.Policy, n int, alg, extra string, stderr io.Writer) (*lessonSide, error) {
	s := &lessonSide{alg: alg, stop: func() {}}
	dir, err := os.MkdirTemp("", "bfl-loadtest-lesson-")
	if err != nil {
		return s, err
	}
	s.stop = func() { os.RemoveAll(dir) }
	if err := os.WriteFile(filepath.Join(dir, "host.json"), []byte(`{"teacher_secret":"`+teacherSecret+`"}`), 0o600); err != nil {
		return s, err
	}
	addr, err := loadtest.FreeAddr()
	if err != nil {
		return s, err
	}
	oa := o
	oa.algorithm = alg
	args := append(coordinatorArgs(oa, n, addr, dir, ""), "-round-gap", lessonGap, "-deadline", lessonDeadline)
	args = append(args, strings.Fields(extra)...)
	coord, cctx, stopCoord, err := loadtest.StartCoordinator(ctx, o.coordinator, args, stderr)
	if err != nil {
		return s, err
	}
	s.pid, s.base = coord.Cmd.Process.Pid, "http://"+addr
	s.stop = func() { stopCoord(); os.RemoveAll(dir) }
	if err := loadtest.WaitHealthy(cctx, s.base); err != nil {
		return s, fmt.Errorf("%s: %w", alg, err)
	}
	if err := teacher(cctx, s.base, "pause"); err != nil {
		return s, fmt.Errorf("%s: %w", alg, err)
	}
	var sess wire.SessionParams
	if err := loadtest.GetJSON(cctx, s.base+"/api/session?code=LOADTEST", &sess); err != nil {
		return s, fmt.Errorf("%s: %w", alg, err)
	}
	s.fl, err = startFleet(cctx, o, pol, sess, 0, n, direct("ws://"+addr+"/ws"))
	s.stop = func() { s.fl.stop(); stopCoord(); os.RemoveAll(dir) }
	if err != nil {
		return s, fmt.Errorf("%s: %w", alg, err)
	}
	if err := s.fl.waitConnected(cctx, n); err != nil {
		return s, fmt.Errorf("%s: %w", alg, err)
	}
	return s, nil
}

// block resumes the side's session until k more rounds have committed,
// adds the time and rounds to its sums, pauses it again and waits for
// the round then open (not counted).
func (s *lessonSide) block(ctx context.Context, k int) error {
	cpu0, err := loadtest.ProcCPU(s.pid)
	if err != nil {
		return err
	}
	from := s.committed
	start := time.Now()
	if err := teacher(ctx, s.base, "resume"); err != nil {
		return fmt.Errorf("%s: %w", s.alg, err)
	}
	if err := waitRounds(ctx, s.base, from+k, 20*time.Millisecond); err != nil {
		return fmt.Errorf("%s: %w", s.alg, err)
	}
	s.wall += time.Since(start)
	cpu1, err := loadtest.ProcCPU(s.pid)
	if err != nil {
		return err
	}
	s.cpu += cpu1 - cpu0
	last, err := lastCommitted(ctx, s.base, from+k-1)
	if err != nil {
		return fmt.Errorf("%s: %w", s.alg, err)
	}
	s.rounds += last - from
	if err := teacher(ctx, s.base, "pause"); err != nil {
		return fmt.Errorf("%s: %w", s.alg, err)
	}
	if s.committed, err = settle(ctx, s.base, last); err != nil {
		return fmt.Errorf("%s: %w", s.alg, err)
	}
	return nil
}

// lessonRecords are the side's round records: their latencies (start to
// commit, ms, sorted) and the bytes in and out per round and device.
func (s *lessonSide) lessonRecords(ctx context.Context, n int) (lat []float64, in, out float64, err error) {
	var recs []roundRecord
	if err := loadtest.GetJSON(ctx, s.base+"/api/rounds?code=LOADTEST", &recs); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", s.alg, err)
	}
	if len(recs) == 0 {
		return nil, 0, 0, fmt.Errorf("%s: no round recorded", s.alg)
	}
	for _, r := range recs {
		lat = append(lat, float64(r.LatencyMs))
		in += float64(r.BytesIn)
		out += float64(r.BytesOut)
	}
	slices.Sort(lat)
	k := float64(len(recs) * n)
	return lat, in / k, out / k, nil
}

// runLesson runs the lesson mode.
func runLesson(ctx context.Context, o options, pol device.Policy, extra string, stdout, stderr io.Writer) error {
	n, blocks := o.n, max(1, o.blocks)
	k := max(1, o.T/blocks)
	// Each block may leave one more round to finish after its pause.
	o.T = k*blocks + blocks + 1
	o.m = n
	if err := o.check(n); err != nil {
		return err
	}
	sides := make([]*lessonSide, 2)
	for i, alg := range []string{"nc", wire.SharedNoiseAlgorithm} {
		s, err := startLessonSide(ctx, o, pol, n, alg, extra, stderr)
		defer s.stop()
		if err != nil {
			return err
		}
		sides[i] = s
	}
	fmt.Fprintf(stdout, "lesson: %d devices in each of nc and shared; %d blocks of %d rounds each, alternating (round gap %s, deadline %s)\n",
		n, blocks, k, lessonGap, lessonDeadline)
	for b := range blocks {
		order := sides
		if b%2 == 1 {
			order = []*lessonSide{sides[1], sides[0]}
		}
		for _, s := range order {
			if err := s.block(ctx, k); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "block %d, %s: %d rounds committed in all, %.1f s\n", b+1, s.alg, s.rounds, s.wall.Seconds())
		}
	}
	per := make([]float64, 2)
	lats := make([]float64, 2)
	for i, s := range sides {
		if s.rounds == 0 {
			return errors.New("lesson: " + s.alg + ": no round committed in a block")
		}
		lat, in, out, err := s.lessonRecords(ctx, n)
		if err != nil {
			return err
		}
		var sum float64
		for _, l := range lat {
			sum += l
		}
		per[i], lats[i] = s.wall.Seconds()/float64(s.rounds), sum/float64(len(lat))
		fmt.Fprintf(stdout, "%s: %d rounds in %.1f s (%.3f s a round, the gap included); round start to commit: mean %.0f ms, p50 %.0f ms, p99 %.0f ms; coordinator %.3f CPU s a round; %s B in and %s B out a device and round\n",
			s.alg, s.rounds, s.wall.Seconds(), per[i], lats[i], loadtest.Quantile(lat, 0.5), loadtest.Quantile(lat, 0.99),
			s.cpu/float64(s.rounds), strconv.FormatFloat(in, 'f', 0, 64), strconv.FormatFloat(out, 'f', 0, 64))
	}
	fmt.Fprintf(stdout, "lesson: shared/nc wall = %.3f (a round with its gap; start to commit alone: %.2f)\n", per[1]/per[0], lats[1]/lats[0])
	return nil
}
