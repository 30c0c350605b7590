package coordinator

import (
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"browserfl/coordinator/bus"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/engine"
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
// cohort m = 2, cohort.go) and has one update; an edge's sum of two more
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
		c.addDeviceLocked(&device{id: id, conn: links[id], round: 1})
		or.cohort[id] = true
	}
	or.updates["a"] = &update{}
	c.round = or
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

// TestWhoMayBeAsked: a round asks a device (sampled or as a probe) only
// when it is connected, idle, not left and not removed; its misses decide
// which. A removed device keeps its connection until its close is read,
// so removal alone must keep it out of both lists.
func TestWhoMayBeAsked(t *testing.T) {
	c := smallCoordinator(t)
	max := c.front.Lim.MaxMisses
	for _, tc := range []struct {
		name                string
		d                   device
		eligible, probeable bool
	}{
		{"idle and answering", device{}, true, false},
		{"idle, missed its last rounds", device{standing: standingOf(max, false, 0)}, false, true},
		{"not connected", device{standing: standingOf(max, false, 0), conn: nil}, false, false},
		{"in a round", device{round: 1}, false, false},
		{"in a round, missed", device{round: 1, standing: standingOf(max, false, 0)}, false, false},
		{"left", device{left: true}, false, false},
		{"left, missed", device{left: true, standing: standingOf(max, false, 0)}, false, false},
		{"removed", device{removed: true}, false, false},
		{"removed, missed", device{removed: true, standing: standingOf(max, false, 0)}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.d
			d.id = "x"
			if tc.name != "not connected" {
				d.conn = &recLink{id: d.id}
			}
			if got := c.eligible(&d); got != tc.eligible {
				t.Errorf("eligible = %v, want %v", got, tc.eligible)
			}
			if got := c.probeable(&d); got != tc.probeable {
				t.Errorf("probeable = %v, want %v", got, tc.probeable)
			}
		})
	}
}

// TestRecoveryAsks: with nobody eligible, a recovery round is offered the
// probeable devices none of whose updates was rejected (also those that
// never delivered: after a restart none has), and none while the pause
// after an unanswered recovery round runs; beside an eligible device every
// probeable device may be a probe.
func TestRecoveryAsks(t *testing.T) {
	c := smallCoordinator(t)
	max := c.front.Lim.MaxMisses
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range []*device{
		{id: "idle", standing: standingOf(max, false, 0)},    // never delivered
		{id: "proven", standing: standingOf(max, true, 0)},   // delivered, then missed
		{id: "rejected", standing: standingOf(max, true, 1)}, // one update failed validation
	} {
		d.conn = &recLink{id: d.id}
		c.addDeviceLocked(d)
	}
	now := time.Now()
	if got := c.probesLocked(0, now); !slices.Equal(got, []string{"idle", "proven"}) {
		t.Errorf("recovery round offered %v, want [idle proven]", got)
	}
	if got := c.probesLocked(1, now); !slices.Equal(got, []string{"idle", "proven", "rejected"}) {
		t.Errorf("probes beside an eligible device %v, want all three", got)
	}
	c.recoveryAfter = now.Add(time.Second)
	if got := c.probesLocked(0, now); len(got) != 0 {
		t.Errorf("recovery round offered %v during the pause, want none", got)
	}
	if got := c.probesLocked(0, now.Add(2*time.Second)); !slices.Equal(got, []string{"idle", "proven"}) {
		t.Errorf("recovery round offered %v after the pause, want [idle proven]", got)
	}
}

// TestNextRecoveryPause: the pause doubles after each recovery round
// nobody answered, from 2 s to at most a minute; an ordinary empty round
// keeps it; any round with an included update ends it.
func TestNextRecoveryPause(t *testing.T) {
	for _, tc := range []struct {
		recovery, included bool
		prev, want         time.Duration
	}{
		{true, false, 0, 2 * time.Second},
		{true, false, 2 * time.Second, 4 * time.Second},
		{true, false, 32 * time.Second, time.Minute},
		{true, false, time.Minute, time.Minute},
		{false, false, 8 * time.Second, 8 * time.Second},
		{false, false, 0, 0},
		{true, true, 16 * time.Second, 0},
		{false, true, time.Minute, 0},
	} {
		if got := nextRecoveryPause(tc.recovery, tc.included, tc.prev); got != tc.want {
			t.Errorf("nextRecoveryPause(recovery %v, included %v, %v) = %v, want %v", tc.recovery, tc.included, tc.prev, got, tc.want)
		}
	}
}

// smallCoordinator is a coordinator of a small nc session (m = 2), not
// running, for tests of its rules.
func smallCoordinator(t *testing.T) *Coordinator {
	t.Helper()
	sess := wire.SessionParams{Name: "small", Dim: 4, DeadlineMillis: 5000, Algorithm: "nc", Model: "logreg",
		Features: 1, Classes: 2, M: 4, Cohort: 2, Rounds: 3, Batch: 1, Clip: 1, Eta: 1, Rho: 1}
	srv, st := ncServerAndStore(t, sess)
	c, err := New(Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c
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

// standingOf is a device's standing after an accepted update (if proven),
// then misses missed rounds and rejected refused updates.
func standingOf(misses int, proven bool, rejected int) engine.Standing {
	var s engine.Standing
	if proven {
		s.Accepted()
	}
	for range misses {
		s.Missed()
	}
	for range rejected {
		s.Refused()
	}
	return s
}
