package store_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"browserfl/coordinator/store"
)

// The store keeps each committed round's server state once, among the
// last KeepStates: State returns the committed round's, RollBack returns
// to any kept round (0: no state), and a reopened store reads the same.
func TestStoreStateAndRollBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	stateOf := func(r int) string { return fmt.Sprintf("state after round %d", r) }
	const rounds = store.KeepStates + 4
	for r := 1; r <= rounds; r++ {
		if err := st.CommitRound(store.RoundRecord{T: r}, []byte(stateOf(r))); err != nil {
			t.Fatal(err)
		}
		n, s, err := st.State()
		if err != nil || n != r || string(s) != stateOf(r) {
			t.Fatalf("after round %d: State = %d, %q, %v", r, n, s, err)
		}
	}
	oldest, committed, err := st.RollBackRange()
	if err != nil || oldest != rounds-store.KeepStates+1 || committed != rounds {
		t.Fatalf("RollBackRange = %d, %d, %v; want %d, %d", oldest, committed, err, rounds-store.KeepStates+1, rounds)
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
	st, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, s, err := st.State(); err != nil || n != to || string(s) != stateOf(to) {
		t.Fatalf("after RollBack(%d) and reopening: State = %d, %q, %v", to, n, s, err)
	}
	// The next commit follows the round rolled back to.
	if err := st.CommitRound(store.RoundRecord{T: to + 1}, []byte("again")); err != nil {
		t.Fatal(err)
	}
	if n, s, _ := st.State(); n != to+1 || string(s) != "again" {
		t.Fatalf("after recommitting round %d: State = %d, %q", to+1, n, s)
	}
}

// A store written before each state had a bucket of its own keeps its
// states as plain values of the states bucket: they are still read, rolled
// back to and deleted as rounds go on, next to states in the new form.
func TestStoreReadsPlainStates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	// Rounds 1 to 3 as the earlier store wrote them.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := func(r int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(r)) }
	err = db.Update(func(tx *bolt.Tx) error {
		for r := 1; r <= 3; r++ {
			if err := tx.Bucket([]byte("states")).Put(key(r), []byte(fmt.Sprintf("plain %d", r))); err != nil {
				return err
			}
			rb, _ := json.Marshal(store.RoundRecord{T: r})
			if err := tx.Bucket([]byte("rounds")).Put(key(r), rb); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("committed"), key(3))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	st, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, s, err := st.State(); err != nil || n != 3 || string(s) != "plain 3" {
		t.Fatalf("State = %d, %q, %v; want 3, the plain state", n, s, err)
	}
	for r := 4; r <= store.KeepStates+2; r++ {
		if err := st.CommitRound(store.RoundRecord{T: r}, []byte(fmt.Sprintf("new %d", r))); err != nil {
			t.Fatal(err)
		}
	}
	// Rounds 1 and 2 are no longer kept (their plain values are deleted),
	// round 3's plain state still is.
	oldest, committed, err := st.RollBackRange()
	if err != nil || oldest != 3 || committed != store.KeepStates+2 {
		t.Fatalf("RollBackRange = %d, %d, %v; want 3, %d", oldest, committed, err, store.KeepStates+2)
	}
	if err := st.RollBack(3); err != nil {
		t.Fatal(err)
	}
	if n, s, err := st.State(); err != nil || n != 3 || string(s) != "plain 3" {
		t.Fatalf("after RollBack(3): State = %d, %q, %v", n, s, err)
	}
	if err := st.CommitRound(store.RoundRecord{T: 4}, []byte("again")); err != nil {
		t.Fatal(err)
	}
	if n, s, _ := st.State(); n != 4 || string(s) != "again" {
		t.Fatalf("after recommitting round 4: State = %d, %q", n, s)
	}
}

// TestOpenRefusesADamagedStore: a store with a page overwritten on disk
// (zeros, as a failing disk or a bad copy leaves it) is refused at Open
// with ErrDamaged, not opened to panic on every later read; every page
// is tried in turn, and each that holds the store's keys is refused.
func TestOpenRefusesADamagedStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for r := 1; r <= 60; r++ {
		rec := store.RoundRecord{T: r, Cohort: []string{fmt.Sprintf("device-%03d", r)}, Included: []string{fmt.Sprintf("device-%03d", r)}}
		if err := st.CommitRound(rec, make([]byte, 700)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	refused := 0
	// Pages 0 and 1 are bbolt's meta pages (it checks them itself), 2 its
	// freelist; the rest hold buckets, keys and values or are free.
	for p := 3; p < len(good)/page; p++ {
		bad := append([]byte(nil), good...)
		clear(bad[p*page : (p+1)*page])
		damaged := filepath.Join(dir, fmt.Sprintf("damaged-%d.db", p))
		if err := os.WriteFile(damaged, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := store.Open(damaged)
		if err == nil {
			// A free page: everything must read back.
			_, _, serr := st.State()
			_, rerr := st.Rounds(0, 100)
			st.Close()
			if serr != nil || rerr != nil {
				t.Errorf("page %d zeroed: opened, then State: %v, Rounds: %v", p, serr, rerr)
			}
			continue
		}
		if !errors.Is(err, store.ErrDamaged) {
			t.Errorf("page %d zeroed: err = %v, want %v", p, err, store.ErrDamaged)
		}
		refused++
	}
	t.Logf("%d of %d pages: a zeroed page refused at Open", refused, len(good)/page-3)
	if refused == 0 {
		t.Fatalf("no zeroed page of the %d was refused", len(good)/page)
	}
}
