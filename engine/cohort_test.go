package engine_test

import (
	"fmt"
	"slices"
	"testing"

	"browserfl/engine"
	"browserfl/shared/optim"
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
		// askAll is PlanCohort's (0: only the cohort).
		askAll int
		// wantOld: the members are exactly the old cohort.
		wantOld bool
		// wantSure: the sure members number min(m, sure eligible).
		wantSure bool
		// wantAll: every eligible device is asked (nobody is sure);
		// wantCap: AskAllCap(m) of them.
		wantAll, wantCap bool
	}{
		{name: "all sure", eligible: honest, sure: isHonest, m: 4, wantOld: true, wantSure: true},
		{name: "all sure, fewer than m", eligible: honest[:3], sure: isHonest, m: 4, wantOld: true, wantSure: true},
		{name: "nobody sure (a new session): every eligible device asked", eligible: all, sure: func(string) bool { return false }, m: 4, askAll: engine.AskAllCap(4), wantAll: true},
		{name: "nobody sure, beyond the cap", eligible: ids("n", 300), sure: func(string) bool { return false }, m: 4, askAll: engine.AskAllCap(4), wantCap: true},
		{name: "nobody sure, no asking all (the cluster shape)", eligible: all, sure: func(string) bool { return false }, m: 4, wantOld: true},
		{name: "sybils among sure devices", eligible: all, sure: isHonest, m: 4, wantSure: true},
		{name: "sybils, fewer sure than m", eligible: append(slices.Clone(honest[:2]), sybils...), sure: isHonest, m: 4, wantSure: true},
		{name: "sybils and probes", eligible: all, sure: isHonest, probeable: ids("p", 5), m: 4, probes: 2, wantSure: true},
		{name: "probes only when a round runs", eligible: nil, sure: isHonest, probeable: ids("p", 5), m: 4, probes: 2, wantOld: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := 1; round <= 50; round++ {
				p := engine.PlanCohort(tc.eligible, tc.sure, tc.probeable, tc.m, tc.probes, tc.askAll, 42, round)
				k := min(tc.m, len(tc.eligible))
				old := optim.SampleCohort(tc.eligible, k, 42, round)
				slices.Sort(old)
				if p.Target != k {
					t.Fatalf("round %d: target %d, want %d", round, p.Target, k)
				}
				if !slices.IsSorted(p.Members) || len(slices.Compact(slices.Clone(p.Members))) != len(p.Members) {
					t.Fatalf("round %d: members not sorted and distinct: %v", round, p.Members)
				}
				for _, id := range old {
					if !slices.Contains(p.Members, id) {
						t.Fatalf("round %d: old cohort member %s not asked", round, id)
					}
				}
				if tc.wantAll && !slices.Equal(p.Members, tc.eligible) {
					t.Fatalf("round %d: members %v, want every eligible device", round, p.Members)
				}
				if tc.wantCap && len(p.Members) != tc.askAll {
					t.Fatalf("round %d: %d members, want askAll = %d", round, len(p.Members), tc.askAll)
				}
				if tc.wantOld && !slices.Equal(p.Members, old) {
					t.Fatalf("round %d: members %v, want the old cohort %v", round, p.Members, old)
				}
				sure, probes := 0, 0
				for _, id := range p.Members {
					switch {
					case slices.Contains(tc.probeable, id):
						probes++
						if !p.Unsure[id] {
							t.Fatalf("round %d: probe %s not marked unsure", round, id)
						}
					case tc.sure(id):
						sure++
						if p.Unsure[id] {
							t.Fatalf("round %d: sure member %s marked unsure", round, id)
						}
					default:
						if !p.Unsure[id] {
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
					t.Fatalf("round %d: %d sure members, want %d (members %v)", round, sure, min(tc.m, nsure), p.Members)
				}
				if want := min(tc.probes, len(tc.probeable)); k > 0 && probes != want || k == 0 && probes != 0 {
					t.Fatalf("round %d: %d probes, want %d", round, probes, want)
				}
				if p.Extra != len(p.Members)-k || p.Probes != probes {
					t.Fatalf("round %d: extra %d probes %d, members %d target %d", round, p.Extra, p.Probes, len(p.Members), k)
				}
			}
		})
	}
}

// TestAskable: the devices a round can reach are the eligible plus the
// probes PlanCohort would add (one for every 10 members, at least one),
// and without an eligible device the probes of a recovery round (up to m,
// PlanRecovery).
func TestAskable(t *testing.T) {
	for _, tc := range []struct{ eligible, probeable, m, want int }{
		{0, 0, 10, 0},
		{0, 5, 10, 5},
		{0, 15, 10, 10},
		{0, 2, 2, 2},
		{1, 0, 2, 1},
		{1, 1, 2, 2},
		{1, 3, 2, 2},
		{9, 1, 10, 10},
		{9, 4, 20, 11},
		{30, 7, 30, 33},
	} {
		if got := engine.Askable(tc.eligible, tc.probeable, tc.m); got != tc.want {
			t.Errorf("Askable(%d eligible, %d probeable, m %d) = %d, want %d", tc.eligible, tc.probeable, tc.m, got, tc.want)
		}
		// The same count as the plan: members sampled plus probes,
		// with every eligible device sure (no replacements).
		if tc.eligible <= tc.m {
			el := make([]int, tc.eligible)
			pr := make([]int, tc.probeable)
			for i := range el {
				el[i] = i
			}
			for i := range pr {
				pr[i] = 1000 + i
			}
			p := engine.PlanCohort(el, func(int) bool { return true }, pr, tc.m, engine.ProbesPerRound(tc.m), engine.AskAllCap(tc.m), 1, 1)
			if tc.eligible == 0 {
				p = engine.PlanRecovery(pr, tc.m, 1, 1)
			}
			if len(p.Members) != tc.want {
				t.Errorf("PlanCohort asks %d of %d eligible and %d probeable at m %d, Askable says %d", len(p.Members), tc.eligible, tc.probeable, tc.m, tc.want)
			}
		}
	}
}
