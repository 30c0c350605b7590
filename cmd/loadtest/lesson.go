package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"browserfl/device"
	"browserfl/internal/loadtest"
	"browserfl/shared/wire"
)

// The lesson mode (-lesson): the same lesson (-n devices, all of them
// every round, the demo's session, b = -b, the coordinator's round gap, a
// lesson's deadline) run by nc and by shared noise, two coordinators each
// with its own devices in this process, in alternating blocks of rounds
// (loadtest.RunLesson); the last line is "lesson: shared/nc wall = R".

const (
	lessonGap      = "1s" // the coordinator's default pause between rounds
	lessonDeadline = "8s" // a lesson's round deadline (lesson.Deadline)
)

// lessonSide is one mode's coordinator and devices.
type lessonSide struct {
	*loadtest.LessonSide
	stop func()
}

// startLessonSide starts alg's coordinator and its n devices, paused.
// Stop it with its stop (also on error).
func startLessonSide(ctx context.Context, o options, pol device.Policy, n int, alg, extra string, stderr io.Writer) (*lessonSide, error) {
	o.algorithm = alg
	c, err := loadtest.StartPaused(ctx, o.coordinator, teacherSecret, func(addr, dir string) []string {
		args := append(coordinatorArgs(o, n, addr, dir, ""), "-round-gap", lessonGap, "-deadline", lessonDeadline)
		return append(args, strings.Fields(extra)...)
	}, stderr)
	s := &lessonSide{LessonSide: &loadtest.LessonSide{Name: alg, Secret: teacherSecret, Base: c.Base, PID: c.PID}, stop: c.Stop}
	if err != nil {
		return s, fmt.Errorf("%s: %w", alg, err)
	}
	var sess wire.SessionParams
	if err := loadtest.GetJSON(c.Ctx, s.Base+"/api/session?code=LOADTEST", &sess); err != nil {
		return s, fmt.Errorf("%s: %w", alg, err)
	}
	fl, err := startFleet(c.Ctx, o, pol, sess, 0, n, direct("ws://"+c.Addr+"/ws"))
	s.stop = func() { fl.stop(); c.Stop() }
	if err != nil {
		return s, fmt.Errorf("%s: %w", alg, err)
	}
	if err := fl.waitConnected(c.Ctx, n); err != nil {
		return s, fmt.Errorf("%s: %w", alg, err)
	}
	return s, nil
}

// runLesson runs the lesson mode.
func runLesson(ctx context.Context, o options, pol device.Policy, extra string, stdout, stderr io.Writer) error {
	n, blocks := o.n, max(1, o.blocks)
	k := max(1, o.T/blocks)
	// Each block may leave one more round to finish after its pause.
	o.T, o.m = k*blocks+blocks+1, n
	if err := o.check(n); err != nil {
		return err
	}
	nc, err := startLessonSide(ctx, o, pol, n, "nc", extra, stderr)
	defer nc.stop()
	if err != nil {
		return err
	}
	shared, err := startLessonSide(ctx, o, pol, n, wire.SharedNoiseAlgorithm, extra, stderr)
	defer shared.stop()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "lesson: %d devices in each of nc and shared; %d blocks of %d rounds each, alternating (round gap %s, deadline %s)\n",
		n, blocks, k, lessonGap, lessonDeadline)
	_, err = loadtest.RunLesson(ctx, nc.LessonSide, shared.LessonSide, n, blocks, k, stdout)
	return err
}
