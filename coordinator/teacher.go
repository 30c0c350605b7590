package coordinator

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"time"
)

// The teacher's endpoints. Each needs the teacher secret (Config.
// TeacherSecret) in the X-Teacher-Secret header or the teacher query
// parameter, compared in constant time; without it the answer is 403 and
// browserfl_rejections_total{kind="teacher_secret"} counts it. The join
// code alone never unlocks them.
//
//	POST /api/teacher/start   leave the lobby (Start)
//	POST /api/teacher/pause   no new rounds (Pause)
//	POST /api/teacher/resume  rounds again (Resume)
//	POST /api/teacher/end     finish now (End)
//	POST /api/teacher/new     end this session, start a fresh one (Config.NewSession)
//
// A call that does not fit the session's state answers 409 with the
// reason; success answers 200 with the new Status (teacher: true), or
// for /new with the new session (NewSessionInfo: id, join_code,
// dashboard).

// TeacherHeader carries the teacher secret.
const TeacherHeader = "X-Teacher-Secret"

// teacherOK reports whether r carries the teacher secret.
func (c *Coordinator) teacherOK(r *http.Request) bool {
	return checkTeacher(r, c.cfg.TeacherSecret)
}

func checkTeacher(r *http.Request, secret string) bool {
	if secret == "" {
		return false
	}
	got := r.Header.Get(TeacherHeader)
	if got == "" {
		got = r.URL.Query().Get("teacher")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(secret)) == 1
}

func (c *Coordinator) teacherRoutes(mux *http.ServeMux) {
	do := func(name string, f func(ctx context.Context) (any, error)) {
		mux.HandleFunc("POST /api/teacher/"+name, func(w http.ResponseWriter, r *http.Request) {
			if !c.teacherOK(r) {
				c.met.reject(rejTeacherSecret)
				http.Error(w, "teacher secret required", http.StatusForbidden)
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
			defer cancel()
			out, err := f(ctx)
			if err != nil {
				code := http.StatusInternalServerError
				if errors.Is(err, ErrState) || errors.Is(err, errNoNewSession) {
					code = http.StatusConflict
				}
				c.log.Warn("teacher action failed", "action", name, "err", err)
				http.Error(w, err.Error(), code)
				return
			}
			c.log.Info("teacher action", "action", name)
			if out == nil {
				s := c.Status()
				s.Teacher = true
				out = s
			}
			writeJSON(w, out)
		})
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
}

var errNoNewSession = errors.New("coordinator: this coordinator cannot start a new session (no host)")
