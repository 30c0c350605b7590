package gate

import (
	crand "crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"browserfl/shared/wire"
)

// JoinCodeEqual compares two join codes in constant time, normalised
// (wire.NormalizeJoinCode): case, spaces and dashes do not matter.
func JoinCodeEqual(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(wire.NormalizeJoinCode(got)), []byte(wire.NormalizeJoinCode(want))) == 1
}

// NewCredentials returns a fresh device id (128 bits) and secret (256
// bits) from crypto/rand: the session issues both to a new device, an
// edge the secret (the session registers its digest).
func NewCredentials() (id, secret string, err error) {
	var b [48]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("device credentials: %w", err)
	}
	return hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:]), nil
}

// backoff is one address's record of wrong secrets of one kind: after
// Config.JoinFreeFailures of them each further one doubles a pause (from
// Config.JoinBackoff up to Config.JoinBackoffMax) during which every attempt
// is refused unchecked; a right one clears it, and it is forgotten after
// Config.JoinForget without a failure. (The same rule as join codes,
// recorded apart: a right join code, which every student has, must not
// clear the teacher-secret record.)
type backoff struct {
	failures int
	lastFail time.Time
	until    time.Time
}

func (b *backoff) idle(now time.Time, forget time.Duration) bool {
	return !now.Before(b.until) && (b.failures == 0 || now.Sub(b.lastFail) > forget)
}

// CheckTeacher checks a teacher secret attempt got (not "") from addr
// against secret, with the per-address backoff. When it refuses, retry
// says when the address may try again.
func (g *State) CheckTeacher(addr, got, secret string) (v Verdict, retry time.Duration) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	b := &g.addrLocked(addr, now).teacher
	if b.failures > 0 && now.Sub(b.lastFail) > g.cfg.JoinForget {
		b.failures = 0
	}
	if now.Before(b.until) {
		g.teacherLog.throttled++
		g.teacherLog.flush(g.log, now, addr)
		return Throttled, b.until.Sub(now)
	}
	if secret != "" && subtle.ConstantTimeCompare([]byte(got), []byte(secret)) == 1 {
		*b = backoff{}
		return OK, 0
	}
	b.failures++
	b.lastFail = now
	if n := b.failures - g.cfg.JoinFreeFailures; n > 0 {
		d := g.cfg.JoinBackoffMax
		if n <= 30 {
			d = min(d, g.cfg.JoinBackoff<<(n-1))
		}
		b.until = now.Add(d)
	}
	g.teacherLog.wrong++
	g.teacherLog.flush(g.log, now, addr)
	return Wrong, 0
}

// secretLog counts refused teacher secrets between log lines: one line
// per 10 s at most, as for join codes, so that a flood of guesses from
// many addresses cannot flood the log.
type secretLog struct {
	wrong, throttled int
	last             time.Time
}

func (l *secretLog) flush(log *slog.Logger, now time.Time, addr string) {
	if now.Sub(l.last) < 10*time.Second {
		return
	}
	log.Warn("teacher secrets refused", "wrong", l.wrong, "refused_unchecked", l.throttled, "last_from", addr)
	l.wrong, l.throttled, l.last = 0, 0, now
}
