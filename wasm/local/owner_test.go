package local

import (
	"errors"
	"math"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
)

func demoParams() optim.Params {
	eps, delta := plan.DefaultLessonTarget() // the default lesson
	return optim.Params{Algorithm: "nc", Model: "logreg", M: 30, Cohort: 10, Rounds: 200, Batch: 32, Clip: 1, Eta: 0.02, Epsilon: eps, Delta: delta}
}

// TestOwnerLedger runs sequences of sessions on the owner's data: each
// new session is charged on top of the earlier ones and refused when the
// total would pass the owner's budget.
func TestOwnerLedger(t *testing.T) {
	demo := demoParams()
	f, err := plan.SessionFigures(demo, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := f.WorstRho // 1.365; the default budget is about 1.388
	two, _ := privacy.LedgerEpsilon(2*w, plan.DefaultDelta)
	attack := demo
	attack.Rho, attack.Epsilon, attack.Delta = 0, 8, 0.999
	type step struct {
		op     string // "reserve" or "settle"
		id     string
		p      optim.Params
		rho    float64 // settle: the device ledger's rho
		ok     bool
		before float64 // reserve: spent elsewhere returned
		over   bool    // the refusal is the owner's budget (plan.ErrOverBudget)
	}
	tests := []struct {
		name  string
		owner plan.Budget
		steps []step
		total float64
	}{
		{"one session fits the default budget", plan.DefaultBudget(),
			[]step{{op: "reserve", id: "a", p: demo, ok: true}}, w},
		{"the same data in a second session is charged and refused", plan.DefaultBudget(),
			[]step{{op: "reserve", id: "a", p: demo, ok: true}, {op: "reserve", id: "b", p: demo, ok: false, over: true}}, w},
		{"a reload resumes its own charge", plan.DefaultBudget(),
			[]step{{op: "reserve", id: "a", p: demo, ok: true}, {op: "reserve", id: "a", p: demo, ok: true}}, w},
		{"a settled session leaves room", plan.DefaultBudget(),
			[]step{{op: "reserve", id: "a", p: demo, ok: true}, {op: "settle", id: "a", rho: 0.02, ok: true},
				{op: "reserve", id: "b", p: demo, ok: true, before: 0.02}, {op: "reserve", id: "b", p: demo, ok: true, before: 0.02}}, 0.02 + w},
		{"a settled charge is not resumed", plan.DefaultBudget(),
			[]step{{op: "reserve", id: "a", p: demo, ok: true}, {op: "settle", id: "a", rho: 0.1, ok: true},
				{op: "reserve", id: "a", p: demo, ok: false}}, 0.1},
		{"budget exactly two sessions", plan.Budget{Epsilon: two, Delta: plan.DefaultDelta},
			[]step{{op: "reserve", id: "a", p: demo, ok: true}, {op: "reserve", id: "b", p: demo, ok: true, before: w},
				{op: "reserve", id: "c", p: demo, ok: false, over: true}}, 2 * w},
		{"budget one ulp below two sessions", plan.Budget{Epsilon: math.Nextafter(two, 0), Delta: plan.DefaultDelta},
			[]step{{op: "reserve", id: "a", p: demo, ok: true}, {op: "reserve", id: "b", p: demo, ok: false, over: true}}, w},
		{"epsilon 8 at delta 0.999 is read at the owner's delta", plan.DefaultBudget(),
			[]step{{op: "reserve", id: "a", p: attack, ok: false, over: true}}, 0},
		{"settle an unknown charge", plan.DefaultBudget(),
			[]step{{op: "settle", id: "x", rho: 0.1, ok: false}}, 0},
		{"settle with a negative rho", plan.DefaultBudget(),
			[]step{{op: "reserve", id: "a", p: demo, ok: true}, {op: "settle", id: "a", rho: -1, ok: false}}, w},
		{"empty id", plan.DefaultBudget(), []step{{op: "reserve", id: "", p: demo, ok: false}}, 0},
	}
	for _, tc := range tests {
		var l OwnerLedger
		for i, s := range tc.steps {
			var err error
			switch s.op {
			case "reserve":
				var before privacy.Spent
				before, err = l.Reserve(s.id, "demo", s.p, tc.owner)
				if err == nil && math.Abs(before.Rho-s.before) > 1e-12 {
					t.Errorf("%s: step %d: spent elsewhere %v, want %v", tc.name, i, before, s.before)
				}
				if s.over && !errors.Is(err, plan.ErrOverBudget) {
					t.Errorf("%s: step %d: %v does not wrap plan.ErrOverBudget", tc.name, i, err)
				}
			case "settle":
				err = l.Settle(s.id, privacy.Charged(s.rho))
			}
			if (err == nil) != s.ok {
				t.Errorf("%s: step %d (%s %q): err = %v, want ok %v", tc.name, i, s.op, s.id, err, s.ok)
			}
		}
		got, err := l.Spent("")
		if err != nil || math.Abs(got.Rho-tc.total) > 1e-12 || got.LastIterate {
			t.Errorf("%s: total %+v (%v), want rho %v", tc.name, got, err, tc.total)
		}
		// The ledger survives storage.
		b, err := l.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseOwnerLedger(b)
		if err != nil {
			t.Fatalf("%s: round trip: %v", tc.name, err)
		}
		if again, err := back.Spent(""); err != nil || again != got {
			t.Errorf("%s: round trip: spent %+v (%v) vs %+v", tc.name, again, err, got)
		}
	}
}

func TestParseOwnerLedger(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"", true},
		{`{"charges":{"a":{"rho":0.5}}}`, true},
		{`{"charges":{"a":{"rho":-0.5}}}`, false},
		{`{"version":1,"charges":{"a":{"rho":0.5,"tv":-1}}}`, false},
		{`{"version":2,"charges":{}}`, false},
		{`{"charges":`, false},
	}
	for _, tc := range tests {
		if _, err := ParseOwnerLedger([]byte(tc.in)); (err == nil) != tc.ok {
			t.Errorf("%q: err = %v, want ok %v", tc.in, err, tc.ok)
		}
	}
}

// TestOwnerLedgerLastIterate: a certified "local" session (output
// perturbation) is recorded as an ordinary charge, and a ledger stored
// before charges recorded their kind (no version) is read conservatively
// as last-iterate with the slack bound, never by the zCDP conversion.
func TestOwnerLedgerLastIterate(t *testing.T) {
	li := optim.Params{Algorithm: "local", Model: "logreg-unit", Features: 784, Classes: 10,
		M: 100, Cohort: 10, Rounds: 100, Batch: 600, LocalSteps: 25, LocalEpochs: 25,
		Clip: 2, Eta: 1, Epsilon: 4, Delta: 1e-5}
	f, err := plan.SessionFigures(li, 0)
	if err != nil {
		t.Fatal(err)
	}
	var l OwnerLedger
	if _, err := l.Reserve("a", "local", li, plan.DefaultBudget()); err != nil {
		t.Fatal(err)
	}
	got, err := l.Spent("")
	if err != nil || got != f.WorstSpent || got.LastIterate {
		t.Fatalf("reserved %+v (%v), want %+v", got, err, f.WorstSpent)
	}
	b, _ := l.Marshal()
	back, err := ParseOwnerLedger(b)
	if again, _ := back.Spent(""); err != nil || again != got {
		t.Errorf("round trip: %+v (%v), want %+v", again, err, got)
	}
	old, err := ParseOwnerLedger([]byte(`{"charges":{"a":{"rho":1.2},"b":{"rho":0}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := old.Spent("")
	if err != nil || s != privacy.AnyCharged(1.2) {
		t.Errorf("old ledger read as %+v (%v), want %+v", s, err, privacy.AnyCharged(1.2))
	}
	cur, _ := ParseOwnerLedger([]byte(`{"version":1,"charges":{"a":{"rho":1.2}}}`))
	if s, _ := cur.Spent(""); s.LastIterate {
		t.Errorf("a version-1 ordinary charge read as last-iterate: %+v", s)
	}
}
