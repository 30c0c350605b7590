package gate

import (
	"cmp"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Config configures who may knock on the coordinator and how often: join
// code guessing, new registrations, inactive device records, connection
// liveness and the optional token on /metrics. Zero values get the
// defaults written beside each field; a negative rate means unlimited.
type Config struct {
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

func (g Config) WithDefaults(deadline time.Duration) Config {
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
	shard    *rate.Limiter // new demo shards dealt (Deal)
	reads    *rate.Limiter // costly API reads (Read)
	failures int           // wrong join codes since the last success (or forget)
	lastFail time.Time     // time of the last wrong join code
	until    time.Time     // join attempts refused before this time
	prehello int           // open connections that have not said hello
	teacher  backoff       // wrong teacher secrets (coordinator/api/teacher.go)
}

// State holds the gate's per-address tables and global buckets.
type State struct {
	cfg Config
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
	teacherLog                  secretLog // wrong teacher secrets (coordinator/api/teacher.go)
}

func New(cfg Config, deadline time.Duration, log *slog.Logger) *State {
	cfg = cfg.WithDefaults(deadline)
	return &State{cfg: cfg, log: log, now: time.Now,
		addrs: make(map[string]*addrState), inactive: make(map[string]uint64),
		joinFails: newBucket(cfg.JoinGlobalRate, cfg.JoinGlobalBurst), regs: newBucket(cfg.RegisterGlobalRate, cfg.RegisterGlobalBurst)}
}

// addrLocked returns the state of addr, creating it (and making room)
// if needed.
func (g *State) addrLocked(addr string, now time.Time) *addrState {
	s := g.addrs[addr]
	if s == nil {
		if len(g.addrs) >= g.cfg.MaxAddresses {
			g.pruneLocked(now)
		}
		s = &addrState{reg: newBucket(g.cfg.RegisterRate, g.cfg.RegisterBurst), shard: newBucket(g.cfg.RegisterRate, g.cfg.RegisterBurst),
			reads: newBucket(ReadRate, ReadBurst)}
		g.addrs[addr] = s
	}
	s.seen = now
	return s
}

// idle reports whether s holds nothing that changes an answer.
func (g *State) idle(s *addrState, now time.Time) bool {
	return s.prehello == 0 && !now.Before(s.until) && (s.failures == 0 || now.Sub(s.lastFail) > g.cfg.JoinForget) &&
		full(s.reg, now) && full(s.shard, now) && full(s.reads, now) && s.teacher.idle(now, g.cfg.JoinForget)
}

// pruneLocked drops idle addresses, then the least recently seen ones,
// down to three quarters of MaxAddresses.
func (g *State) pruneLocked(now time.Time) {
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

// Verdict is the answer to a join code attempt.
type Verdict int

const (
	OK        Verdict = iota
	Wrong             // wrong code (counted as a failure)
	Throttled         // refused without checking the code
)

// CheckCode checks a join code attempt from addr against code. When it
// refuses, retry says when the address may try again.
func (g *State) CheckCode(addr, got, code string) (v Verdict, retry time.Duration) {
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
		return Throttled, s.until.Sub(now)
	}
	if s.failures > 0 && avail(g.joinFails, now) < 1 {
		// The global budget of wrong codes is spent: only addresses
		// with a clean record are checked.
		g.unloggedThrottled++
		g.logLocked(now, addr)
		return Throttled, g.cfg.JoinBackoff
	}
	if JoinCodeEqual(got, code) {
		s.failures, s.until = 0, time.Time{}
		return OK, 0
	}
	g.failLocked(s, now, addr)
	return Wrong, 0
}

// failLocked records a failed attempt from addr: a wrong join code, or a
// hello with a right code but an unknown device id or wrong secret.
func (g *State) failLocked(s *addrState, now time.Time, addr string) {
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

// AuthFailed records that a hello from addr named an unknown device id
// or a wrong secret: it counts like a wrong join code.
func (g *State) AuthFailed(addr string) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failLocked(g.addrLocked(addr, now), now, addr)
}

// logLocked logs wrong and throttled join codes at most once per 10 s
// (the counts since the previous line).
func (g *State) logLocked(now time.Time, addr string) {
	if now.Sub(g.lastLog) < 10*time.Second {
		return
	}
	g.log.Warn("join codes refused", "wrong_code_or_secret", g.unlogged, "refused_unchecked", g.unloggedThrottled, "last_from", addr)
	g.unlogged, g.unloggedThrottled, g.lastLog = 0, 0, now
}

// Register takes a token for a new device id from addr: per address and
// global.
func (g *State) Register(addr string) bool {
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

// Deal takes a token for a new demo shard dealt to addr (a page without
// the cookie of one it was dealt): as many as new device ids
// (RegisterRate, RegisterBurst), since each new page asks for one. Each
// new shard is made, encoded and cached at the coordinator's cost; one
// address cannot make it deal them without end.
func (g *State) Deal(addr string) bool {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	return take(g.addrLocked(addr, now).shard, now)
}

// ReadRate and ReadBurst bound the costly API reads without the teacher
// secret (the status a page asks for as it opens, a projector about once
// a second) from one address: a class of a hundred opening its pages at
// once behind one address is within the burst; one client asking without
// pause is held to a small share of a core.
const (
	ReadRate  = 10
	ReadBurst = 120
)

// Read takes a token for a costly API read from addr.
func (g *State) Read(addr string) bool {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	return take(g.addrLocked(addr, now).reads, now)
}

// OpenPreHello counts a connection from addr that has not said hello; it
// reports false if addr already has PreHelloPerAddress of them.
func (g *State) OpenPreHello(addr string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.addrLocked(addr, g.now())
	if s.prehello >= g.cfg.PreHelloPerAddress {
		return false
	}
	s.prehello++
	return true
}

func (g *State) ClosePreHello(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.addrs[addr]; s != nil && s.prehello > 0 {
		s.prehello--
	}
}

// MarkInactive records that device id lost its connection.
func (g *State) MarkInactive(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	g.inactive[id] = g.seq
}

// MarkActive records that device id has a connection again.
func (g *State) MarkActive(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.inactive, id)
}

// OldestInactive returns the inactive ids, longest inactive first.
func (g *State) OldestInactive() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := make([]string, 0, len(g.inactive))
	for id := range g.inactive {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(g.inactive[a], g.inactive[b]) })
	return ids
}

// ClientAddr is the address the gate keys on: the remote IP (an IPv6
// address by its /64, which one host usually owns whole), or behind a
// trusted proxy the client's address from X-Forwarded-For (clientHost).
func (g *State) ClientAddr(r *http.Request) string {
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

// Forget drops ids from the inactive table (evicted, or stale entries).
func (g *State) Forget(ids []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		delete(g.inactive, id)
	}
}

// Config returns the gate's configuration, defaults filled in.
func (g *State) Config() Config { return g.cfg }
