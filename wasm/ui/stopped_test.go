package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"browserfl/device"
	"browserfl/shared/plan"
)

// The runtime's last word says why it stopped, ends the lobby notice,
// and never moves the student off the screen they chose since ("I'm
// done" shows the thank-you screen, "Leave and delete" the left screen).
func TestStopped(t *testing.T) {
	wrap := func(errs ...error) error { return fmt.Errorf("x: %w", errors.Join(errs...)) }
	for _, tc := range []struct {
		err    error
		status string
		usedUp bool
	}{
		{nil, "The session has finished", false},
		{wrap(device.ErrRefused, device.ErrDataUsedUp), "", true},
		{wrap(device.ErrRefused, device.ErrBudgetSpent), "reached your privacy limit", false},
		{wrap(device.ErrRefused, device.ErrStartRefused, plan.ErrOverBudget), "more of your privacy than your limit allows", false},
		{wrap(device.ErrRefused, device.ErrNicknameTaken), "too close to someone else's", false},
		{wrap(device.ErrRefused, device.ErrRemoved), "teacher removed this device", false},
		{device.ErrLeft, "You stopped helping", false},
		{context.Canceled, "You stopped helping", false},
		{wrap(device.ErrRefused), "refused to go on", false},
		{errors.New("boom"), "because of an error", false},
	} {
		for _, screen := range []Screen{ScreenTrain, ScreenDone, ScreenLeft, ScreenData} {
			s := State{Screen: screen, Train: Training{Lobby: true, Status: "Connected."}}
			s.Stopped(tc.err)
			if s.Screen != screen {
				t.Errorf("%v on screen %d: moved to screen %d", tc.err, screen, s.Screen)
			}
			if !s.Train.Done || s.Train.Lobby || s.Train.UsedUp != tc.usedUp {
				t.Errorf("%v: %+v", tc.err, s.Train)
			}
			if tc.status == "" && s.Train.Status != "" || !strings.Contains(s.Train.Status, tc.status) {
				t.Errorf("%v: status %q, want %q", tc.err, s.Train.Status, tc.status)
			}
			if (tc.err == nil) != (s.Train.Conn == "finished") {
				t.Errorf("%v: connection %q", tc.err, s.Train.Conn)
			}
		}
	}
}

// A finished session's last word counts the rounds that hold the page's
// updates, in its session's words.
func TestStoppedCountsIncluded(t *testing.T) {
	s := State{Screen: ScreenTrain, Train: Training{Included: 2}}
	s.Session.Shared, s.Session.Protection = true, plan.ProtectionDevice
	s.Stopped(nil)
	if want := FinishedStatus(plan.ProtectionDevice, true, 2); s.Train.Status != want {
		t.Errorf("status %q, want %q", s.Train.Status, want)
	}
}
