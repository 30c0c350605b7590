package coordinator

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// TestPlanCohort: the cohort rule with over-selection (cohort.go). When
// every eligible device is sure the round asks exactly the old cohort,
// optim.SampleCohort(eligible, m); every member that is not sure brings
// one more sure device from further along the same permutation, as long
// as there is one; probes come on top; the target stays min(m, eligible)
// whatever is added.
func TestPlanCohort(t *testing.T) {
	ids := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%02d", prefix, i))
		}
		return out
	}
	honest := ids("h", 10)
	sybils := ids("s", 30)
	all := slices.Sorted(slices.Values(append(slices.Clone(honest), sybils...)))
	isHonest := func(id string) bool { return id[0] == 'h' }
	for _, tc := range []struct {
		name      string
		eligible  []string
		sure      func(string) bool
		probeable []string
		m, probes int
		// wantOld: the members are exactly the old cohort.
		wantOld bool
		// wantSure: the sure members number min(m, sure eligible).
		wantSure bool
	}{
		{name: "all sure", eligible: honest, sure: isHonest, m: 4, wantOld: true, wantSure: true},
		{name: "all sure, fewer than m", eligible: honest[:3], sure: isHonest, m: 4, wantOld: true, wantSure: true},
		{name: "nobody sure (a new session)", eligible: all, sure: func(string) bool { return false }, m: 4, wantOld: true},
		{name: "sybils among sure devices", eligible: all, sure: isHonest, m: 4, wantSure: true},
		{name: "sybils, fewer sure than m", eligible: append(slices.Clone(honest[:2]), sybils...), sure: isHonest, m: 4, wantSure: true},
		{name: "sybils and probes", eligible: all, sure: isHonest, probeable: ids("p", 5), m: 4, probes: 2, wantSure: true},
		{name: "probes only when a round runs", eligible: nil, sure: isHonest, probeable: ids("p", 5), m: 4, probes: 2, wantOld: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := 1; round <= 50; round++ {
				p := planCohort(tc.eligible, tc.sure, tc.probeable, tc.m, tc.probes, 42, round)
				k := min(tc.m, len(tc.eligible))
				old := optim.SampleCohort(tc.eligible, k, 42, round)
				slices.Sort(old)
				if p.target != k {
					t.Fatalf("round %d: target %d, want %d", round, p.target, k)
				}
				if !slices.IsSorted(p.members) || len(slices.Compact(slices.Clone(p.members))) != len(p.members) {
					t.Fatalf("round %d: members not sorted and distinct: %v", round, p.members)
				}
				for _, id := range old {
					if !slices.Contains(p.members, id) {
						t.Fatalf("round %d: old cohort member %s not asked", round, id)
					}
				}
				if tc.wantOld && !slices.Equal(p.members, old) {
					t.Fatalf("round %d: members %v, want the old cohort %v", round, p.members, old)
				}
				sure, probes := 0, 0
				for _, id := range p.members {
					switch {
					case slices.Contains(tc.probeable, id):
						probes++
						if !p.unsure[id] {
							t.Fatalf("round %d: probe %s not marked unsure", round, id)
						}
					case tc.sure(id):
						sure++
						if p.unsure[id] {
							t.Fatalf("round %d: sure member %s marked unsure", round, id)
						}
					default:
						if !p.unsure[id] {
							t.Fatalf("round %d: unsure member %s not marked", round, id)
						}
					}
				}
				nsure := 0
				for _, id := range tc.eligible {
					if tc.sure(id) {
						nsure++
					}
				}
				if tc.wantSure && sure != min(tc.m, nsure) {
					t.Fatalf("round %d: %d sure members, want %d (members %v)", round, sure, min(tc.m, nsure), p.members)
				}
				if want := min(tc.probes, len(tc.probeable)); k > 0 && probes != want || k == 0 && probes != 0 {
					t.Fatalf("round %d: %d probes, want %d", round, probes, want)
				}
				if p.extra != len(p.members)-k || p.probes != probes {
					t.Fatalf("round %d: extra %d probes %d, members %d target %d", round, p.extra, p.probes, len(p.members), k)
				}
			}
		})
	}
}

// recLink is a link that records the control messages it is sent.
type recLink struct {
	id   string
	msgs []wire.Message
}

func (l *recLink) deviceID() string                { return l.id }
func (l *recLink) setDeviceID(id string)           { l.id = id }
func (l *recLink) send(outFrame) bool              { return true }
func (l *recLink) sendRound(f outFrame) int        { return len(f.data) }
func (l *recLink) sendControl(m wire.Message) bool { l.msgs = append(l.msgs, m); return true }
func (l *recLink) closeWith(code, reason string)   {}

// TestAggregatePastCohort: a round over-selects (four members for a
// cohort m = 2, cohort.go) and has one update; an edge's sum of two more
// would take it past m, which the server half refuses (optim checks n <=
// m). The sum is refused whole, its members are excluded at once and
// told so, and the round keeps at most m updates; a sum of one is taken.
func TestAggregatePastCohort(t *testing.T) {
	sess := wire.SessionParams{Name: "past", Dim: 4, DeadlineMillis: 5000, Algorithm: "nc", Model: "logreg",
		Features: 1, Classes: 2, M: 4, Cohort: 2, Rounds: 3, Batch: 1, Clip: 1, Eta: 1, RhoPaper: 1}
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
	body := encodeVector(nil, make([]float64, sess.Dim))
	if c.acceptAggregate(1, []link{links["b"], links["c"]}, []string{"b", "c"}, body, 100, nil) {
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
	if !c.acceptAggregate(1, []link{links["d"]}, []string{"d"}, body, 100, nil) {
		t.Fatal("a sum of 1 was refused from a round of m = 2 with 1 update")
	}
	if !or.closed || len(or.included) != 2 {
		t.Fatalf("after its target: closed %v, included %v; want closed with 2", or.closed, or.included)
	}
}
