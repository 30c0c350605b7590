// Package api is the HTTP API over one session: the JSON of the session,
// its status, progress, rounds and model, the join QR code, the demo
// shards, the teacher's controls (teacher.go), the projector's words
// (projector.go), the plan warnings (warnings.go), /metrics and
// /healthz, and the page and dashboard files of coordinator/site
// (Handler lists the routes). A finished session is answered from its
// store alone (ServeArchived).
//
// It sits above the session core (package coordinator) and reaches it
// only through Session, a small interface the Coordinator implements
// with exported methods; the core knows nothing of HTTP routes. Every
// response carries the headers of site.SecurityHeaders; everything that
// describes a session needs its join code (WithCode), the teacher's
// controls its teacher secret (RequireTeacher), both checked by the
// session's gate with a per-address backoff.
package api

import (
	"context"
	"io"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// Session is what the API reads and calls of a running session (a
// *coordinator.Coordinator).
type Session interface {
	// Status is the session's snapshot for /api/status, before the
	// API adds the warnings, join figures and projector words.
	Status() view.Status
	// Session is the current plan: the template in the lobby, the final
	// one from Start on.
	Session() wire.SessionParams
	Committed() int
	Activity() view.Activity
	Model() view.ModelSnapshot
	// Config gives the join code, the teacher secret, the template, the
	// evaluation period and NewSession.
	Config() coordinator.Config
	Store() *store.Store
	Front() *wsconn.Front
	Started() time.Time
	WriteMetrics(w io.Writer) error

	// The teacher's controls.
	Start(ctx context.Context) error
	Pause() error
	Resume() error
	End() error
	Remove(id string) error
}

var _ Session = (*coordinator.Coordinator)(nil)
