package api

import (
	"fmt"
	"strings"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
	"browserfl/shared/dataset"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
)

// This file holds what the projector says in words: the task's title,
// the plan warnings in plain words and how long the lesson has run
// (from the teacher's Start, not from the lobby).

// Notices returns PlanWarnings for the session now (never nil).
func Notices(c Session, shards *shards.Set) []view.Notice {
	out := []view.Notice{}
	for _, w := range PlanWarnings(planInput(c, shards)) {
		out = append(out, view.Notice{Kind: w.Kind, Words: w.Words, Text: w.Text})
	}
	return out
}

// TaskCollects says in words what a row task's students will type
// (task.Definition.Describe, what the page shows before consent); empty
// for a picture session.
func TaskCollects(sess wire.SessionParams) string {
	if d, err := plan.SessionTask(sess); err == nil && d != nil {
		return d.Describe()
	}
	return ""
}

// TaskTitle names what the class learns, in words: "Learning to
// recognise clothing" for the Fashion-MNIST labels, "... handwritten
// digits" for the digits; other labels are listed (the first few), and
// without labels it says pictures. A row task's title is its own
// ("Guess a diamond's price").
func TaskTitle(sess wire.SessionParams) string {
	if d, err := plan.SessionTask(sess); err == nil && d != nil {
		return d.Title
	}
	labels := sess.LabelNames()
	if t, ok := dataset.TaskOfLabels(labels); ok && t.Title != "" {
		return "Learning to recognise " + t.Title
	}
	if len(labels) == 0 {
		return "Learning to recognise pictures"
	}
	const shown = 4
	list := strings.Join(labels[:min(shown, len(labels))], ", ")
	if len(labels) > shown {
		list += fmt.Sprintf(" and %d more", len(labels)-shown)
	}
	return "Learning to tell apart " + list
}

// lessonTimes returns when the lesson started (the teacher's Start, kept
// in the store's lifecycle; for a session without a lobby, the first
// round's start) and how long it has run: until now, or until it ended
// (the lifecycle's end; a finished session without one, its last
// commit). Before the start it returns the zero time and 0.
func lessonTimes(st *store.Store, finished bool, now time.Time) (time.Time, float64, error) {
	life, err := coordinator.ReadLifecycle(st)
	if err != nil {
		return time.Time{}, 0, err
	}
	start := life.Started
	if start.IsZero() {
		recs, err := st.Rounds(0, 1)
		if err != nil {
			return time.Time{}, 0, err
		}
		if len(recs) == 0 {
			return time.Time{}, 0, nil
		}
		start = recs[0].Started
	}
	end := now
	switch {
	case !life.Ended.IsZero():
		end = life.Ended
	case finished:
		committed, _, err := st.State()
		if err != nil {
			return time.Time{}, 0, err
		}
		if recs, err := st.Rounds(max(0, committed-1), 1); err == nil && len(recs) == 1 {
			end = recs[0].Committed
		}
	}
	return start.UTC(), max(0, end.Sub(start).Seconds()), nil
}

// fillProjector adds the title, the notices and the lesson's times to
// s, a status of the current session.
func fillProjector(c Session, s *view.Status, shards *shards.Set) {
	s.Title, s.Collects = TaskTitle(s.Session), TaskCollects(s.Session)
	s.Notices = Notices(c, shards)
	start, running, err := lessonTimes(c.Store(), s.Finished, time.Now())
	if err != nil {
		c.Front().Log.Warn("dashboard lesson times", "err", err)
		return
	}
	s.StartedAt, s.RunningSec = start, running
}

// fillArchivedProjector is fillProjector for a finished session read
// from its store (no notices: it has ended).
func fillArchivedProjector(s *view.Status, st *store.Store) error {
	s.Title, s.Collects = TaskTitle(s.Session), TaskCollects(s.Session)
	s.Notices = []view.Notice{}
	start, running, err := lessonTimes(st, true, time.Now())
	if err != nil {
		return err
	}
	s.StartedAt, s.RunningSec = start, running
	return nil
}
