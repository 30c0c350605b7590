package coordinator

import (
	"io"
	"log/slog"
	"testing"

	"browserfl/coordinator/gate"
	"browserfl/coordinator/roster"
	"browserfl/shared/wire"
)

// TestHistoryFromStart: a device's history is from its start (the
// persistence test, and limits by the rounds asked) only where this
// process has seen every ask and every inclusion of it: in a session no
// round of which was sent before the process (or a device it registered
// itself). A device the process evicted and that comes back, and one
// included through an edge's aggregate, are no longer from the start:
// their noise state holds draws the history never saw, and testing them
// as from the start would refuse an honest device for good.
func TestHistoryFromStart(t *testing.T) {
	sess := wire.SessionParams{Name: "hist", Dim: 4, DeadlineMillis: 5000, Algorithm: "nc", Model: "logreg",
		Features: 1, Classes: 2, M: 4, Cohort: 2, Rounds: 3, Batch: 1, Clip: 1, Eta: 1, Rho: 1}
	srv, st := ncServerAndStore(t, sess)
	c, err := New(Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st, Gate: gate.Config{MaxInactive: 1},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	bind := func(id string) *roster.Device {
		t.Helper()
		c.mu.Lock()
		defer c.mu.Unlock()
		if err := c.adm.bind(&recLink{id: id}, "", 0, &wire.Welcome{}); err != nil {
			t.Fatal(err)
		}
		return c.roster.Get(id)
	}
	leave := func(id string) {
		c.DisconnectedLink(c.roster.Get(id).Conn)
		c.front.Gate.MarkInactive(id)
	}
	for _, id := range []string{"a", "b", "c"} {
		if d := bind(id); !d.Hist.FromStart() {
			t.Fatalf("%s: not from the start in a session no round of which was sent", id)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		leave(id)
	}
	sessionHandler{c}.EvictInactive()
	c.mu.Lock()
	kept := c.roster.Get("a") != nil
	c.mu.Unlock()
	if kept {
		t.Fatal("the oldest inactive device was not evicted (test setting)")
	}
	if d := bind("a"); d.Hist.FromStart() {
		t.Error("an evicted device came back with a history from the start")
	}

	// An inclusion through an edge's aggregate starts the history again,
	// no longer from the start.
	d := bind("e")
	d.Hist.Ask()
	d.Hist.Include([]float64{1, 2, 3, 4})
	or := &openRound{t: 1, cohort: map[string]bool{"e": true}, updates: map[string]*update{"e": {agg: true}},
		dropped: map[string]bool{}, allIn: make(chan struct{}), target: 1, unsure: map[string]bool{}}
	or.included = []string{"e"}
	c.mu.Lock()
	c.loop.addHistories(or)
	c.mu.Unlock()
	if d.Hist.FromStart() || d.Hist.Len() != 0 {
		t.Errorf("after an inclusion in an aggregate: from the start %v, %d messages; want false, 0", d.Hist.FromStart(), d.Hist.Len())
	}

	// A store whose rounds started (or that committed before the marker
	// existed): nothing is from the start but the devices registered now.
	if err := st.MarkRoundsStarted(); err != nil {
		t.Fatal(err)
	}
	c2, err := New(Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c2.mu.Lock()
	defer c2.mu.Unlock()
	if err := c2.adm.bind(&recLink{id: "old"}, "", 0, &wire.Welcome{}); err != nil {
		t.Fatal(err)
	}
	if err := c2.adm.bind(&recLink{id: "new"}, "", 0, &wire.Welcome{Secret: "fresh"}); err != nil {
		t.Fatal(err)
	}
	if c2.roster.Get("old").Hist.FromStart() || !c2.roster.Get("new").Hist.FromStart() {
		t.Errorf("after rounds started: returning device from the start %v (want false), new one %v (want true)",
			c2.roster.Get("old").Hist.FromStart(), c2.roster.Get("new").Hist.FromStart())
	}
}
