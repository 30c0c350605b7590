package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// LessonSide is one way of running a lesson in a comparison of two
// (cmd/loadtest -lesson, and the pages' lesson in e2e): its coordinator at
// Base, process PID, paused between its blocks of rounds, and what its
// blocks measured. Committed is the last round committed before the first
// block (0 for a session paused before its first round); the blocks keep
// it up to date.
type LessonSide struct {
	Name, Base, Secret string
	PID                int
	Committed          int
	wall               time.Duration // the blocks', summed
	rounds             int           // committed within the blocks
	cpu                float64       // the coordinator's CPU seconds within the blocks
}

// block resumes the side's session until k more rounds have committed,
// adds the time, rounds and CPU to its sums, pauses it again and waits
// for the round then open (not counted).
func (s *LessonSide) block(ctx context.Context, k int) error {
	cpu0, err := ProcCPU(s.PID)
	if err != nil {
		return err
	}
	from := s.Committed
	start := time.Now()
	if err := Teacher(ctx, s.Base, s.Secret, "resume"); err != nil {
		return err
	}
	if err := WaitRounds(ctx, s.Base, from+k, 20*time.Millisecond); err != nil {
		return err
	}
	s.wall += time.Since(start)
	cpu1, err := ProcCPU(s.PID)
	if err != nil {
		return err
	}
	s.cpu += cpu1 - cpu0
	last, err := LastCommitted(ctx, s.Base, from+k-1)
	if err != nil {
		return err
	}
	s.rounds += last - from
	if err := Teacher(ctx, s.Base, s.Secret, "pause"); err != nil {
		return err
	}
	s.Committed, err = Settle(ctx, s.Base, last)
	return err
}

// report prints the side's figures and returns its wall time a round
// and its mean round latency (ms); n devices take part in every round.
func (s *LessonSide) report(ctx context.Context, n int, w io.Writer) (perRound, latency float64, err error) {
	recs, err := Rounds(ctx, s.Base, 0)
	if err != nil {
		return 0, 0, err
	}
	if len(recs) == 0 || s.rounds == 0 {
		return 0, 0, errors.New("no round committed")
	}
	var lat []float64
	var sum, in, out float64
	for _, r := range recs {
		lat = append(lat, float64(r.LatencyMs))
		sum += float64(r.LatencyMs)
		in += float64(r.BytesIn)
		out += float64(r.BytesOut)
	}
	slices.Sort(lat)
	k := float64(len(recs) * n)
	perRound, latency = s.wall.Seconds()/float64(s.rounds), sum/float64(len(lat))
	fmt.Fprintf(w, "%s: %d rounds in %.1f s (%.3f s a round, the gap included); round start to commit: mean %.0f ms, p50 %.0f ms, p99 %.0f ms; coordinator %.3f CPU s a round; %.0f B in and %.0f B out a device and round\n",
		s.Name, s.rounds, s.wall.Seconds(), perRound, latency, Quantile(lat, 0.5), Quantile(lat, 0.99), s.cpu/float64(s.rounds), in/k, out/k)
	return perRound, latency, nil
}

// RunLesson runs blocks of k rounds of each side in turn, alternating
// which goes first (a, b, b, a, ...), so that load that comes and goes
// falls on both alike, and prints each block's progress, each side's
// figures and, last, "lesson: b/a wall = R", the ratio of their wall
// times a round, which it returns; n devices take part in every round.
func RunLesson(ctx context.Context, a, b *LessonSide, n, blocks, k int, w io.Writer) (float64, error) {
	for i := range blocks {
		order := []*LessonSide{a, b}
		if i%2 == 1 {
			order = []*LessonSide{b, a}
		}
		for _, s := range order {
			if err := s.block(ctx, k); err != nil {
				return 0, fmt.Errorf("%s: %w", s.Name, err)
			}
			fmt.Fprintf(w, "block %d, %s: %d rounds committed in all, %.1f s\n", i+1, s.Name, s.rounds, s.wall.Seconds())
		}
	}
	perA, latA, err := a.report(ctx, n, w)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", a.Name, err)
	}
	perB, latB, err := b.report(ctx, n, w)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", b.Name, err)
	}
	fmt.Fprintf(w, "lesson: %s/%s wall = %.3f (a round with its gap; start to commit alone: %.2f)\n", b.Name, a.Name, perB/perA, latB/latA)
	return perB / perA, nil
}
