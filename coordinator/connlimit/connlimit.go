// Package connlimit bounds the plain HTTP connections a server keeps
// open, so that one client cannot hold enough keep-alive connections to
// use up the process's open files and lock every device out. It is an
// http.Server.ConnState hook. A new connection past the per-address bound
// is closed as it arrives, before a request is read. At the total bound
// the connection idle the longest (a keep-alive waiting for a next
// request), or else the oldest that has sent nothing for StaleNew, is
// closed to make room, so that holding connections open without asking
// cannot lock new clients out; only when every connection is busy in a
// request is the new one closed. A connection stops counting when it closes or is taken over as
// a websocket (the coordinator bounds those itself: -max-devices, and its
// per-address cap before hello).
//
// Addresses are keyed as the gate keys them (an IPv6 address by its
// /64); connections from a trusted proxy count only towards the total,
// since the proxy speaks for many clients and bounds them itself.
package connlimit

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Limit is the hook's state; set its fields before the server starts.
type Limit struct {
	// PerAddr bounds the open connections from one client address (0:
	// none); Total bounds them all (0: none).
	PerAddr, Total int
	// Trusted reports whether an address is a trusted proxy's.
	Trusted func(netip.Addr) bool
	// Log gets one warning per address and minute with the count refused.
	Log *slog.Logger

	mu      sync.Mutex
	byAddr  map[string]int
	total   int
	counted map[net.Conn]string
	idle    map[net.Conn]time.Time // counted connections between requests, since when
	fresh   map[net.Conn]time.Time // counted connections that have sent nothing yet, since when
	refused map[string]int         // refused since the last warning, by address
	warned  map[string]time.Time   // last warning, by address
}

// warnEvery is how often a warning about one address may be logged.
const warnEvery = time.Minute

// StaleNew is how long a new connection may send nothing before, at the
// total bound, it can be closed to make room (a browser sends its request
// at once, after the TLS handshake).
const StaleNew = 2 * time.Second

// ConnState is the http.Server.ConnState hook.
func (l *Limit) ConnState(c net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		key, trusted := l.key(c.RemoteAddr())
		l.mu.Lock()
		if l.byAddr == nil {
			l.byAddr, l.counted, l.idle, l.fresh = map[string]int{}, map[net.Conn]string{}, map[net.Conn]time.Time{}, map[net.Conn]time.Time{}
			l.refused, l.warned = map[string]int{}, map[string]time.Time{}
		}
		now := time.Now()
		var evict net.Conn
		if l.Total > 0 && l.total >= l.Total {
			evict = l.evictableLocked(now)
		}
		if !trusted && l.PerAddr > 0 && l.byAddr[key] >= l.PerAddr || l.Total > 0 && l.total >= l.Total && evict == nil {
			l.refuseLocked(key)
			l.mu.Unlock()
			closeRaw(c)
			return
		}
		if evict != nil {
			// It stops counting now; its server goroutine sees it closed.
			l.forgetLocked(evict)
		}
		l.byAddr[key]++
		l.total++
		l.counted[c] = key
		l.fresh[c] = now
		l.mu.Unlock()
		if evict != nil {
			closeRaw(evict)
		}
	case http.StateIdle:
		l.mu.Lock()
		if _, ok := l.counted[c]; ok {
			l.idle[c] = time.Now()
		}
		l.mu.Unlock()
	case http.StateActive:
		l.mu.Lock()
		delete(l.idle, c)
		delete(l.fresh, c)
		l.mu.Unlock()
	case http.StateHijacked, http.StateClosed:
		l.mu.Lock()
		l.forgetLocked(c)
		l.mu.Unlock()
	}
}

// evictableLocked returns the counted connection to close for a new one
// at the total bound: the one idle the longest, else the oldest that has
// sent nothing for StaleNew; nil if every one is busy in a request or
// new (l.mu held; linear scans, done only at the total bound).
func (l *Limit) evictableLocked(now time.Time) net.Conn {
	if c := oldest(l.idle, now); c != nil {
		return c
	}
	return oldest(l.fresh, now.Add(-StaleNew))
}

// oldest returns the connection of conns with the earliest time not
// after before, nil if there is none.
func oldest(conns map[net.Conn]time.Time, before time.Time) net.Conn {
	var o net.Conn
	var since time.Time
	for c, t := range conns {
		if !t.After(before) && (o == nil || t.Before(since)) {
			o, since = c, t
		}
	}
	return o
}

// closeRaw closes c's network connection, without a TLS close_notify:
// that write would wait on a peer that does not read, and the hook runs
// in the server's accept loop.
func closeRaw(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	c.Close()
}

// forgetLocked stops counting c (l.mu held).
func (l *Limit) forgetLocked(c net.Conn) {
	delete(l.idle, c)
	delete(l.fresh, c)
	if key, ok := l.counted[c]; ok {
		delete(l.counted, c)
		l.total--
		if l.byAddr[key]--; l.byAddr[key] <= 0 {
			delete(l.byAddr, key)
		}
	}
}

// Open returns the connections counted now: in all, and from the
// address of a (as a net.Addr's String, host and port).
func (l *Limit) Open(a string) (total, fromAddr int) {
	key, _ := l.keyString(a)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.byAddr[key]
}

// refuseLocked counts a refused connection from key and logs it at most
// once a minute per address (l.mu held).
func (l *Limit) refuseLocked(key string) {
	l.refused[key]++
	now := time.Now()
	if now.Sub(l.warned[key]) < warnEvery {
		return
	}
	if l.Log != nil {
		l.Log.Warn("connections refused: too many open from one address, or in all", "address", key,
			"refused", l.refused[key], "open_from_address", l.byAddr[key], "per_address", l.PerAddr,
			"open", l.total, "total", l.Total)
	}
	l.warned[key], l.refused[key] = now, 0
	if len(l.warned) > 4096 {
		for k, t := range l.warned {
			if now.Sub(t) >= warnEvery {
				delete(l.warned, k)
				delete(l.refused, k)
			}
		}
	}
}

// key is the address a connection counts under, and whether it is a
// trusted proxy's.
func (l *Limit) key(a net.Addr) (string, bool) {
	if a == nil {
		return "", false
	}
	return l.keyString(a.String())
}

func (l *Limit) keyString(s string) (string, bool) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return s, false
	}
	ip := ap.Addr().Unmap()
	trusted := l.Trusted != nil && l.Trusted(ip)
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String(), trusted
	}
	return ip.String(), trusted
}
