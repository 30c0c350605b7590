package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"browserfl/coordinator/store"
	"browserfl/coordinator/view"
	"browserfl/shared/wire"
)

// The session states (view.Status.State). A session with a lobby starts
// in Lobby; Start moves it to Running; Pause and Resume move between
// Running and Paused; End, or the last round, moves it to Ended, which
// is final.
const (
	Lobby   = "lobby"
	Running = "running"
	Paused  = "paused"
	Ended   = "ended"
)

// ErrState is wrapped by the teacher's controls when the session is not
// in a state the call applies to.
var ErrState = errors.New("coordinator: not possible in the session's state")

// Record is what the store keeps of a session's state: the state and,
// once started, the final parameters.
type Record struct {
	State      string             `json:"state"`
	Session    wire.SessionParams `json:"session"`
	Started    time.Time          `json:"started,omitzero"`
	Ended      time.Time          `json:"ended,omitzero"`
	EndedEarly bool               `json:"ended_early,omitempty"`
	// People is the dashboard's list when the session ended (no device
	// ids), so that a finished session can still be shown.
	People []view.Person `json:"people,omitempty"`
}

const keyLifecycle = "lifecycle"

// Read returns the record stored in s (State "" if none was stored: a
// session without a lobby that has not ended).
func Read(s *store.Store) (Record, error) {
	var l Record
	v, err := s.Meta(keyLifecycle)
	if err == nil && v != nil {
		err = json.Unmarshal(v, &l)
	}
	if err != nil {
		return Record{}, fmt.Errorf("read lifecycle: %w", err)
	}
	return l, nil
}

// Put stores l in s.
func Put(s *store.Store, l Record) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("store lifecycle: %w", err)
	}
	if err := s.PutMeta(keyLifecycle, b); err != nil {
		return fmt.Errorf("store lifecycle: %w", err)
	}
	return nil
}
