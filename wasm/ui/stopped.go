package ui

import (
	"context"
	"errors"

	"browserfl/device"
	"browserfl/shared/plan"
)

// Stopped shows why the device runtime stopped (err is what
// device.Runtime.Run returned; nil: the session finished). It leaves the
// screen as it is: the training screen showed when the runtime loaded,
// and the student may have moved on since ("I'm done", "Leave and delete
// my pictures").
func (s *State) Stopped(err error) {
	s.Train.Lobby = false // no longer waiting for the teacher
	s.Train.Done = true
	s.Train.Cohort = 0 // no round is under way: no classmates share noise now
	s.Train.Conn = "stopped"
	if err != nil {
		s.Train.Detail = err.Error()
	}
	switch {
	case err == nil:
		s.Train.Conn = "finished"
		s.Train.Status = FinishedStatus(s.Session.Protection, s.Session.Shared, s.Train.Included)
	case errors.Is(err, device.ErrDataUsedUp):
		s.Train.UsedUp = true
		s.Train.Status = "" // the notice at the top says it
	case errors.Is(err, device.ErrBudgetSpent):
		s.Train.Status = "You have reached your privacy limit, so this page has stopped helping. Thank you!"
	case errors.Is(err, device.ErrStartRefused) && errors.Is(err, plan.ErrOverBudget):
		// The teacher's Start brought final settings this page's
		// owner did not allow.
		s.Train.Status = "Your teacher started the session with settings that could use more of your privacy than your limit allows. " +
			"So this page did not join, and nothing was learned from your pictures. You can tell your teacher, or raise your limit and reload the page."
	case errors.Is(err, device.ErrNicknameTaken):
		s.Train.Status = "That name is too close to someone else's. Try another: reload the page and pick a new name."
	case errors.Is(err, device.ErrRemoved):
		s.Train.Status = "The teacher removed this device from the session."
	case errors.Is(err, device.ErrLeft), errors.Is(err, context.Canceled):
		s.Train.Status = "You stopped helping."
	case errors.Is(err, device.ErrRefused):
		s.Train.Status = "This page refused to go on, to protect your privacy. See Details."
	default:
		s.Train.Status = "Stopped because of an error. See Details."
	}
}
