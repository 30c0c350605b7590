package coordinator

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
