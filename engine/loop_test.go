package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"browserfl/engine"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
)

// recShell is a shell that records the stages it is asked for and
// delivers a fixed set of contributions.
type recShell struct {
	eligible  []string
	probeable []string
	sure      map[string]bool
	start     bool // Ask starts the round
	collected func(plan engine.Plan[string]) engine.Collected[string]
	collErr   error
	commitErr error

	plan    engine.Plan[string]
	round   optim.Round
	calls   []string
	outcome engine.Outcome[string]
	cause   error
}

func (s *recShell) Ask(t int, start func([]string, func(string) bool, []string) (engine.Plan[string], optim.Round, error)) (bool, error) {
	s.calls = append(s.calls, "ask")
	if !s.start {
		return false, nil
	}
	var err error
	s.plan, s.round, err = start(s.eligible, func(id string) bool { return s.sure[id] }, s.probeable)
	return err == nil, err
}

func (s *recShell) Collect(context.Context, int) (engine.Collected[string], error) {
	s.calls = append(s.calls, "collect")
	return s.collected(s.plan), s.collErr
}

func (s *recShell) Discard(_ int, cause error) {
	s.calls = append(s.calls, "discard")
	s.cause = cause
}

func (s *recShell) Commit(_ int, o engine.Outcome[string]) error {
	s.calls = append(s.calls, "commit")
	s.outcome = o
	return s.commitErr
}

func (s *recShell) Tell(int, engine.Outcome[string]) { s.calls = append(s.calls, "tell") }

func ncServer(t *testing.T) (optim.Server, int) {
	t.Helper()
	p := optim.Params{Algorithm: "nc", Model: "logreg", Features: 5, Classes: 3, M: 8, Cohort: 3,
		Rounds: 10, Batch: 2, Clip: 1, Eta: 0.05, Diameter: 20, Rho: 8}
	m, _ := model.New("logreg", p.Features, p.Classes)
	s, err := optim.NewServer(p, make([]float64, m.Dim()), mechanism.NewStream(mechanism.Seed{3}, 0))
	if err != nil {
		t.Fatal(err)
	}
	return s, m.Dim()
}

// deliver returns a collect function in which the plan's members listed in
// answer deliver the vector v (ids not in the plan are ignored).
func deliver(v []float64, atTarget bool, answer ...string) func(engine.Plan[string]) engine.Collected[string] {
	return func(p engine.Plan[string]) engine.Collected[string] {
		c := engine.Collected[string]{Cohort: map[string]bool{}, Delivered: map[string]engine.Contribution{},
			Unsure: p.Unsure, AtTarget: atTarget}
		for _, id := range p.Members {
			c.Cohort[id] = true
			if slices.Contains(answer, id) {
				c.Delivered[id] = engine.Contribution{Vec: v}
			}
		}
		return c
	}
}

// TestRoundStages: a committed round calls the shell's stages in order,
// ask, collect, commit, tell (commit before any member is told), with the
// included members sorted, the misses by the rule, and the state the
// server half has after the round; the engine's plan is the cohort rule.
func TestRoundStages(t *testing.T) {
	srv, d := ncServer(t)
	eng := engine.New[string](srv, 3, 10, 42, 1000)
	eligible := []string{"a", "b", "c", "d", "e"}
	sh := &recShell{eligible: eligible, sure: map[string]bool{"a": true, "b": true, "c": true, "d": true}, start: true}
	plan := engine.PlanCohort(eligible, func(id string) bool { return sh.sure[id] }, nil, 3, engine.ProbesPerRound(3), 0, 42, 1)
	if len(plan.Members) < 2 {
		t.Fatalf("plan %v: the test needs two members", plan.Members)
	}
	answer := plan.Members[:2]
	v := make([]float64, d)
	v[0] = 0.5
	sh.collected = deliver(v, false, answer...)
	ok, err := eng.Round(context.Background(), 1, sh)
	if err != nil || !ok {
		t.Fatalf("Round = %v, %v", ok, err)
	}
	if got := strings.Join(sh.calls, ","); got != "ask,collect,commit,tell" {
		t.Fatalf("stages %s, want ask,collect,commit,tell", got)
	}
	if !slices.Equal(sh.plan.Members, plan.Members) || sh.round.T != 1 {
		t.Fatalf("asked %v at round %d, want the plan %v at round 1", sh.plan.Members, sh.round.T, plan.Members)
	}
	if !slices.Equal(sh.outcome.Included, answer) {
		t.Fatalf("included %v, want %v", sh.outcome.Included, answer)
	}
	for _, id := range plan.Members {
		want := !slices.Contains(answer, id) // the round did not close at its target
		if sh.outcome.Missed[id] != want {
			t.Errorf("member %s: missed %v, want %v", id, sh.outcome.Missed[id], want)
		}
	}
	state, _ := srv.MarshalBinary()
	if !bytes.Equal(sh.outcome.State, state) {
		t.Fatal("the outcome's state is not the server half's after the round")
	}
	if srv.Next().T != 2 {
		t.Fatal("the server half did not move to round 2")
	}
}

// TestRoundNotStarted: a shell that cannot start the round is asked and
// nothing else happens; the server half stays where it was.
func TestRoundNotStarted(t *testing.T) {
	srv, _ := ncServer(t)
	eng := engine.New[string](srv, 3, 10, 42, 1000)
	sh := &recShell{}
	ok, err := eng.Round(context.Background(), 1, sh)
	if ok || err != nil || strings.Join(sh.calls, ",") != "ask" || srv.Next().T != 1 {
		t.Fatalf("Round = %v, %v, stages %v, server at %d", ok, err, sh.calls, srv.Next().T)
	}
	// A shell asked for another round than the server half's is refused.
	sh = &recShell{eligible: []string{"a"}, start: true, collected: deliver(nil, false)}
	if _, err := eng.Round(context.Background(), 2, sh); err == nil {
		t.Fatal("round 2 asked of a server half at round 1")
	}
}

// unservable is a server half whose model reads NaN once a round was
// applied (as a step that overflowed would leave it).
type unservable struct {
	optim.Server
	applied bool
}

func (u *unservable) Apply(t int, ups []optim.Update) error {
	if err := u.Server.Apply(t, ups); err != nil {
		return err
	}
	u.applied = true
	return nil
}

func (u *unservable) Model() []float64 {
	x := slices.Clone(u.Server.Model())
	if u.applied {
		x[0] = math.NaN()
	}
	return x
}

func (u *unservable) UnmarshalBinary(b []byte) error {
	u.applied = false
	return u.Server.UnmarshalBinary(b)
}

// TestRoundDiscards: a round whose apply fails (a sum that is not
// finite), or whose result cannot be served (the model after it is not
// finite), is discarded: no commit, no tell, the server half back at the
// state before it, bit for bit, and the round runs again under the same
// number.
func TestRoundDiscards(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap bool
		v    float64
	}{{"apply refuses", false, math.Inf(1)}, {"not servable", true, 0.5}} {
		t.Run(tc.name, func(t *testing.T) {
			inner, d := ncServer(t)
			var srv optim.Server = inner
			if tc.wrap {
				srv = &unservable{Server: inner}
			}
			eng := engine.New[string](srv, 3, 10, 42, 1000)
			before, _ := inner.MarshalBinary()
			v := make([]float64, d)
			v[0] = tc.v
			var payload []byte
			if tc.wrap { // the payload path (the wrapper hides ApplySum)
				var err error
				if payload, err = (mechanism.Dense64{}).Compress(nil, make([]float64, d), v, nil); err != nil {
					t.Fatal(err)
				}
			}
			collect := func(p engine.Plan[string]) engine.Collected[string] {
				c := deliver(v, false, "a")(p)
				if _, ok := c.Delivered["a"]; ok {
					c.Delivered["a"] = engine.Contribution{Vec: v, Payload: payload}
				}
				return c
			}
			everyone := map[string]bool{"a": true, "b": true, "c": true}
			sh := &recShell{eligible: []string{"a", "b", "c"}, sure: everyone, start: true, collected: collect}
			ok, err := eng.Round(context.Background(), 1, sh)
			if ok || err != nil {
				t.Fatalf("Round = %v, %v, want a discarded round", ok, err)
			}
			if got := strings.Join(sh.calls, ","); got != "ask,collect,discard" || sh.cause == nil {
				t.Fatalf("stages %s (cause %v), want ask,collect,discard", got, sh.cause)
			}
			if after, _ := inner.MarshalBinary(); !bytes.Equal(before, after) {
				t.Fatal("the server half was not restored")
			}
			sh = &recShell{eligible: []string{"a", "b", "c"}, sure: everyone, start: true, collected: deliver(make([]float64, d), false, "a")}
			if tc.wrap {
				sh.collected = func(engine.Plan[string]) engine.Collected[string] {
					return engine.Collected[string]{Cohort: everyone, Delivered: map[string]engine.Contribution{}}
				}
				srv.(*unservable).applied = false
			}
			ok, err = eng.Round(context.Background(), 1, sh)
			if tc.wrap {
				// Still unservable after any apply: discarded again.
				if ok || err != nil || !slices.Contains(sh.calls, "discard") {
					t.Fatalf("round 1 again: %v, %v, %v", ok, err, sh.calls)
				}
				return
			}
			if !ok || err != nil {
				t.Fatalf("round 1 again: %v, %v", ok, err)
			}
		})
	}
}

// TestRoundErrors: a collect that fails (shutting down) decides nothing;
// a commit that fails is returned and nobody is told.
func TestRoundErrors(t *testing.T) {
	for _, tc := range []struct {
		name, stages string
		coll, commit error
	}{
		{"collect fails", "ask,collect", context.Canceled, nil},
		{"commit fails", "ask,collect,commit", nil, errors.New("disk full")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, d := ncServer(t)
			eng := engine.New[string](srv, 3, 10, 42, 1000)
			sh := &recShell{eligible: []string{"a", "b"}, sure: map[string]bool{"a": true, "b": true}, start: true,
				collected: deliver(make([]float64, d), false, "a", "b"), collErr: tc.coll, commitErr: tc.commit}
			ok, err := eng.Round(context.Background(), 1, sh)
			want := tc.coll
			if want == nil {
				want = tc.commit
			}
			if ok || !errors.Is(err, want) {
				t.Fatalf("Round = %v, %v, want %v", ok, err, want)
			}
			if got := strings.Join(sh.calls, ","); got != tc.stages {
				t.Fatalf("stages %s, want %s", got, tc.stages)
			}
		})
	}
}

// ExampleEngine_Round shows the order of a round's stages.
func ExampleEngine_Round() {
	p := optim.Params{Algorithm: "mu2", Model: "logreg", Features: 2, Classes: 2, M: 4, Cohort: 2,
		Rounds: 3, Batch: 1, Clip: 1, Eta: 0.1, Diameter: 10}
	m, _ := model.New("logreg", p.Features, p.Classes)
	srv, _ := optim.NewServer(p, make([]float64, m.Dim()), mechanism.NewStream(mechanism.Seed{1}, 0))
	eng := engine.New[string](srv, p.Cohort, p.Rounds, 7, 1000)
	sh := &recShell{eligible: []string{"a", "b", "c"}, sure: map[string]bool{"a": true, "b": true, "c": true}, start: true,
		collected: deliver(make([]float64, m.Dim()), true, "a", "b", "c")}
	ok, err := eng.Round(context.Background(), 1, sh)
	fmt.Println(ok, err, strings.Join(sh.calls, " -> "), len(sh.outcome.Included))
	// Output: true <nil> ask -> collect -> commit -> tell 2
}

// TestRecoveryRound: with no device eligible but some probeable (every
// device of a class missed its last rounds), the engine plans a recovery
// round asking up to m of them (sorted), all as probes, the target at all
// of them, drawn afresh each round (over eight rounds every probeable device
// is asked). It is committed like any round: one that nobody answers
// commits empty with every member's miss, and the next round has the next
// number (a number is never asked twice); one probe delivering is
// included.
func TestRecoveryRound(t *testing.T) {
	srv, d := ncServer(t)
	eng := engine.New[string](srv, 3, 10, 42, 1000)
	probeable := []string{"p1", "p2", "p3", "p4", "p5"}
	sh := &recShell{probeable: probeable, start: true, collected: deliver(make([]float64, d), false)}
	asked := map[string]bool{}
	for round := 1; round <= 8; round++ {
		sh.calls = nil
		ok, err := eng.Round(context.Background(), round, sh)
		if err != nil || !ok {
			t.Fatalf("round %d: Round = %v, %v; want committed", round, ok, err)
		}
		if got := strings.Join(sh.calls, ","); got != "ask,collect,commit,tell" {
			t.Fatalf("round %d: stages %s, want ask,collect,commit,tell", round, got)
		}
		p := sh.plan
		if !p.Recovery || len(p.Members) != 3 || p.Target != 3 || p.Probes != 3 || len(p.Unsure) != 3 || !slices.IsSorted(p.Members) {
			t.Fatalf("round %d: plan %+v; want a recovery round asking 3 probes (sorted), target 3", round, p)
		}
		if len(sh.outcome.Included) != 0 || len(sh.outcome.Missed) != 3 || srv.Next().T != round+1 {
			t.Fatalf("round %d: included %v, missed %v, next round %d; want an empty commit with 3 misses", round, sh.outcome.Included, sh.outcome.Missed, srv.Next().T)
		}
		for _, id := range p.Members {
			asked[id] = true
		}
	}
	if len(asked) != len(probeable) {
		t.Errorf("eight rounds asked only %v of %v: every round draws the same probes", asked, probeable)
	}
	sh.calls = nil
	sh.collected = func(p engine.Plan[string]) engine.Collected[string] {
		return deliver(make([]float64, d), false, p.Members[0])(p)
	}
	if ok, err := eng.Round(context.Background(), 9, sh); err != nil || !ok || len(sh.outcome.Included) != 1 {
		t.Fatalf("a recovery round with one delivery: Round = %v, %v, included %v; want committed with one", ok, err, sh.outcome.Included)
	}
	// With someone eligible the round is an ordinary one.
	sh.eligible = []string{"a"}
	if ok, err := eng.Round(context.Background(), 10, sh); err != nil || !ok || sh.plan.Recovery {
		t.Fatalf("with a device eligible: Round = %v, %v, plan %+v; want an ordinary round", ok, err, sh.plan)
	}
}
