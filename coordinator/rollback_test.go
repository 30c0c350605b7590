package coordinator_test

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"browserfl/coordinator"
	"browserfl/coordinator/internal/nctest"
	"browserfl/coordinator/store"
)

// TestUnservableStoreAndRollBack: a store whose committed state cannot be
// served (a model coordinate beyond float32) is refused by New with an
// error that names the rounds a roll back can return to; RollBack to an
// earlier round restores that round's state and forgets the later records.
func TestUnservableStoreAndRollBack(t *testing.T) {
	sess := testSession(4, 2, 2, 30, 1000)
	st, err := store.Open(filepath.Join(t.TempDir(), "coord.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := nctest.NewServer(sess.Dim, sess.Cohort, 0.5)
	good := map[int][]byte{}
	for r := 1; r <= 20; r++ {
		if r == 20 {
			srv.X[0] = math.MaxFloat64 // finite, but no float32 frame holds it
		}
		srv.T = r + 1
		state, _ := srv.MarshalBinary()
		good[r] = state
		if err := st.CommitRound(coordinator.CoordinatorRecord(r, "a"), state); err != nil {
			t.Fatal(err)
		}
	}
	_, err = coordinator.New(coordinator.Config{Session: sess, JoinCode: "x", Server: nctest.NewServer(sess.Dim, sess.Cohort, 0.5),
		Store: st, Logger: quietLogger()})
	if !errors.Is(err, coordinator.ErrUnservable) || !strings.Contains(err.Error(), "rounds 5 to 20") {
		t.Fatalf("New on an unservable store: %v; want ErrUnservable naming rounds 5 to 20", err)
	}
	if err := st.RollBack(4); err == nil {
		t.Error("roll back beyond the kept states accepted")
	}
	if err := st.RollBack(19); err != nil {
		t.Fatal(err)
	}
	committed, state, err := st.State()
	if err != nil || committed != 19 || string(state) != string(good[19]) {
		t.Fatalf("after roll back: committed %d, state equal %v, %v", committed, string(state) == string(good[19]), err)
	}
	if _, ok, _ := st.Round(20); ok {
		t.Error("round 20's record survived the roll back")
	}
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "x", Server: nctest.NewServer(sess.Dim, sess.Cohort, 0.5),
		Store: st, Logger: quietLogger()})
	if err != nil || c.Committed() != 19 {
		t.Fatalf("New after roll back: %v", err)
	}
}

// TestStoreInUse: a second coordinator on the same data folder is told the
// folder is in use, not "timeout".
func TestStoreInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coord.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = store.Open(path)
	if !errors.Is(err, store.ErrInUse) || !strings.Contains(err.Error(), "another coordinator") {
		t.Fatalf("second open: %v, want store.ErrInUse", err)
	}
}
