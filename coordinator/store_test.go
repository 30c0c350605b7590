package coordinator_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"browserfl/coordinator"
)

// The store keeps each committed round's server state once, among the
// last KeepStates: State returns the committed round's, RollBack returns
// to any kept round (0: no state), and a reopened store reads the same.
func TestStoreStateAndRollBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	st, err := coordinator.OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	stateOf := func(r int) string { return fmt.Sprintf("state after round %d", r) }
	const rounds = coordinator.KeepStates + 4
	for r := 1; r <= rounds; r++ {
		if err := st.CommitRound(coordinator.RoundRecord{T: r}, []byte(stateOf(r))); err != nil {
			t.Fatal(err)
		}
		n, s, err := st.State()
		if err != nil || n != r || string(s) != stateOf(r) {
			t.Fatalf("after round %d: State = %d, %q, %v", r, n, s, err)
		}
	}
	oldest, committed, err := st.RollBackRange()
	if err != nil || oldest != rounds-coordinator.KeepStates+1 || committed != rounds {
		t.Fatalf("RollBackRange = %d, %d, %v; want %d, %d", oldest, committed, err, rounds-coordinator.KeepStates+1, rounds)
	}
	if err := st.RollBack(oldest - 1); err == nil {
		t.Errorf("RollBack(%d) below the kept rounds succeeded", oldest-1)
	}
	to := rounds - 3
	if err := st.RollBack(to); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = coordinator.OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, s, err := st.State(); err != nil || n != to || string(s) != stateOf(to) {
		t.Fatalf("after RollBack(%d) and reopening: State = %d, %q, %v", to, n, s, err)
	}
	// The next commit follows the round rolled back to.
	if err := st.CommitRound(coordinator.RoundRecord{T: to + 1}, []byte("again")); err != nil {
		t.Fatal(err)
	}
	if n, s, _ := st.State(); n != to+1 || string(s) != "again" {
		t.Fatalf("after recommitting round %d: State = %d, %q", to+1, n, s)
	}
}
