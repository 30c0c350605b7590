package api

import (
	"net/http"

	"browserfl/coordinator"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
)

// A finished session is read from its store alone: its Status, session,
// progress and rounds as the API answers them for the current one.

// ServeArchived answers GET /api/status, /api/session, /api/progress or
// /api/rounds for the finished session of store st (teacher: r carried
// the right teacher secret; the status then says so).
func ServeArchived(w http.ResponseWriter, r *http.Request, st *store.Store, teacher bool) {
	switch r.URL.Path {
	case "/api/status":
		s, err := archivedStatus(st)
		if err != nil {
			http.Error(w, "store error", http.StatusInternalServerError)
			return
		}
		s.Teacher = teacher
		site.WriteJSON(w, s)
	case "/api/session":
		s, err := archivedStatus(st)
		if err != nil {
			http.Error(w, "store error", http.StatusInternalServerError)
			return
		}
		site.WriteJSON(w, s.Session)
	case "/api/progress":
		s, err := archivedStatus(st)
		var p Progress
		if err == nil {
			p, err = storeProgress(st, s.Committed, s.Session.Rounds)
		}
		if err != nil {
			http.Error(w, "store error", http.StatusInternalServerError)
			return
		}
		site.WriteJSON(w, p)
	case "/api/rounds":
		serveRounds(w, r, st)
	}
}

// archivedStatus is the Status of a finished session, from its store.
func archivedStatus(st *store.Store) (view.Status, error) {
	var s view.Status
	life, err := coordinator.ReadLifecycle(st)
	if err != nil {
		return s, err
	}
	committed, _, err := st.State()
	if err != nil {
		return s, err
	}
	s.Session, s.State, s.People, s.Committed, s.Finished = life.Session, life.State, life.People, committed, true
	if s.State == "" {
		s.State = coordinator.StateEnded
	}
	if s.People == nil {
		s.People = []view.Person{}
	}
	if recs, err := st.Rounds(max(0, committed-1000), 1000); err == nil {
		for _, r := range recs {
			if r.Evaluated {
				s.LastEval = &view.EvalView{T: r.T, Accuracy: r.Accuracy, Loss: r.Loss, Samples: r.EvalSamples}
			}
		}
	}
	s.Privacy = view.SessionPrivacy(s.Session)
	return s, fillArchivedProjector(&s, st)
}
