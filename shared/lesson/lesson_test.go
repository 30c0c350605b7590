package lesson

import (
	"errors"
	"testing"
	"time"

	"browserfl/shared/plan"
	"browserfl/shared/privacy"
	"browserfl/shared/wire"
)

// demo is the demo template (cmd/coordinator's defaults, d of logreg on
// Fashion-MNIST, 20 s deadline; its target is plan.DefaultLessonTarget,
// which TestDemoFiguresAgree checks the coordinator uses).
func demo() wire.SessionParams {
	eps, delta := plan.DefaultLessonTarget()
	return wire.SessionParams{Name: "demo", Algorithm: "nc", Model: "logreg", Dim: 7850, Features: 784, Classes: 10,
		DeadlineMillis: 20000, M: 30, Cohort: 10, Rounds: 200, Batch: 32, Clip: 1, Eta: 0.02, Epsilon: eps, Delta: delta}
}

// TestDefaultLessonUsesBudget: in the default lesson, for any class size,
// the worst-case device spends at least 95% of the owner's default budget
// (epsilon at delta 1e-5) and never more than it: the page's default
// budget lets it join, and a device in a class of any size runs to the
// end. It fails if the lesson's target is taken from anything but the
// owner's budget (a fixed rho_p = 1.5 spends 88%) or sized over it.
// Deterministic.
func TestDefaultLessonUsesBudget(t *testing.T) {
	b := plan.DefaultBudget()
	for _, n := range []int{1, 5, 16, 17, 40, 200} {
		s, _, err := OneLesson(demo(), n)
		if err != nil {
			t.Fatal(err)
		}
		p := s
		f, err := plan.SessionFigures(p, b.Delta)
		if err != nil {
			t.Fatal(err)
		}
		// The worst case is the device asked in every round it may
		// answer: the whole session budget (the calibration spends it
		// on the release cap).
		if f.WorstReleases != p.ReleaseCap() || f.WorstRho < f.BudgetRho*(1-1e-12) {
			t.Errorf("n = %d: worst case %d releases, rho %v of the budget %v", n, f.WorstReleases, f.WorstRho, f.BudgetRho)
		}
		if share := f.Epsilon / b.Epsilon; share < 0.95 || share > 1 {
			t.Errorf("n = %d: the worst-case device spends epsilon %v, %.1f%% of the owner's %v", n, f.Epsilon, 100*share, b.Epsilon)
		}
		if _, over, err := b.Over(f.WorstSpent); err != nil || over {
			t.Errorf("n = %d: worst case over the owner's budget (%v)", n, err)
		}
		if err := plan.Check(p, b, privacy.Spent{}); err != nil {
			t.Errorf("n = %d: a page with the default budget refuses: %v", n, err)
		}
	}
}

func TestOneLesson(t *testing.T) {
	tmpl := demo()
	announced, err := plan.SessionFigures(tmpl, plan.DefaultDelta)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		n, cohort, rounds int
	}{
		{5, 5, 200},
		{8, 8, 200},
		{10, 10, 200},
		{20, 10, 200},
		{40, 20, 200},
	}
	for _, tc := range tests {
		s, z, err := OneLesson(tmpl, tc.n)
		if err != nil {
			t.Fatalf("n = %d: %v", tc.n, err)
		}
		if s.M != tc.n || s.Cohort != tc.cohort || s.Rounds != tc.rounds {
			t.Errorf("n = %d: M %d, m %d, T %d; want M %d, m %d, T %d", tc.n, s.M, s.Cohort, s.Rounds, tc.n, tc.cohort, tc.rounds)
		}
		if z.Expected > Lesson {
			t.Errorf("n = %d: expected duration %v over the lesson of %v", tc.n, z.Expected, Lesson)
		}
		if s.DeadlineMillis != int(Deadline.Milliseconds()) {
			t.Errorf("n = %d: deadline %d ms", tc.n, s.DeadlineMillis)
		}
		if s.Rho != tmpl.Rho || s.Epsilon != tmpl.Epsilon || s.Delta != tmpl.Delta {
			t.Errorf("n = %d: the privacy target changed", tc.n)
		}
		f, err := plan.SessionFigures(s, plan.DefaultDelta)
		if err != nil {
			t.Fatalf("n = %d: figures: %v", tc.n, err)
		}
		// Each device's worst case stays within what the template
		// announced (the same target, the same cap).
		if f.WorstRho > announced.BudgetRho*(1+1e-12) || f.BudgetRho != announced.BudgetRho {
			t.Errorf("n = %d: worst rho %v, cap %v; the template announced cap %v", tc.n, f.WorstRho, f.BudgetRho, announced.BudgetRho)
		}
		if f.Epsilon > announced.Epsilon*(1+1e-9) {
			t.Errorf("n = %d: worst case epsilon %v above the announced %v", tc.n, f.Epsilon, announced.Epsilon)
		}
		if f.Epsilon > plan.DefaultBudgetEpsilon {
			t.Errorf("n = %d: epsilon %v over the page's default budget", tc.n, f.Epsilon)
		}
		if err := plan.Check(s, plan.DefaultBudget(), privacy.Spent{}); err != nil {
			t.Errorf("n = %d: a page with the default budget would refuse: %v", tc.n, err)
		}
	}
}

func TestOneLessonShorterTemplate(t *testing.T) {
	tmpl := demo()
	tmpl.Rounds, tmpl.DeadlineMillis = 20, 2000
	s, z, err := OneLesson(tmpl, 3)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rounds != 20 || s.DeadlineMillis != 2000 || z.Deadline != 2*time.Second {
		t.Errorf("T %d, deadline %d ms: the template's shorter values should stay", s.Rounds, s.DeadlineMillis)
	}
	if _, _, err := OneLesson(tmpl, 0); !errors.Is(err, ErrEmptyLobby) {
		t.Errorf("empty lobby: %v", err)
	}
}
