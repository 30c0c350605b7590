package gate

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// fakeGate is a gate on a clock the test moves.
func fakeGate(cfg Config) (*State, *time.Time) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := New(cfg, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
			b := newBucket(tc.rate, tc.burst)
			got := ""
			for _, d := range tc.at {
				if take(b, t0.Add(d)) {
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

// TestBucketAvail: what the gate reads from a bucket without taking
// from it (the join budget, the registration check, the pruning).
func TestBucketAvail(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		rate     float64
		burst    int
		takes    int           // tokens taken at t0
		at       time.Duration // read this long after t0
		want     float64
		wantFull bool
	}{
		{"new bucket is full", 1, 3, 0, 0, 3, true},
		{"after two takes", 1, 3, 2, 0, 1, false},
		{"refilled half", 2, 3, 3, 500 * time.Millisecond, 1, false},
		{"refilled to the burst", 1, 3, 3, time.Hour, 3, true},
		{"unlimited", -1, 0, 5, 0, math.Inf(1), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBucket(tc.rate, tc.burst)
			for range tc.takes {
				if !take(b, t0) {
					t.Fatal("a take within the burst was refused")
				}
			}
			now := t0.Add(tc.at)
			if got := avail(b, now); got != tc.want {
				t.Errorf("avail = %v, want %v", got, tc.want)
			}
			if got := full(b, now); got != tc.wantFull {
				t.Errorf("full = %v, want %v", got, tc.wantFull)
			}
		})
	}
}

func TestJoinBackoff(t *testing.T) {
	type step struct {
		after time.Duration // clock advance before the attempt
		code  string
		want  Verdict
	}
	wrong := func(after time.Duration) step { return step{after, "guess", Wrong} }
	throttled := func(after time.Duration) step { return step{after, "guess", Throttled} }
	tests := []struct {
		name  string
		steps []step
	}{
		{"free failures, then doubling pauses", []step{
			wrong(0), wrong(0), wrong(0), // 3 free failures
			wrong(0),     // 4th: 1 s pause
			throttled(0), // refused unchecked
			{500 * time.Millisecond, "secret", Throttled}, // even the right code
			wrong(600 * time.Millisecond),                 // pause over: 5th failure, 2 s pause
			throttled(1900 * time.Millisecond),
			wrong(200 * time.Millisecond), // 6th: 4 s
			throttled(3 * time.Second),
			{1100 * time.Millisecond, "secret", OK},
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
			g, now := fakeGate(Config{JoinFreeFailures: 3, JoinBackoff: time.Second, JoinBackoffMax: 10 * time.Second,
				JoinForget: time.Minute, JoinGlobalRate: -1})
			for i, s := range tc.steps {
				*now = now.Add(s.after)
				if got, _ := g.CheckCode("192.0.2.1", s.code, "secret"); got != s.want {
					t.Fatalf("step %d (%+v): got %v, want %v", i, s, got, s.want)
				}
			}
			// Another address is not affected.
			if got, _ := g.CheckCode("192.0.2.2", "secret", "secret"); got != OK {
				t.Errorf("another address: %v", got)
			}
		})
	}
}

func TestJoinGlobalBudget(t *testing.T) {
	g, now := fakeGate(Config{JoinFreeFailures: 100, JoinGlobalRate: 1, JoinGlobalBurst: 5})
	// Five addresses spend the global budget of wrong codes.
	for i := range 5 {
		if v, _ := g.CheckCode(fmt.Sprintf("198.51.100.%d", i), "guess", "secret"); v != Wrong {
			t.Fatalf("address %d: %v", i, v)
		}
	}
	// An address with a failure is now refused unchecked; a clean one is
	// still checked (and may join).
	if v, _ := g.CheckCode("198.51.100.0", "secret", "secret"); v != Throttled {
		t.Errorf("address with a failure while the budget is spent: %v", v)
	}
	if v, _ := g.CheckCode("203.0.113.9", "secret", "secret"); v != OK {
		t.Errorf("clean address while the budget is spent: %v", v)
	}
	*now = now.Add(2 * time.Second)
	if v, _ := g.CheckCode("198.51.100.0", "secret", "secret"); v != OK {
		t.Errorf("after the budget refilled: %v", v)
	}
}

func TestRegisterRate(t *testing.T) {
	g, now := fakeGate(Config{RegisterRate: 1, RegisterBurst: 3, RegisterGlobalRate: 2, RegisterGlobalBurst: 5})
	got := ""
	try := func(addr string) {
		if g.Register(addr) {
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
	g, now := fakeGate(Config{MaxAddresses: 100, JoinGlobalRate: -1})
	for i := range 1000 {
		*now = now.Add(time.Millisecond)
		g.CheckCode(fmt.Sprintf("10.0.%d.%d", i/256, i%256), "guess", "secret")
		if len(g.addrs) > 100 {
			t.Fatalf("%d addresses kept after %d", len(g.addrs), i+1)
		}
	}
	// The most recent address is still known (its failure counted).
	if s := g.addrs["10.0.3.231"]; s == nil || s.failures != 1 {
		t.Errorf("latest address forgotten: %+v", s)
	}
}

// TestClientAddr: the gate keys on the peer address unless the peer is
// a trusted proxy; then on the right-most X-Forwarded-For entry that is
// not a trusted proxy. Whatever a client writes into the header itself
// (the entries left of that one, or the whole header when it connects
// directly) never becomes its address.
func TestClientAddr(t *testing.T) {
	trusted, err := ParseTrustedProxies("10.0.0.0/8,127.0.0.1/32,fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		remote  string
		xff     []string // X-Forwarded-For header lines
		trusted []netip.Prefix
		want    string
	}{
		{"no proxy", "192.0.2.7:5555", nil, nil, "192.0.2.7"},
		{"no proxy trusted: header ignored", "192.0.2.7:5555", []string{"203.0.113.1"}, nil, "192.0.2.7"},
		{"spoofed header from an untrusted peer", "192.0.2.7:5555", []string{"203.0.113.1"}, trusted, "192.0.2.7"},
		{"spoofed trusted address from an untrusted peer", "192.0.2.7:5555", []string{"127.0.0.1"}, trusted, "192.0.2.7"},
		{"peer just outside a trusted network", "11.0.0.1:5555", []string{"203.0.113.1"}, trusted, "11.0.0.1"},
		{"trusted proxy", "10.1.2.3:5555", []string{"203.0.113.1"}, trusted, "203.0.113.1"},
		{"trusted proxy, spoofed entries left of the client", "10.1.2.3:5555", []string{"1.1.1.1, 9.9.9.9, 203.0.113.1"}, trusted, "203.0.113.1"},
		{"spoofed entries in an earlier header line", "10.1.2.3:5555", []string{"1.1.1.1", "203.0.113.1"}, trusted, "203.0.113.1"},
		{"two trusted proxies", "127.0.0.1:5555", []string{"6.6.6.6, 203.0.113.1, 10.0.0.9"}, trusted, "203.0.113.1"},
		{"trusted hops across header lines", "127.0.0.1:5555", []string{"6.6.6.6, 203.0.113.1", "10.0.0.9"}, trusted, "203.0.113.1"},
		{"client writes a trusted address left of itself", "10.1.2.3:5555", []string{"10.0.0.1, 203.0.113.1"}, trusted, "203.0.113.1"},
		{"entry with a port", "10.1.2.3:5555", []string{"203.0.113.1:4711"}, trusted, "203.0.113.1"},
		{"IPv4-mapped peer", "[::ffff:10.1.2.3]:5555", []string{"203.0.113.1"}, trusted, "203.0.113.1"},
		{"IPv6 client behind a trusted proxy", "[fd00::1]:443", []string{"2001:db8:1:2::99"}, trusted, "2001:db8:1:2::/64"},
		{"IPv6 client with brackets and port", "10.1.2.3:5555", []string{"[2001:db8:1:2::99]:443"}, trusted, "2001:db8:1:2::/64"},
		{"malformed entry: the last trusted hop", "10.1.2.3:5555", []string{"203.0.113.1, bogus"}, trusted, "10.1.2.3"},
		{"empty entry: the last trusted hop", "10.1.2.3:5555", []string{"203.0.113.1,"}, trusted, "10.1.2.3"},
		{"all entries trusted: the left-most", "10.1.2.3:5555", []string{"10.0.0.5, 10.0.0.6"}, trusted, "10.0.0.5"},
		{"trusted proxy without a header", "10.1.2.3:5555", nil, trusted, "10.1.2.3"},
		{"IPv6 peer", "[2001:db8:1:2:3:4:5:6]:443", nil, nil, "2001:db8:1:2::/64"},
		{"IPv6 peer, same /64", "[2001:db8:1:2:ffff::1]:443", []string{"203.0.113.1"}, trusted, "2001:db8:1:2::/64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := fakeGate(Config{TrustedProxies: tc.trusted})
			r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := g.ClientAddr(r); got != tc.want {
				t.Errorf("clientAddr(%s, xff %q) = %s, want %s", tc.remote, tc.xff, got, tc.want)
			}
		})
	}
}

// TestParseTrustedProxies: the -trust-proxy list, and the clear errors
// for the old boolean form and for lists that would trust everyone.
func TestParseTrustedProxies(t *testing.T) {
	tests := []struct {
		in, want string // want: FormatTrustedProxies of the result, or a word of the error
		ok       bool
	}{
		{"", "", true},
		{"10.0.0.0/8,127.0.0.1/32", "10.0.0.0/8,127.0.0.1/32", true},
		{" 10.0.0.0/8 , 127.0.0.1 ", "10.0.0.0/8,127.0.0.1/32", true},
		{"fd00::/8,::1", "fd00::/8,::1/128", true},
		{"true", "old on/off form", false},
		{"false", "old on/off form", false},
		{"0.0.0.0/0", "every address", false},
		{"::/0", "every address", false},
		{"10.0.0.1/8", "did you mean 10.0.0.0/8", false},
		{"10.0.0.0/33", "not a network", false},
		{"proxy.local", "not a network", false},
		{"-listen", "old on/off form", false},
	}
	for _, tc := range tests {
		ps, err := ParseTrustedProxies(tc.in)
		switch {
		case tc.ok && (err != nil || FormatTrustedProxies(ps) != tc.want):
			t.Errorf("ParseTrustedProxies(%q) = %v, %v; want %s", tc.in, ps, err, tc.want)
		case !tc.ok && (!errors.Is(err, ErrTrustedProxies) || !strings.Contains(err.Error(), tc.want) || ps != nil):
			t.Errorf("ParseTrustedProxies(%q) = %v, %v; want an error saying %q", tc.in, ps, err, tc.want)
		}
	}
}

// TestTeacherSecretLogSummary: 1000 wrong teacher secrets from three
// addresses in 5 s make one log line; the next, after 10 s, the summary.
func TestTeacherSecretLogSummary(t *testing.T) {
	var buf strings.Builder
	g, now := fakeGate(Config{})
	g.log = slog.New(slog.NewTextHandler(&buf, nil))
	for i := range 1000 {
		*now = now.Add(5 * time.Millisecond)
		g.CheckTeacher(fmt.Sprintf("192.0.2.%d", i%3), "guess", "secret")
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Errorf("%d log lines for 1000 refused teacher secrets in 5 s, want 1:\n%s", n, buf.String())
	}
	*now = now.Add(11 * time.Second)
	g.CheckTeacher("192.0.2.9", "guess", "secret")
	if !strings.Contains(buf.String(), "refused_unchecked=") || strings.Count(buf.String(), "\n") != 2 || strings.Contains(buf.String(), "guess") {
		t.Errorf("no summary after 10 s, or a guess logged:\n%s", buf.String())
	}
}

func TestJoinFailuresLogSummary(t *testing.T) {
	var buf strings.Builder
	g, now := fakeGate(Config{JoinGlobalRate: -1})
	g.log = slog.New(slog.NewTextHandler(&buf, nil))
	for i := range 1000 {
		*now = now.Add(5 * time.Millisecond) // 1000 attempts in 5 s
		g.CheckCode(fmt.Sprintf("192.0.2.%d", i%3), "guess", "secret")
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Errorf("%d log lines for 1000 refused join codes in 5 s, want 1:\n%s", n, buf.String())
	}
	*now = now.Add(11 * time.Second)
	g.CheckCode("192.0.2.9", "guess", "secret")
	if !strings.Contains(buf.String(), "refused_unchecked=") || strings.Count(buf.String(), "\n") != 2 {
		t.Errorf("no summary after 10 s:\n%s", buf.String())
	}
}
