package roster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"browserfl/coordinator/wsconn"
	"browserfl/engine"
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

// TestWhoMayBeAsked: a round asks a device (sampled or as a probe) only
// when it is connected, idle, not left and not removed; its misses decide
// which. A removed device keeps its connection until its close is read,
// so removal alone must keep it out of both lists.
func TestWhoMayBeAsked(t *testing.T) {
	const max = 3
	r := New(max, false)
	for _, tc := range []struct {
		name                string
		d                   Device
		eligible, probeable bool
	}{
		{"idle and answering", Device{}, true, false},
		{"idle, missed its last rounds", Device{Standing: standingOf(max, false, 0)}, false, true},
		{"not connected", Device{Standing: standingOf(max, false, 0), Conn: nil}, false, false},
		{"in a round", Device{Round: 1}, false, false},
		{"in a round, missed", Device{Round: 1, Standing: standingOf(max, false, 0)}, false, false},
		{"left", Device{Left: true}, false, false},
		{"left, missed", Device{Left: true, Standing: standingOf(max, false, 0)}, false, false},
		{"removed", Device{Removed: true}, false, false},
		{"removed, missed", Device{Removed: true, Standing: standingOf(max, false, 0)}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.d
			d.ID = "x"
			if tc.name != "not connected" {
				d.Conn = &recLink{id: d.ID}
			}
			if got := r.Eligible(&d); got != tc.eligible {
				t.Errorf("eligible = %v, want %v", got, tc.eligible)
			}
			if got := r.Probeable(&d); got != tc.probeable {
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
	const max = 3
	r := New(max, false)
	for _, d := range []*Device{
		{ID: "idle", Standing: standingOf(max, false, 0)},    // never delivered
		{ID: "proven", Standing: standingOf(max, true, 0)},   // delivered, then missed
		{ID: "rejected", Standing: standingOf(max, true, 1)}, // one update failed validation
	} {
		d.Conn = &recLink{id: d.ID}
		r.Add(d)
	}
	now := time.Now()
	var after time.Time // no pause
	if got := r.Probes(0, now, after); !slices.Equal(got, []string{"idle", "proven"}) {
		t.Errorf("recovery round offered %v, want [idle proven]", got)
	}
	if got := r.Probes(1, now, after); !slices.Equal(got, []string{"idle", "proven", "rejected"}) {
		t.Errorf("probes beside an eligible device %v, want all three", got)
	}
	after = now.Add(time.Second)
	if got := r.Probes(0, now, after); len(got) != 0 {
		t.Errorf("recovery round offered %v during the pause, want none", got)
	}
	if got := r.Probes(0, now.Add(2*time.Second), after); !slices.Equal(got, []string{"idle", "proven"}) {
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
		if got := NextRecoveryPause(tc.recovery, tc.included, tc.prev); got != tc.want {
			t.Errorf("NextRecoveryPause(recovery %v, included %v, %v) = %v, want %v", tc.recovery, tc.included, tc.prev, got, tc.want)
		}
	}
}

// TestDeviceOrder: the sorted device order the cohort rule scans stays
// equal to the device table, sorted by id, through joins and evictions in
// any order, and EligibleIDs returns exactly the eligible ids, sorted
// (the order optim.SampleCohort is specified over).
func TestDeviceOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))

	r := New(2, false)
	for step := 0; step < 2000; step++ {
		id := fmt.Sprintf("dev-%03d", rng.IntN(300))
		if d := r.Get(id); d == nil {
			d = &Device{ID: id, Standing: standingOf(rng.IntN(3), false, 0)}
			if rng.IntN(4) > 0 {
				d.Conn = &wsconn.Conn{}
			}
			r.Add(d)
		} else if rng.IntN(2) == 0 {
			r.drop(id)
		}
		if step%97 != 0 {
			continue
		}
		var want, wantEligible []string
		for id, d := range r.devices {
			want = append(want, id)
			if d.Conn != nil && d.Standing.Misses() < 2 {
				wantEligible = append(wantEligible, id)
			}
		}
		slices.Sort(want)
		slices.Sort(wantEligible)
		got := make([]string, len(r.order))
		for i, d := range r.order {
			got[i] = d.ID
			if r.Get(d.ID) != d {
				t.Fatalf("step %d: order holds %s, not the table's device", step, d.ID)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: order %v, want %v", step, got, want)
		}
		if e := r.EligibleIDs(); !slices.Equal(e, wantEligible) || r.CountEligible() != len(e) {
			t.Fatalf("step %d: eligible %v (count %d), want %v", step, e, r.CountEligible(), wantEligible)
		}
	}
	r.drop("not-there") // no-op
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
