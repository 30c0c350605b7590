package coordinator_test

import (
	"fmt"
	"os"
	"path/filepath"

	"browserfl/coordinator/store"
)

// The store answers a resuming device's question "was my update of round
// t included?" from the committed round records.
func ExampleStore() {
	dir, _ := os.MkdirTemp("", "store-example")
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, "coord.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()

	// Round 1: devices a and b were sampled, only a's update arrived in
	// time. One transaction stores the record and the server state.
	rec := store.RoundRecord{T: 1, Cohort: []string{"a", "b"}, Included: []string{"a"}}
	if err := st.CommitRound(rec, []byte("server state after round 1")); err != nil {
		panic(err)
	}
	got, ok, _ := st.Round(1)
	fmt.Println(ok, got.Includes("a"), got.Includes("b"))
	_, ok, _ = st.Round(2)
	fmt.Println("round 2 committed:", ok)
	// Output:
	// true true false
	// round 2 committed: false
}
