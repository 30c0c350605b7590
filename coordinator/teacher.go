package coordinator

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"browserfl/shared/wire"
)

// The teacher's endpoints. Each needs the teacher secret (Config.
// TeacherSecret) in the X-Teacher-Secret header or the teacher query
// parameter, compared in constant time; without it, or with a wrong one,
// the answer is 403 and browserfl_rejections_total{kind="teacher_secret"}
// counts it. Wrong secrets go through a per-address backoff like join
// codes (teacherAuth): during its pause every attempt is refused
// unchecked with 429 (kind="teacher_throttled"). The join code alone
// never unlocks them.
//
//	POST /api/teacher/start   leave the lobby (Start)
//	POST /api/teacher/pause   no new rounds (Pause)
//	POST /api/teacher/resume  rounds again (Resume)
//	POST /api/teacher/end     finish now (End)
//	POST /api/teacher/new     end this session, start a fresh one (Config.NewSession)
//	POST /api/teacher/remove?device=ID  remove one device from the session (Remove)
//
// A call that does not fit the session's state answers 409 with the
// reason; success answers 200 with the new Status (teacher: true), or
// for /new with the new session (NewSessionInfo: id, join_code,
// dashboard).

// TeacherHeader carries the teacher secret.
const TeacherHeader = "X-Teacher-Secret"

// teacherSecretOf returns the teacher secret r carries ("" for none).
func teacherSecretOf(r *http.Request) string {
	got := r.Header.Get(TeacherHeader)
	if got == "" {
		got = r.URL.Query().Get("teacher")
	}
	return got
}

// backoff is one address's record of wrong secrets of one kind: after
// Gate.JoinFreeFailures of them each further one doubles a pause (from
// Gate.JoinBackoff up to Gate.JoinBackoffMax) during which every attempt
// is refused unchecked; a right one clears it, and it is forgotten after
// Gate.JoinForget without a failure. (The same rule as join codes,
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

// checkTeacher checks a teacher secret attempt got (not "") from addr
// against secret, with the per-address backoff. When it refuses, retry
// says when the address may try again.
func (g *gateState) checkTeacher(addr, got, secret string) (v joinVerdict, retry time.Duration) {
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
		return joinThrottled, b.until.Sub(now)
	}
	if secret != "" && subtle.ConstantTimeCompare([]byte(got), []byte(secret)) == 1 {
		*b = backoff{}
		return joinOK, 0
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
	return joinWrong, 0
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

// teacherAuth checks the teacher secret r carries, if any, against
// secret through the gate's per-address backoff. ok reports a right
// secret. A wrong one is answered 403, and an attempt during the pause
// 429 with Retry-After, both counted; then answered is true and the
// caller writes nothing more. Without a secret in r nothing is counted
// (ok and answered false): the read-only dashboard sends none.
func (c *Coordinator) teacherAuth(w http.ResponseWriter, r *http.Request, secret string) (ok, answered bool) {
	got := teacherSecretOf(r)
	if got == "" {
		return false, false
	}
	switch v, retry := c.gate.checkTeacher(c.gate.clientAddr(r), got, secret); v {
	case joinOK:
		return true, false
	case joinThrottled:
		c.met.reject(rejTeacherThrottled)
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
		http.Error(w, "too many wrong teacher secrets from this address", http.StatusTooManyRequests)
	default:
		c.met.reject(rejTeacherSecret)
		http.Error(w, "wrong teacher secret", http.StatusForbidden)
	}
	return false, true
}

// teacherKey marks a request whose teacher secret Host.authorized has
// checked and found right, so that it is checked (and counted) once.
type teacherKey struct{}

func withTeacher(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), teacherKey{}, true))
}

func teacherChecked(r *http.Request) bool {
	ok, _ := r.Context().Value(teacherKey{}).(bool)
	return ok
}

func (c *Coordinator) teacherRoutes(mux *http.ServeMux) {
	doReq := func(name string, f func(ctx context.Context, r *http.Request) (any, error)) {
		mux.HandleFunc("POST /api/teacher/"+name, func(w http.ResponseWriter, r *http.Request) {
			if ok, answered := c.teacherAuth(w, r, c.cfg.TeacherSecret); !ok {
				if !answered {
					c.met.reject(rejTeacherSecret)
					http.Error(w, "teacher secret required", http.StatusForbidden)
				}
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
			defer cancel()
			out, err := f(ctx, r)
			if err != nil {
				code := http.StatusInternalServerError
				switch {
				case errors.Is(err, ErrState) || errors.Is(err, errNoNewSession):
					code = http.StatusConflict
				case errors.Is(err, ErrNoSuchDevice):
					code = http.StatusNotFound
				}
				c.log.Warn("teacher action failed", "action", name, "err", err)
				http.Error(w, err.Error(), code)
				return
			}
			c.log.Info("teacher action", "action", name)
			if out == nil {
				s := c.Status()
				s.ForTeacher()
				out = s
			}
			writeJSON(w, out)
		})
	}
	do := func(name string, f func(ctx context.Context) (any, error)) {
		doReq(name, func(ctx context.Context, _ *http.Request) (any, error) { return f(ctx) })
	}
	status := func(f func() error) func(context.Context) (any, error) {
		return func(context.Context) (any, error) { return nil, f() }
	}
	do("start", func(ctx context.Context) (any, error) { return nil, c.Start(ctx) })
	do("pause", status(c.Pause))
	do("resume", status(c.Resume))
	do("end", status(c.End))
	do("new", func(ctx context.Context) (any, error) {
		if c.cfg.NewSession == nil {
			return nil, errNoNewSession
		}
		return c.cfg.NewSession(ctx)
	})
	doReq("remove", func(_ context.Context, r *http.Request) (any, error) {
		return nil, c.Remove(r.URL.Query().Get("device"))
	})
}

// reasonRemoved is what a removed device is told, on its page too.
const reasonRemoved = "The teacher removed this device from the session."

// ErrNoSuchDevice is wrapped by Remove for an id the session does not
// hold.
var ErrNoSuchDevice = errors.New("coordinator: no such device in this session")

// Remove takes device id out of the session at the teacher's request. The
// removal is written to the store first, so its hellos are refused
// (wire.CodeRemoved) for the rest of the session, across restarts. In the
// open round:
//
//   - a cohort member whose update has not arrived, or has arrived in a
//     round still collecting, is excluded at once: its update (if any)
//     is taken out of the round and never reaches the aggregate, and the
//     device is told "excluded" before its connection is closed (it
//     aborts the update, so its noise state stays consistent);
//   - an update the round can no longer give back (the round is closed
//     and being committed, or the update came, or will come, summed in an
//     edge's aggregate: taking one member out would refuse the edge's
//     whole sum) is decided with the round as usual: the device gets the
//     decision, then its connection is closed.
//
// Either way the update is in the aggregate wholly or not at all. The
// device is never sampled again; the dashboard lists it as "removed".
func (c *Coordinator) Remove(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.devices[id]
	switch {
	case id == "" || d == nil:
		return fmt.Errorf("%w: %q", ErrNoSuchDevice, shortID(id))
	case d.removed:
		return fmt.Errorf("%w: the device was removed already", ErrState)
	}
	// Durable first: a restart must keep refusing the device.
	if err := c.store.MarkRemoved(id); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	c.removed[id] = true
	d.removed = true
	c.log.Info("device removed by the teacher", "device", shortID(id))
	if or := c.round; or != nil && d.round == or.t && or.cohort[id] {
		u := or.updates[id]
		_, atEdge := d.conn.(*remoteLink)
		if or.closed || (u != nil && u.agg) || atEdge {
			// Decided with the round; finishRound (or discardRound)
			// closes the connection after the decision.
			c.signal()
			return nil
		}
		if u != nil {
			delete(or.updates, id)
			if u.vec != nil {
				c.vecs.put(u.vec)
			}
		}
		delete(or.cohort, id)
		or.dropped[id] = true
		d.round = 0
		control(d.conn, wire.Decision{T: or.t, State: wire.Excluded, Reason: "removed by the teacher"})
		or.checkAllIn()
	}
	if d.conn != nil {
		d.conn.closeWith(wire.CodeRemoved, reasonRemoved)
	}
	c.signal()
	return nil
}

var errNoNewSession = errors.New("coordinator: this coordinator cannot start a new session (no host)")
