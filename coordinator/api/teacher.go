package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/gate"
	"browserfl/coordinator/metrics"
	"browserfl/coordinator/site"
	"browserfl/coordinator/view"
	"browserfl/shared/task"
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
//	                          that task, ?algorithm=nc|shared one run that way
//	                          (plan.WithAlgorithm; one of the teacher's status's
//	                          teacher_choice, or the session's own way); 400 and
//	                          kind="task" if it cannot be one; the way alone that
//	                          the current lobby runs changes nothing
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
func TeacherAuth(c Session, w http.ResponseWriter, r *http.Request, secret string) (ok, answered bool) {
	got := teacherSecretOf(r)
	if got == "" {
		return false, false
	}
	switch v, retry := c.Front().Gate.CheckTeacher(c.Front().Gate.ClientAddr(r), got, secret); v {
	case gate.OK:
		return true, false
	case gate.Throttled:
		c.Front().Met.Reject(metrics.RejTeacherThrottled)
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
		http.Error(w, "too many wrong teacher secrets from this address", http.StatusTooManyRequests)
	default:
		c.Front().Met.Reject(metrics.RejTeacherSecret)
		http.Error(w, "wrong teacher secret", http.StatusForbidden)
	}
	return false, true
}

// RequireTeacher lets r through (true) with the right teacher secret
// only: without one it answers 403 and counts it, with a wrong one as
// TeacherAuth does.
func RequireTeacher(c Session, w http.ResponseWriter, r *http.Request, secret string) bool {
	ok, answered := TeacherAuth(c, w, r, secret)
	if !ok && !answered {
		c.Front().Met.Reject(metrics.RejTeacherSecret)
		http.Error(w, "teacher secret required", http.StatusForbidden)
	}
	return ok
}

// teacherRoutes registers the teacher's controls; a control that
// returns nothing of its own answers with statusFor's status, as GET
// /api/status shows it to the teacher.
func teacherRoutes(c Session, mux *http.ServeMux, statusFor func(*http.Request) view.Status) {
	doReq := func(name string, f func(ctx context.Context, r *http.Request) (any, error)) {
		mux.HandleFunc("POST /api/teacher/"+name, func(w http.ResponseWriter, r *http.Request) {
			if !RequireTeacher(c, w, r, c.Config().TeacherSecret) {
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
			defer cancel()
			out, err := f(ctx, r)
			if err != nil {
				code := http.StatusInternalServerError
				switch {
				case errors.Is(err, coordinator.ErrState) || errors.Is(err, errNoNewSession):
					code = http.StatusConflict
				case errors.Is(err, coordinator.ErrNoSuchDevice):
					code = http.StatusNotFound
				case errors.Is(err, ErrBadTask) || errors.Is(err, ErrBadChoice):
					code = http.StatusBadRequest
					c.Front().Met.Reject(metrics.RejTask)
				}
				c.Front().Log.Warn("teacher action failed", "action", name, "err", err)
				http.Error(w, err.Error(), code)
				return
			}
			c.Front().Log.Info("teacher action", "action", name)
			if out == nil {
				s := statusFor(r)
				s.ForTeacher(c.Config().TeacherAlgorithms)
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
		newSession := c.Config().NewSession
		if newSession == nil {
			return nil, errNoNewSession
		}
		def, err := teacherTask(r)
		if err != nil {
			return nil, err
		}
		alg := r.URL.Query().Get("algorithm")
		if len(alg) > maxAlgorithmName {
			return nil, fmt.Errorf("%w: a way of learning named by %d bytes", ErrBadTask, len(alg))
		}
		return newSession(ctx, coordinator.NewSessionRequest{Task: def, Algorithm: alg})
	})
	doReq("remove", func(_ context.Context, r *http.Request) (any, error) {
		return nil, c.Remove(r.URL.Query().Get("device"))
	})
}

// ErrBadTask is wrapped by a teacher's task definition or way of
// learning that cannot make a session (answered 400 and counted as a
// "task" rejection).
var ErrBadTask = errors.New("the task cannot be used")

// ErrBadChoice is wrapped by a teacher's way of learning that cannot
// make a session here (answered 400 and counted as a "task" rejection,
// as ErrBadTask).
var ErrBadChoice = errors.New("this way of learning cannot be used")

// maxAlgorithmName bounds the algorithm a POST /api/teacher/new may ask
// for (the names are short words: algo.Names).
const maxAlgorithmName = 32

// teacherTask reads the task definition a POST /api/teacher/new may
// carry (browserfl.task/v1 JSON; an empty body: none, the coordinator's
// own task).
func teacherTask(r *http.Request) (*task.Definition, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, task.MaxDefinitionBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTask, err)
	}
	if len(b) > task.MaxDefinitionBytes {
		// Checked before the blank test: a task after 12 KiB of blanks
		// is refused, not taken for no task.
		return nil, fmt.Errorf("%w: over %d bytes, the most a task may have", ErrBadTask, task.MaxDefinitionBytes)
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
