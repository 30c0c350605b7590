package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"browserfl/device"
)

// logEvent logs one event of the runtime: a lost connection as a warning
// that says the device tries again, the others with their round (when
// they have one) and the rounds included so far.
func logEvent(log *slog.Logger, e device.Event) {
	if e.Err != nil {
		log.Warn("connection lost; trying again", "err", strings.TrimPrefix(e.Err.Error(), "device: "))
		return
	}
	args := []any{"included_so_far", e.Participations}
	if e.T > 0 {
		args = append([]any{"round", e.T}, args...)
	}
	if e.Kind == device.EventCohort {
		args = append(args, "cohort", e.Cohort)
	}
	log.Info(string(e.Kind), args...)
}

// logLeft says why the device stopped taking part.
func logLeft(log *slog.Logger, rt *device.Runtime, err error) {
	st := rt.State()
	args := []any{"included", st.Included, "excluded", st.Excluded, "samples_used", st.Cursor, "pending_round", st.Pending}
	switch {
	case err == nil:
		log.Info("left the session: it has finished", args...)
	case errors.Is(err, device.ErrDataUsedUp) && st.Cursor == 0:
		log.Warn("left the session: too few samples for one round", append(args, "detail", err.Error())...)
	case errors.Is(err, device.ErrDataUsedUp):
		log.Info("left the session: the local data is used up (each sample is used once)", append(args, "detail", err.Error())...)
	case errors.Is(err, device.ErrBudgetSpent):
		log.Info("left the session: the privacy budget is spent", append(args, "detail", err.Error())...)
	case errors.Is(err, device.ErrLeft):
		log.Info("left the session: stopped by its owner", args...)
	case errors.Is(err, context.Canceled):
		log.Warn("stopped without leaving (second signal)", args...)
	default:
		log.Error("stopped", append(args, "err", err)...)
	}
}
