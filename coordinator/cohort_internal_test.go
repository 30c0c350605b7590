package coordinator

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"browserfl/coordinator/bus"
	"browserfl/coordinator/roster"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// recLink is a link that records the control messages it is sent.
type recLink struct {
	id   string
	msgs []wire.Message
}

func (l *recLink) DeviceID() string                { return l.id }
func (l *recLink) SetDeviceID(id string)           { l.id = id }
func (l *recLink) Send(wsconn.OutFrame) bool       { return true }
func (l *recLink) SendRound(f wsconn.OutFrame) int { return len(f.Data) }
func (l *recLink) SendControl(m wire.Message) bool { l.msgs = append(l.msgs, m); return true }
func (l *recLink) CloseWith(code, reason string)   {}

// TestAggregatePastCohort: a round over-selects (four members for a
// cohort m = 2: engine.PlanCohort) and has one update; an edge's sum of two more
// would take it past m, which the server half refuses (optim checks n <=
// m). The sum is refused whole, its members are excluded at once and
// told so, and the round keeps at most m updates; a sum of one is taken.
func TestAggregatePastCohort(t *testing.T) {
	sess := wire.SessionParams{Name: "past", Dim: 4, DeadlineMillis: 5000, Algorithm: "nc", Model: "logreg",
		Features: 1, Classes: 2, M: 4, Cohort: 2, Rounds: 3, Batch: 1, Clip: 1, Eta: 1, Rho: 1}
	srv, st := ncServerAndStore(t, sess)
	c, err := New(Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"a", "b", "c", "d"}
	links := map[string]*recLink{}
	or := &openRound{t: 1, cohort: map[string]bool{}, updates: map[string]*update{}, dropped: map[string]bool{},
		allIn: make(chan struct{}), target: 2, unsure: map[string]bool{}}
	c.mu.Lock()
	for _, id := range ids {
		links[id] = &recLink{id: id}
		c.roster.Add(&roster.Device{ID: id, Conn: links[id], Round: 1})
		or.cohort[id] = true
	}
	or.updates["a"] = &update{}
	c.loop.open = or
	c.mu.Unlock()
	body := bus.EncodeVector(nil, make([]float64, sess.Dim))
	if c.AcceptAggregate(1, []Link{links["b"], links["c"]}, []string{"b", "c"}, body, 100, nil) {
		t.Fatal("a sum of 2 was taken into a round of m = 2 that had 1 update")
	}
	c.mu.Lock()
	n := len(or.updates)
	c.mu.Unlock()
	if n > sess.Cohort {
		t.Fatalf("the round holds %d updates, more than m = %d", n, sess.Cohort)
	}
	for _, id := range []string{"b", "c"} {
		if or.cohort[id] || len(links[id].msgs) != 1 {
			t.Fatalf("member %s: in the cohort %v, told %v; want excluded at once", id, or.cohort[id], links[id].msgs)
		}
		if d, ok := links[id].msgs[0].(wire.Decision); !ok || d.State != wire.Excluded {
			t.Fatalf("member %s told %+v, want excluded", id, links[id].msgs[0])
		}
	}
	if !c.AcceptAggregate(1, []Link{links["d"]}, []string{"d"}, body, 100, nil) {
		t.Fatal("a sum of 1 was refused from a round of m = 2 with 1 update")
	}
	if !or.closed || len(or.included) != 2 {
		t.Fatalf("after its target: closed %v, included %v; want closed with 2", or.closed, or.included)
	}
}

// ncServerAndStore returns sess's server half (zero seed) and a store in
// a temporary directory, closed when the test ends.
func ncServerAndStore(t testing.TB, sess wire.SessionParams) (optim.Server, *store.Store) {
	t.Helper()
	var seed mechanism.Seed
	srv, err := optim.NewServer(sess, make([]float64, sess.Dim), mechanism.NewStream(seed, 0))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return srv, st
}

// TestRoundReady: a round starts at once with a whole cohort eligible or
// every live device eligible, after the fill wait with at least
// min-devices askable, and never with fewer than min-devices askable, even
// with a whole cohort eligible (min-devices above m: the round loop spun).
func TestRoundReady(t *testing.T) {
	for _, tc := range []struct {
		e, n, min, m int
		present      bool
		start, fill  bool
	}{
		{10, 10, 2, 10, false, true, false},
		{3, 3, 2, 10, true, true, false},
		{3, 3, 2, 10, false, false, true},
		{1, 1, 2, 10, false, false, false},
		{0, 2, 2, 10, true, true, false},  // a recovery round
		{5, 5, 8, 5, false, false, false}, // min-devices above m: wait
		{5, 5, 8, 5, true, false, false},
		{5, 8, 8, 5, false, true, false},
	} {
		start, fill := roundReady(tc.e, tc.n, tc.min, tc.m, tc.present)
		if start != tc.start || fill != tc.fill {
			t.Errorf("roundReady(e %d, n %d, min %d, m %d, present %v) = %v, %v; want %v, %v",
				tc.e, tc.n, tc.min, tc.m, tc.present, start, fill, tc.start, tc.fill)
		}
	}
}
