package coordinator

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"browserfl/shared/wire"

	"golang.org/x/time/rate"
)

// Gate configures who may knock on the coordinator and how often: join
// code guessing, new registrations, inactive device records, connection
// liveness and the optional token on /metrics. Zero values get the
// defaults written beside each field; a negative rate means unlimited.
type Gate struct {
	// JoinFreeFailures wrong join codes per client address are answered
	// at once (typos); after that each further failure doubles a pause,
	// from JoinBackoff up to JoinBackoffMax, during which every attempt
	// from that address is refused without looking at the code (defaults
	// 5, 1s, 30s). A success clears the address's record; failures are
	// forgotten after JoinForget (default 10 min) without one.
	JoinFreeFailures int
	JoinBackoff      time.Duration
	JoinBackoffMax   time.Duration
	JoinForget       time.Duration
	// JoinGlobalRate and JoinGlobalBurst bound wrong join codes over all
	// addresses (defaults 20/s, burst 100). While that bucket is empty,
	// addresses with a recent failure are refused without a check;
	// addresses with a clean record are still checked, so a flood cannot
	// lock a classroom out.
	JoinGlobalRate  float64
	JoinGlobalBurst int
	// RegisterRate and RegisterBurst bound new device ids (hello without
	// a device id) per client address (defaults 1/s, burst 60: a
	// classroom behind one NAT address can join at once);
	// RegisterGlobalRate and RegisterGlobalBurst over all addresses
	// (defaults 20/s, burst 500).
	RegisterRate        float64
	RegisterBurst       int
	RegisterGlobalRate  float64
	RegisterGlobalBurst int
	// MaxInactive is the number of registered devices without a
	// connection kept in memory (default 4096); beyond it the longest
	// inactive are forgotten (their store record stays, so they can
	// resume with their secret).
	MaxInactive int
	// MaxAddresses bounds each per-address table (default 10000): beyond
	// it the idle, then the least recently seen addresses are dropped.
	MaxAddresses int
	// PreHelloPerAddress bounds connections from one address that have
	// not sent their hello yet (default 128).
	PreHelloPerAddress int
	// PingInterval is how often a websocket ping checks that the device
	// is still there and reads (the heartbeat); without the pong within
	// PingTimeout the connection is dropped as a slow consumer, which
	// takes the device out of sampling and out of an open round it has
	// not answered (defaults 10s and 10s: browsers answer pings in their
	// network stack whatever the page is doing; the native device
	// answers between frames, and its longest step is far below 10s).
	// A device that vanishes without closing its connection is noticed
	// within 20 s; each ping costs the coordinator about 15 µs of CPU
	// (a write and the pong's read), so at 3 s, 3,000 idle devices
	// alone cost 1.5% of a core.
	// Negative PingInterval: no pings.
	PingInterval time.Duration
	PingTimeout  time.Duration
	// TrustedProxies are the networks of the reverse proxies whose
	// X-Forwarded-For is believed (ParseTrustedProxies): a request whose
	// peer is in them is keyed on the right-most X-Forwarded-For entry
	// not in them; every other request on its peer address (clientHost,
	// proxy.go). Empty: no proxy is trusted.
	TrustedProxies []netip.Prefix
	// MetricsToken, if set, is required on /metrics as
	// "Authorization: Bearer <token>" or ?token=.
	MetricsToken string
}

func (g Gate) withDefaults(deadline time.Duration) Gate {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defF := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&g.JoinFreeFailures, 5)
	defD(&g.JoinBackoff, time.Second)
	defD(&g.JoinBackoffMax, 30*time.Second)
	defD(&g.JoinForget, 10*time.Minute)
	defF(&g.JoinGlobalRate, 20)
	def(&g.JoinGlobalBurst, 100)
	defF(&g.RegisterRate, 1)
	def(&g.RegisterBurst, 60)
	defF(&g.RegisterGlobalRate, 20)
	def(&g.RegisterGlobalBurst, 500)
	def(&g.MaxInactive, 4096)
	def(&g.MaxAddresses, 10000)
	def(&g.PreHelloPerAddress, 128)
	defD(&g.PingInterval, 10*time.Second)
	defD(&g.PingTimeout, 10*time.Second)
	return g
}

// newBucket returns a token bucket (golang.org/x/time/rate) of rate
// tokens per second up to burst, full at its first use. A negative rate
// never refuses. The gate's buckets are read and taken under the gate's
// lock at the gate's clock (Limiter.AllowN and TokensAt at g.now()).
func newBucket(r float64, burst int) *rate.Limiter {
	if r < 0 {
		return rate.NewLimiter(rate.Inf, burst)
	}
	return rate.NewLimiter(rate.Limit(r), burst)
}

// take takes a token from b at now, if it has one.
func take(b *rate.Limiter, now time.Time) bool { return b.AllowN(now, 1) }

// avail returns the tokens b holds at now (+Inf for an unlimited one).
func avail(b *rate.Limiter, now time.Time) float64 {
	if b.Limit() == rate.Inf {
		return math.Inf(1)
	}
	return b.TokensAt(now)
}

// full reports whether b would be full at now (it can be forgotten
// without changing any answer).
func full(b *rate.Limiter, now time.Time) bool {
	return avail(b, now) >= float64(b.Burst())
}

// addrState is what the gate remembers about one client address.
type addrState struct {
	seen     time.Time
	reg      *rate.Limiter // new registrations (newBucket)
	failures int           // wrong join codes since the last success (or forget)
	lastFail time.Time     // time of the last wrong join code
	until    time.Time     // join attempts refused before this time
	prehello int           // open connections that have not said hello
	teacher  backoff       // wrong teacher secrets (teacher.go)
}

// gateState holds the gate's per-address tables and global buckets.
type gateState struct {
	cfg Gate
	log *slog.Logger
	now func() time.Time

	mu        sync.Mutex
	addrs     map[string]*addrState
	joinFails *rate.Limiter // global wrong join codes
	regs      *rate.Limiter // global registrations
	// inactive maps each device id without a connection to the order in
	// which it lost it (eviction takes the smallest first).
	inactive map[string]uint64
	seq      uint64
	// failure log: one line per interval instead of one per attempt.
	unlogged, unloggedThrottled int
	lastLog                     time.Time
	teacherLog                  secretLog // wrong teacher secrets (teacher.go)
}

func newGate(cfg Gate, deadline time.Duration, log *slog.Logger) *gateState {
	cfg = cfg.withDefaults(deadline)
	return &gateState{cfg: cfg, log: log, now: time.Now,
		addrs: make(map[string]*addrState), inactive: make(map[string]uint64),
		joinFails: newBucket(cfg.JoinGlobalRate, cfg.JoinGlobalBurst), regs: newBucket(cfg.RegisterGlobalRate, cfg.RegisterGlobalBurst)}
}

// addrLocked returns the state of addr, creating it (and making room)
// if needed.
func (g *gateState) addrLocked(addr string, now time.Time) *addrState {
	s := g.addrs[addr]
	if s == nil {
		if len(g.addrs) >= g.cfg.MaxAddresses {
			g.pruneLocked(now)
		}
		s = &addrState{reg: newBucket(g.cfg.RegisterRate, g.cfg.RegisterBurst)}
		g.addrs[addr] = s
	}
	s.seen = now
	return s
}

// idle reports whether s holds nothing that changes an answer.
func (g *gateState) idle(s *addrState, now time.Time) bool {
	return s.prehello == 0 && !now.Before(s.until) && (s.failures == 0 || now.Sub(s.lastFail) > g.cfg.JoinForget) &&
		full(s.reg, now) && s.teacher.idle(now, g.cfg.JoinForget)
}

// pruneLocked drops idle addresses, then the least recently seen ones,
// down to three quarters of MaxAddresses.
func (g *gateState) pruneLocked(now time.Time) {
	for a, s := range g.addrs {
		if g.idle(s, now) {
			delete(g.addrs, a)
		}
	}
	keep := g.cfg.MaxAddresses * 3 / 4
	if len(g.addrs) <= keep {
		return
	}
	type as struct {
		a string
		t time.Time
	}
	all := make([]as, 0, len(g.addrs))
	for a, s := range g.addrs {
		if s.prehello == 0 {
			all = append(all, as{a, s.seen})
		}
	}
	slices.SortFunc(all, func(x, y as) int { return x.t.Compare(y.t) })
	for _, e := range all[:max(0, min(len(all), len(g.addrs)-keep))] {
		delete(g.addrs, e.a)
	}
}

// joinVerdict is the answer to a join code attempt.
type joinVerdict int

const (
	joinOK        joinVerdict = iota
	joinWrong                 // wrong code (counted as a failure)
	joinThrottled             // refused without checking the code
)

// checkCode checks a join code attempt from addr against code. When it
// refuses, retry says when the address may try again.
func (g *gateState) checkCode(addr, got, code string) (v joinVerdict, retry time.Duration) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.addrLocked(addr, now)
	if s.failures > 0 && now.Sub(s.lastFail) > g.cfg.JoinForget {
		s.failures = 0
	}
	if now.Before(s.until) {
		g.unloggedThrottled++
		g.logLocked(now, addr)
		return joinThrottled, s.until.Sub(now)
	}
	if s.failures > 0 && avail(g.joinFails, now) < 1 {
		// The global budget of wrong codes is spent: only addresses
		// with a clean record are checked.
		g.unloggedThrottled++
		g.logLocked(now, addr)
		return joinThrottled, g.cfg.JoinBackoff
	}
	if joinCodeEqual(got, code) {
		s.failures, s.until = 0, time.Time{}
		return joinOK, 0
	}
	g.failLocked(s, now, addr)
	return joinWrong, 0
}

// failLocked records a failed attempt from addr: a wrong join code, or a
// hello with a right code but an unknown device id or wrong secret.
func (g *gateState) failLocked(s *addrState, now time.Time, addr string) {
	take(g.joinFails, now)
	s.failures++
	s.lastFail = now
	if n := s.failures - g.cfg.JoinFreeFailures; n > 0 {
		d := g.cfg.JoinBackoffMax
		if n <= 30 {
			d = min(d, g.cfg.JoinBackoff<<(n-1))
		}
		s.until = now.Add(d)
	}
	g.unlogged++
	g.logLocked(now, addr)
}

// authFailed records that a hello from addr named an unknown device id
// or a wrong secret: it counts like a wrong join code.
func (g *gateState) authFailed(addr string) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failLocked(g.addrLocked(addr, now), now, addr)
}

// logLocked logs wrong and throttled join codes at most once per 10 s
// (the counts since the previous line).
func (g *gateState) logLocked(now time.Time, addr string) {
	if now.Sub(g.lastLog) < 10*time.Second {
		return
	}
	g.log.Warn("join codes refused", "wrong_code_or_secret", g.unlogged, "refused_unchecked", g.unloggedThrottled, "last_from", addr)
	g.unlogged, g.unloggedThrottled, g.lastLog = 0, 0, now
}

// register takes a token for a new device id from addr: per address and
// global.
func (g *gateState) register(addr string) bool {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.addrLocked(addr, now)
	if avail(s.reg, now) < 1 {
		return false // do not spend a global token on a refused address
	}
	if !take(g.regs, now) {
		return false
	}
	return take(s.reg, now)
}

// openPreHello counts a connection from addr that has not said hello; it
// reports false if addr already has PreHelloPerAddress of them.
func (g *gateState) openPreHello(addr string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.addrLocked(addr, g.now())
	if s.prehello >= g.cfg.PreHelloPerAddress {
		return false
	}
	s.prehello++
	return true
}

func (g *gateState) closePreHello(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.addrs[addr]; s != nil && s.prehello > 0 {
		s.prehello--
	}
}

// markInactive records that device id lost its connection.
func (g *gateState) markInactive(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	g.inactive[id] = g.seq
}

// markActive records that device id has a connection again.
func (g *gateState) markActive(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.inactive, id)
}

// oldestInactive returns the inactive ids, longest inactive first.
func (g *gateState) oldestInactive() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := make([]string, 0, len(g.inactive))
	for id := range g.inactive {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(g.inactive[a], g.inactive[b]) })
	return ids
}

// evictInactive forgets the longest-inactive devices while more than
// MaxInactive registered devices have no connection; a device assigned
// to an undecided round is kept. It evicts down to 7/8 of the cap so
// that the sort is amortised.
func (c *Coordinator) evictInactive() {
	g := c.gate
	c.mu.Lock()
	over := len(c.devices) - c.nconn - g.cfg.MaxInactive
	c.mu.Unlock()
	if over <= 0 {
		return
	}
	want := over + g.cfg.MaxInactive/8
	ids := g.oldestInactive()
	var gone []string
	c.mu.Lock()
	for _, id := range ids {
		if len(gone) >= want {
			break
		}
		d := c.devices[id]
		switch {
		case d == nil || d.conn != nil:
			gone = append(gone, id) // stale entry: drop it from the table
			continue
		case d.round != 0:
			continue
		}
		c.removeDeviceLocked(id)
		if c.histLost == nil {
			c.histLost = map[string]bool{}
		}
		c.histLost[id] = true // its asks and inclusions so far are forgotten
		gone = append(gone, id)
		c.met.evicted.Add(1)
	}
	c.mu.Unlock()
	g.mu.Lock()
	for _, id := range gone {
		delete(g.inactive, id)
	}
	g.mu.Unlock()
}

// clientAddr is the address the gate keys on: the remote IP (an IPv6
// address by its /64, which one host usually owns whole), or behind a
// trusted proxy the client's address from X-Forwarded-For (clientHost).
func (g *gateState) clientAddr(r *http.Request) string {
	host := clientHost(r, g.cfg.TrustedProxies)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
}

// checkHello applies the gate to a hello before admit: the version (a
// wrong one is a bad frame), the join code with its per-address backoff
// and the registration rate for a hello without a device id.
func (c *Coordinator) checkHello(cn *conn, h wire.Hello) error {
	return c.front.gateHello(cn, h, c.cfg.JoinCode)
}

// gateHello is checkHello for a session whose join code is code.
func (c *front) gateHello(cn *conn, h wire.Hello, code string) error {
	if h.Version != wire.Version {
		return &closeError{code: wire.CodeVersion, reason: fmt.Sprintf("protocol version %d, want %d", h.Version, wire.Version)}
	}
	switch v, retry := c.gate.checkCode(cn.addr, h.JoinCode, code); v {
	case joinThrottled:
		return &closeError{code: wire.CodeRate, kind: rejJoinThrottled, quiet: true,
			reason: fmt.Sprintf("too many wrong join codes from this address; retry in %d s", int(retry.Seconds()+1))}
	case joinWrong:
		c.met.authFailures.Add(1)
		return &closeError{code: wire.CodeJoinCode, kind: rejJoinCode, quiet: true, reason: "wrong join code"}
	}
	if h.DeviceID == "" && !c.gate.register(cn.addr) {
		return &closeError{code: wire.CodeRate, kind: rejRegisterThrottled, quiet: true,
			reason: "too many new devices; retry later"}
	}
	return nil
}
