package wsconn

import (
	"testing"
	"time"
)

// TestPingDelay checks the heartbeat's alignment: the next ping is due
// at least the interval after now, on a whole grid step (so idle
// connections' pings go out together), and less than a grid step later
// than the interval asks; intervals shorter than a step are kept as they
// are (tests use them).
func TestPingDelay(t *testing.T) {
	base := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		now  time.Time
		iv   time.Duration
		want time.Duration
	}{
		{"on the grid", base, 10 * time.Second, 10 * time.Second},
		{"just after a step", base.Add(time.Nanosecond), 10 * time.Second, 11*time.Second - time.Nanosecond},
		{"mid step", base.Add(300 * time.Millisecond), 10 * time.Second, 10*time.Second + 700*time.Millisecond},
		{"just before a step", base.Add(999 * time.Millisecond), 10 * time.Second, 10*time.Second + time.Millisecond},
		{"interval off the grid", base.Add(200 * time.Millisecond), 2500 * time.Millisecond, 2800 * time.Millisecond},
		{"one step", base.Add(400 * time.Millisecond), time.Second, 1600 * time.Millisecond},
		{"shorter than a step", base.Add(400 * time.Millisecond), 50 * time.Millisecond, 50 * time.Millisecond},
	}
	for _, tc := range cases {
		got := pingDelay(tc.now, tc.iv)
		if got != tc.want {
			t.Errorf("%s: pingDelay = %v, want %v", tc.name, got, tc.want)
		}
		if tc.iv >= pingGrid {
			if due := tc.now.Add(got); !due.Equal(due.Truncate(pingGrid)) || got < tc.iv || got >= tc.iv+pingGrid {
				t.Errorf("%s: due %v: off the grid or outside [iv, iv + grid)", tc.name, due)
			}
		}
	}
}

// TestSkipPing: the heartbeat pings a device that has not sent an update
// for a whole interval (or never has), and otherwise waits until an
// interval after that update, on the grid, and looks again.
func TestSkipPing(t *testing.T) {
	base := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	iv := 10 * time.Second
	cases := []struct {
		name      string
		now, last time.Time
		iv        time.Duration
		want      time.Duration
	}{
		{"never sent an update", base, time.Time{}, iv, 0},
		{"update an interval ago", base, base.Add(-iv), iv, 0},
		{"update long ago", base, base.Add(-time.Hour), iv, 0},
		{"update just now", base, base, iv, iv},
		{"update 3.5 s ago", base, base.Add(-3500 * time.Millisecond), iv, 7 * time.Second},
		{"update 9.999 s ago: up to the grid", base, base.Add(-9999 * time.Millisecond), iv, time.Second},
		{"pings off", base, base, -1, 0},
		{"interval shorter than the grid", base, base.Add(-20 * time.Millisecond), 50 * time.Millisecond, 30 * time.Millisecond},
	}
	for _, tc := range cases {
		got := skipPing(tc.now, tc.last, tc.iv)
		if got != tc.want {
			t.Errorf("%s: skipPing = %v, want %v", tc.name, got, tc.want)
		}
		if got > 0 {
			// The look again is at least an interval after the update:
			// no device that stopped after it is pinged earlier or later
			// than before this rule.
			if due := tc.now.Add(got); due.Sub(tc.last) < tc.iv || due.Sub(tc.last) >= tc.iv+pingGrid {
				t.Errorf("%s: next look %v after the update, want in [iv, iv + grid)", tc.name, due.Sub(tc.last))
			}
		}
	}
}
