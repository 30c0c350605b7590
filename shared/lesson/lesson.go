// Package lesson sizes a classroom session from the class that came: the
// "one lesson" preset turns the number of devices in a lobby and the
// teacher's session template into final session parameters that finish
// within one lesson while keeping the template's privacy target.
package lesson

import (
	"errors"
	"fmt"
	"time"

	"browserfl/shared/optim/algo"
	"browserfl/shared/wire"
)

// OneLessonName is the preset's name.
const OneLessonName = "one-lesson"

// The assumptions of the "one lesson" preset. A round of the demo model
// (logistic regression on 28x28 images, batch 32) costs a page a few
// milliseconds of computation and two frames of about 31 KiB each way;
// measured with native devices on one machine a round is well under
// 100 ms plus the round gap (docs/coordinator.md, "Sizing"). A classroom
// of phones on one Wi-Fi is far slower and uneven: the preset assumes
// ExpectedRound per round (the coordinator's 1 s round gap included) and
// gives a straggler Deadline before the round closes without it.
const (
	// Lesson is the longest the session may take at ExpectedRound.
	Lesson = 10 * time.Minute
	// ExpectedRound is the assumed wall time of one round.
	ExpectedRound = 3 * time.Second
	// Deadline is the round deadline: a round never waits longer for a
	// device that does not answer.
	Deadline = 8 * time.Second
	// MaxRounds caps T (a longer lesson would not buy accuracy: the
	// per-round noise grows with T at a fixed privacy target).
	MaxRounds = 200
	// FullCohortUpTo is the largest class whose every device takes part
	// in every round; larger classes sample half of the class per round.
	FullCohortUpTo = 16
)

// Sizing explains what OneLesson chose.
type Sizing struct {
	Preset   string        `json:"preset"`
	Devices  int           `json:"devices"`
	M        int           `json:"M"`
	Cohort   int           `json:"cohort"`
	Rounds   int           `json:"rounds"`
	Deadline time.Duration `json:"deadline"`
	// Expected is the session's duration at ExpectedRound per round;
	// Worst is its duration if every round ran to its deadline.
	Expected time.Duration `json:"expected"`
	Worst    time.Duration `json:"worst"`
}

// ErrEmptyLobby is returned by OneLesson for a class of no devices.
var ErrEmptyLobby = errors.New("lesson: nobody is in the lobby")

// OneLesson returns the final parameters for a class of n devices from
// the teacher's template: M = n; every device in every round up to
// FullCohortUpTo devices, then ceil(n/2) per round; T rounds so that the
// session takes at most Lesson at ExpectedRound (and at most MaxRounds
// and the template's own rounds); the round deadline Deadline (or the
// template's, if shorter). The privacy target (Rho, or Epsilon and
// Delta) and everything else are the template's, so each device's worst
// case is computed from the same target (plan.SessionFigures) and stays
// within the ledger cap the template announced.
func OneLesson(tmpl wire.SessionParams, n int) (wire.SessionParams, Sizing, error) {
	if n <= 0 {
		return wire.SessionParams{}, Sizing{}, ErrEmptyLobby
	}
	s := tmpl
	s.M = n
	s.Cohort = n
	if n > FullCohortUpTo {
		s.Cohort = (n + 1) / 2
	}
	rounds := int(Lesson / ExpectedRound)
	rounds = min(rounds, MaxRounds)
	if tmpl.Rounds > 0 {
		rounds = min(rounds, tmpl.Rounds)
	}
	s.Rounds = rounds
	deadline := Deadline
	if tmpl.DeadlineMillis > 0 {
		deadline = min(deadline, time.Duration(tmpl.DeadlineMillis)*time.Millisecond)
	}
	s.DeadlineMillis = int(deadline.Milliseconds())
	if err := wire.ValidateSession(s); err != nil {
		return wire.SessionParams{}, Sizing{}, fmt.Errorf("lesson: %w", err)
	}
	if err := algo.Validate(s); err != nil {
		return wire.SessionParams{}, Sizing{}, fmt.Errorf("lesson: %w", err)
	}
	z := Sizing{Preset: OneLessonName, Devices: n, M: s.M, Cohort: s.Cohort, Rounds: s.Rounds, Deadline: deadline,
		Expected: time.Duration(s.Rounds) * ExpectedRound, Worst: time.Duration(s.Rounds) * (deadline + time.Second)}
	return s, z, nil
}
