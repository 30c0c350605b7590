package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/site"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// The teacher's endpoints. Each needs the teacher secret (Config.
// TeacherSecret) in the X-Teacher-Secret header or the teacher query
// parameter, compared in constant time; without it, or with a wrong one,
// the answer is 403 and browserfl_rejections_total{kind="teacher_secret"}
// counts it. Wrong secrets go through a per-address backoff like join
// codes (TeacherAuth): during its pause every attempt is refused
// unchecked with 429 (kind="teacher_throttled"). The join code alone
// never unlocks them.
//
//	POST /api/teacher/start   leave the lobby (Start)
//	POST /api/teacher/pause   no new rounds (Pause)
//	POST /api/teacher/resume  rounds again (Resume)
//	POST /api/teacher/end     finish now (End)
//	POST /api/teacher/new     end this session, start a fresh one (Config.NewSession);
//	                          a body of browserfl.task/v1 JSON makes it a session of
//	                          that task (400 and kind="task" if it cannot be one)
//	POST /api/teacher/remove?device=ID  remove one device from the session (Remove)
//
// A call that does not fit the session's state answers 409 with the
// reason; success answers 200 with the new Status (teacher: true), or
// for /new with the new session (sessions.NewSessionInfo: id, join_code,
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

// TeacherAuth checks the teacher secret r carries, if any, against
// secret through the gate's per-address backoff. ok reports a right
// secret. A wrong one is answered 403, and an attempt during the pause
// 429 with Retry-After, both counted; then answered is true and the
// caller writes nothing more. Without a secret in r nothing is counted
// (ok and answered false): the read-only dashboard sends none.
func (c *Coordinator) TeacherAuth(w http.ResponseWriter, r *http.Request, secret string) (ok, answered bool) {
	got := teacherSecretOf(r)
	if got == "" {
		return false, false
	}
	switch v, retry := c.front.Gate.CheckTeacher(c.front.Gate.ClientAddr(r), got, secret); v {
	case gate.OK:
		return true, false
	case gate.Throttled:
		c.front.Met.Reject(metrics.RejTeacherThrottled)
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
		http.Error(w, "too many wrong teacher secrets from this address", http.StatusTooManyRequests)
	default:
		c.front.Met.Reject(metrics.RejTeacherSecret)
		http.Error(w, "wrong teacher secret", http.StatusForbidden)
	}
	return false, true
}

// RequireTeacher lets r through (true) with the right teacher secret
// only: without one it answers 403 and counts it, with a wrong one as
// TeacherAuth does.
func (c *Coordinator) RequireTeacher(w http.ResponseWriter, r *http.Request, secret string) bool {
	ok, answered := c.TeacherAuth(w, r, secret)
	if !ok && !answered {
		c.front.Met.Reject(metrics.RejTeacherSecret)
		http.Error(w, "teacher secret required", http.StatusForbidden)
	}
	return ok
}

func (c *Coordinator) teacherRoutes(mux *http.ServeMux) {
	doReq := func(name string, f func(ctx context.Context, r *http.Request) (any, error)) {
		mux.HandleFunc("POST /api/teacher/"+name, func(w http.ResponseWriter, r *http.Request) {
			if !c.RequireTeacher(w, r, c.cfg.TeacherSecret) {
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
				case errors.Is(err, ErrBadTask):
					code = http.StatusBadRequest
					c.front.Met.Reject(metrics.RejTask)
				}
				c.front.Log.Warn("teacher action failed", "action", name, "err", err)
				http.Error(w, err.Error(), code)
				return
			}
			c.front.Log.Info("teacher action", "action", name)
			if out == nil {
				s := c.Status()
				s.ForTeacher()
				out = s
			}
			site.WriteJSON(w, out)
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
	doReq("new", func(ctx context.Context, r *http.Request) (any, error) {
		if c.cfg.NewSession == nil {
			return nil, errNoNewSession
		}
		def, err := teacherTask(r)
		if err != nil {
			return nil, err
		}
		return c.cfg.NewSession(ctx, def)
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
		return fmt.Errorf("%w: %q", ErrNoSuchDevice, wsconn.ShortID(id))
	case d.removed:
		return fmt.Errorf("%w: the device was removed already", ErrState)
	}
	// Durable first: a restart must keep refusing the device.
	if err := c.store.MarkRemoved(id); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	c.removed[id] = true
	d.removed = true
	c.front.Log.Info("device removed by the teacher", "device", wsconn.ShortID(id))
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
				c.vecs.Put(u.vec)
			}
		}
		delete(or.cohort, id)
		or.dropped[id] = true
		d.round = 0
		control(d.conn, wire.Decision{T: or.t, State: wire.Excluded, Reason: "removed by the teacher"})
		or.checkAllIn()
	}
	if d.conn != nil {
		d.conn.CloseWith(wire.CodeRemoved, reasonRemoved)
	}
	c.signal()
	return nil
}

// ErrBadTask is wrapped by a teacher's task definition that cannot make
// a session (answered 400 and counted as a "task" rejection).
var ErrBadTask = errors.New("the task cannot be used")

// teacherTask reads the task definition a POST /api/teacher/new may
// carry (browserfl.task/v1 JSON; an empty body: none, the coordinator's
// own task).
func teacherTask(r *http.Request) (*task.Definition, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, task.MaxDefinitionBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTask, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	def, err := task.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTask, err)
	}
	return def, nil
}

var errNoNewSession = errors.New("coordinator: this coordinator cannot start a new session (no host)")
