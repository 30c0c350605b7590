package coordinator

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fakeGate is a gate on a clock the test moves.
func fakeGate(cfg Gate) (*gateState, *time.Time) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := newGate(cfg, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g.now = func() time.Time { return now }
	return g, &now
}

func TestBucket(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		rate  float64
		burst int
		at    []time.Duration // attempt times after t0
		want  string          // one letter per attempt: y allowed, n refused
	}{
		{"burst then refuse", 1, 3, []time.Duration{0, 0, 0, 0, 0}, "yyynn"},
		{"refill one per second", 1, 2, []time.Duration{0, 0, 0, time.Second, time.Second, 3 * time.Second}, "yynyny"},
		{"refill capped at burst", 10, 2, []time.Duration{0, 0, time.Hour, time.Hour, time.Hour}, "yyyyn"},
		{"half rate", 0.5, 1, []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}, "ynyn"},
		{"unlimited", -1, 0, []time.Duration{0, 0, 0, 0}, "yyyy"},
		{"clock going back refills nothing", 1, 1, []time.Duration{time.Second, 0}, "yn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bucket
			got := ""
			for _, d := range tc.at {
				if b.take(t0.Add(d), tc.rate, tc.burst) {
					got += "y"
				} else {
					got += "n"
				}
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestJoinBackoff(t *testing.T) {
	type step struct {
		after time.Duration // clock advance before the attempt
		code  string
		want  joinVerdict
	}
	wrong := func(after time.Duration) step { return step{after, "guess", joinWrong} }
	throttled := func(after time.Duration) step { return step{after, "guess", joinThrottled} }
	tests := []struct {
		name  string
		steps []step
	}{
		{"free failures, then doubling pauses", []step{
			wrong(0), wrong(0), wrong(0), // 3 free failures
			wrong(0),     // 4th: 1 s pause
			throttled(0), // refused unchecked
			{500 * time.Millisecond, "secret", joinThrottled}, // even the right code
			wrong(600 * time.Millisecond),                     // pause over: 5th failure, 2 s pause
			throttled(1900 * time.Millisecond),
			wrong(200 * time.Millisecond), // 6th: 4 s
			throttled(3 * time.Second),
			{1100 * time.Millisecond, "secret", joinOK},
			// A success clears the record.
			wrong(0), wrong(0), wrong(0),
		}},
		{"pause capped", []step{
			wrong(0), wrong(0), wrong(0), wrong(0), wrong(2 * time.Second), wrong(3 * time.Second),
			wrong(5 * time.Second), wrong(9 * time.Second), // 5th extra failure: min(16 s, cap 10 s)
			throttled(9 * time.Second),
			wrong(2 * time.Second),
		}},
		{"failures forgotten", []step{
			wrong(0), wrong(0), wrong(0), wrong(0), wrong(time.Hour), wrong(0), wrong(0),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, now := fakeGate(Gate{JoinFreeFailures: 3, JoinBackoff: time.Second, JoinBackoffMax: 10 * time.Second,
				JoinForget: time.Minute, JoinGlobalRate: -1})
			for i, s := range tc.steps {
				*now = now.Add(s.after)
				if got, _ := g.checkCode("192.0.2.1", s.code, "secret"); got != s.want {
					t.Fatalf("step %d (%+v): got %v, want %v", i, s, got, s.want)
				}
			}
			// Another address is not affected.
			if got, _ := g.checkCode("192.0.2.2", "secret", "secret"); got != joinOK {
				t.Errorf("another address: %v", got)
			}
		})
	}
}

func TestJoinGlobalBudget(t *testing.T) {
	g, now := fakeGate(Gate{JoinFreeFailures: 100, JoinGlobalRate: 1, JoinGlobalBurst: 5})
	// Five addresses spend the global budget of wrong codes.
	for i := range 5 {
		if v, _ := g.checkCode(fmt.Sprintf("198.51.100.%d", i), "guess", "secret"); v != joinWrong {
			t.Fatalf("address %d: %v", i, v)
		}
	}
	// An address with a failure is now refused unchecked; a clean one is
	// still checked (and may join).
	if v, _ := g.checkCode("198.51.100.0", "secret", "secret"); v != joinThrottled {
		t.Errorf("address with a failure while the budget is spent: %v", v)
	}
	if v, _ := g.checkCode("203.0.113.9", "secret", "secret"); v != joinOK {
		t.Errorf("clean address while the budget is spent: %v", v)
	}
	*now = now.Add(2 * time.Second)
	if v, _ := g.checkCode("198.51.100.0", "secret", "secret"); v != joinOK {
		t.Errorf("after the budget refilled: %v", v)
	}
}

func TestRegisterRate(t *testing.T) {
	g, now := fakeGate(Gate{RegisterRate: 1, RegisterBurst: 3, RegisterGlobalRate: 2, RegisterGlobalBurst: 5})
	got := ""
	try := func(addr string) {
		if g.register(addr) {
			got += "y"
		} else {
			got += "n"
		}
	}
	for range 4 {
		try("a") // per-address burst 3
	}
	for range 3 {
		try("b") // global burst 5: two left for b
	}
	*now = now.Add(time.Second) // +2 global, +1 per address
	try("b")
	try("c")
	try("c")
	if want := "yyyn" + "yyn" + "y" + "yn"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestAddressTableBounded(t *testing.T) {
	g, now := fakeGate(Gate{MaxAddresses: 100, JoinGlobalRate: -1})
	for i := range 1000 {
		*now = now.Add(time.Millisecond)
		g.checkCode(fmt.Sprintf("10.0.%d.%d", i/256, i%256), "guess", "secret")
		if len(g.addrs) > 100 {
			t.Fatalf("%d addresses kept after %d", len(g.addrs), i+1)
		}
	}
	// The most recent address is still known (its failure counted).
	if s := g.addrs["10.0.3.231"]; s == nil || s.failures != 1 {
		t.Errorf("latest address forgotten: %+v", s)
	}
}

func TestClientAddr(t *testing.T) {
	tests := []struct {
		remote, xff string
		trust       bool
		want        string
	}{
		{"192.0.2.7:5555", "", false, "192.0.2.7"},
		{"192.0.2.7:5555", "203.0.113.1", false, "192.0.2.7"},
		{"192.0.2.7:5555", "10.9.9.9, 203.0.113.1", true, "203.0.113.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "", false, "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "", false, "2001:db8:1:2::/64"},
	}
	for _, tc := range tests {
		g, _ := fakeGate(Gate{TrustProxy: tc.trust})
		r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := g.clientAddr(r); got != tc.want {
			t.Errorf("clientAddr(%s, xff %q, trust %v) = %s, want %s", tc.remote, tc.xff, tc.trust, got, tc.want)
		}
	}
}

func TestJoinFailuresLogSummary(t *testing.T) {
	var buf strings.Builder
	g, now := fakeGate(Gate{JoinGlobalRate: -1})
	g.log = slog.New(slog.NewTextHandler(&buf, nil))
	for i := range 1000 {
		*now = now.Add(5 * time.Millisecond) // 1000 attempts in 5 s
		g.checkCode(fmt.Sprintf("192.0.2.%d", i%3), "guess", "secret")
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Errorf("%d log lines for 1000 refused join codes in 5 s, want 1:\n%s", n, buf.String())
	}
	*now = now.Add(11 * time.Second)
	g.checkCode("192.0.2.9", "guess", "secret")
	if !strings.Contains(buf.String(), "refused_unchecked=") || strings.Count(buf.String(), "\n") != 2 {
		t.Errorf("no summary after 10 s:\n%s", buf.String())
	}
}
