package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"browserfl/device"
)

// TestLogEvent checks the words of the device's log lines: a lost
// connection says the device tries again (and no round 0), a round's
// event names its round, and no message repeats the package's name.
func TestLogEvent(t *testing.T) {
	cases := []struct {
		name string
		e    device.Event
		want []string
		not  []string
	}{
		{"lost", device.Event{Kind: device.EventError, Err: errors.New("device: read: EOF")},
			[]string{`level=WARN`, `msg="connection lost; trying again"`, `err="read: EOF"`}, []string{"round=", "device: "}},
		{"connected", device.Event{Kind: device.EventConnected, Participations: 3},
			[]string{`msg=connected`, `included_so_far=3`}, []string{"round="}},
		{"included", device.Event{Kind: device.EventIncluded, T: 7, Participations: 4},
			[]string{`msg=included`, `round=7`, `included_so_far=4`}, nil},
		{"cohort", device.Event{Kind: device.EventCohort, T: 2, Cohort: 9},
			[]string{`msg=cohort`, `round=2`, `cohort=9`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			logEvent(slog.New(slog.NewTextHandler(&buf, nil)), c.e)
			line := buf.String()
			for _, w := range c.want {
				if !strings.Contains(line, w) {
					t.Errorf("log line %q lacks %q", line, w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(line, w) {
					t.Errorf("log line %q has %q", line, w)
				}
			}
		})
	}
}
