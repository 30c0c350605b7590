package plan

import (
	"errors"
	"math"
	"strings"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/privacy"
)

// demo is the coordinator's demo session (cmd/coordinator defaults: the
// default lesson's target, DefaultLessonTarget).
func demo() optim.Params {
	eps, delta := DefaultLessonTarget()
	return optim.Params{Algorithm: "nc", Model: "logreg", M: 30, Cohort: 10, Rounds: 200, Batch: 32, Clip: 1, Eta: 0.02, Epsilon: eps, Delta: delta}
}

func TestSessionFiguresDemo(t *testing.T) {
	f, err := SessionFigures(demo(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Compute(demo(), DefaultDelta)
	if err != nil {
		t.Fatal(err)
	}
	if f.Delta != DefaultDelta || f.Epsilon != r.WorstEpsilon || f.WorstRho != r.WorstRho || f.WorstReleases != 200 || math.Abs(f.BudgetRho-1.36487) > 1e-5 {
		t.Errorf("figures %+v, report %+v", f, r)
	}
	if got, want := f.Text(), "ε = 7.92 at δ = 1e-5 (zCDP ρ = 1.365, 200 releases at most)"; got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{FormatEpsilon(7.2838), "7.29"}, // rounded up, never down
		{FormatEpsilon(2.5), "2.50"},
		{FormatEpsilon(3.001), "3.01"},
		{FormatEpsilon(0.004), "0.01"},
		{FormatDelta(1e-5), "1e-5"},
		{FormatDelta(1e-10), "1e-10"},
		{FormatDelta(0.001), "0.001"},
		{FormatDelta(2.5e-6), "2.5e-6"},
		{FormatRho(1.0499312), "1.05"},
		{FormatRho(1.125), "1.125"},
	}
	for i, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%d: %q, want %q", i, tc.got, tc.want)
		}
	}
}

func TestBudgetRho(t *testing.T) {
	rho, err := DefaultBudget().Rho()
	if err != nil {
		t.Fatal(err)
	}
	// epsilon 8 at delta 1e-5 is rho ~ 1.388 with exact Gaussian DP
	// (1.2297 through zCDP and CKS).
	if math.Abs(rho-1.388) > 0.001 {
		t.Errorf("default budget rho = %v, want about 1.388", rho)
	}
	if e, _ := privacy.LedgerEpsilon(rho, DefaultDelta); e > DefaultBudgetEpsilon {
		t.Errorf("default budget rho %v converts back to epsilon %v > %v", rho, e, DefaultBudgetEpsilon)
	}
	for _, b := range []Budget{{Epsilon: 0, Delta: 1e-5}, {Epsilon: 8, Delta: 0}, {Epsilon: 8, Delta: 1}, {Epsilon: math.Inf(1), Delta: 1e-5}, {Epsilon: -1, Delta: 1e-5}} {
		if _, err := b.Rho(); err == nil {
			t.Errorf("budget %+v accepted", b)
		}
	}
}

func TestCheck(t *testing.T) {
	p := demo()
	f, err := SessionFigures(p, DefaultDelta)
	if err != nil {
		t.Fatal(err)
	}
	exact := f.Epsilon
	below := math.Nextafter(exact, 0)
	spentEps, _ := privacy.LedgerEpsilon(0.1+f.WorstRho, DefaultDelta)
	bad := p
	bad.Cohort = 0
	tests := []struct {
		name  string
		p     optim.Params
		owner Budget
		spent float64
		ok    bool
	}{
		{"budget equal to the worst case", p, Budget{Epsilon: exact, Delta: DefaultDelta}, 0, true},
		{"budget one ulp below the worst case", p, Budget{Epsilon: below, Delta: DefaultDelta}, 0, false},
		{"default budget", p, DefaultBudget(), 0, true},
		{"spent plus session equal to the budget", p, Budget{Epsilon: spentEps, Delta: DefaultDelta}, 0.1, true},
		{"spent plus session above the budget", p, Budget{Epsilon: spentEps, Delta: DefaultDelta}, 0.1 + 1e-9, false},
		{"spent ignored would pass", p, Budget{Epsilon: exact, Delta: DefaultDelta}, 0.05, false},
		// The owner's delta decides: the same epsilon is a larger rho at a
		// looser delta.
		{"looser owner delta", p, Budget{Epsilon: below, Delta: 1e-3}, 0, true},
		{"non-private", optim.Params{Algorithm: "mu2", M: 3, Cohort: 3, Rounds: 5, Batch: 2, Eta: 0.1}, DefaultBudget(), 0, false},
		{"invalid params", bad, DefaultBudget(), 0, false},
		{"no owner delta", p, Budget{Epsilon: 8, Delta: 0}, 0, false},
		{"negative spent", p, DefaultBudget(), -1, false},
	}
	for _, tc := range tests {
		err := Check(tc.p, tc.owner, privacy.Charged(tc.spent))
		if (err == nil) != tc.ok {
			t.Errorf("%s: Check = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestCheckOwnerDelta is the delta attack: a session announcing
// epsilon 8 at delta 0.999 (rho 14.9, noise 0.29x) must not pass a budget
// of epsilon 8 read at the owner's delta 1e-5. It fails if Check reads
// the budget (or the session's epsilon) at the session's delta.
func TestCheckOwnerDelta(t *testing.T) {
	p := demo()
	p.Rho, p.Epsilon, p.Delta = 0, 8, 0.999
	err := Check(p, DefaultBudget(), privacy.Spent{})
	if !errors.Is(err, ErrOverBudget) {
		t.Fatalf("epsilon 8 at delta 0.999 against (8, 1e-5): Check = %v, want ErrOverBudget", err)
	}
	if !strings.Contains(err.Error(), "1e-5") {
		t.Errorf("the refusal does not state the owner's delta: %v", err)
	}
	// Read at the session's delta the same session would pass: the test
	// above can tell the two parties apart.
	if err := Check(p, Budget{Epsilon: 8, Delta: p.Delta}, privacy.Spent{}); err != nil {
		t.Errorf("at the session's own delta the session fits its epsilon: %v", err)
	}
	f, err := SessionFigures(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.Delta != DefaultDelta || f.SessionDelta != 0.999 || !(f.Epsilon > 8) {
		t.Errorf("figures of the 0.999 session: %+v (want epsilon > 8 at 1e-5)", f)
	}
	// The same epsilon at the owner's delta is accepted.
	p.Delta = DefaultDelta
	if err := Check(p, DefaultBudget(), privacy.Spent{}); err != nil {
		t.Errorf("epsilon 8 at 1e-5 against (8, 1e-5): %v", err)
	}
}

// TestBudgetOver: the owner's budget comparison is at the owner's delta,
// and its boundary is Budget.Rho.
func TestBudgetOver(t *testing.T) {
	b := DefaultBudget()
	rho, err := b.Rho()
	if err != nil {
		t.Fatal(err)
	}
	loose := Budget{Epsilon: b.Epsilon, Delta: 0.5}
	tests := []struct {
		name   string
		b      Budget
		rho    float64
		over   bool
		errors bool
	}{
		{"nothing spent", b, 0, false, false},
		{"at the budget", b, rho, false, false},
		{"just over", b, rho * (1 + 1e-9), true, false},
		{"a larger delta allows more", loose, rho * (1 + 1e-9), false, false},
		{"a delta of 0 has no epsilon", Budget{Epsilon: 8}, rho, false, true},
	}
	for _, tc := range tests {
		eps, over, err := tc.b.Over(privacy.Charged(tc.rho))
		if (err != nil) != tc.errors || over != tc.over {
			t.Errorf("%s: Over(%v) = %v, %v, %v; want over %v, error %v", tc.name, tc.rho, eps, over, err, tc.over, tc.errors)
		}
		if err == nil && (eps > tc.b.Epsilon) != over {
			t.Errorf("%s: epsilon %v against %v, over %v", tc.name, eps, tc.b.Epsilon, over)
		}
	}
}

// Progress is what the page's privacy meter shows: Most is the session's
// worst case on top of what the owner's data spent before (the figure
// Check compares with the owner's epsilon), Spent the ledger so far.
func TestBudgetProgress(t *testing.T) {
	p := demo()
	f, err := SessionFigures(p, DefaultDelta)
	if err != nil {
		t.Fatal(err)
	}
	b := DefaultBudget()
	for _, tc := range []struct{ before, ledger float64 }{{0, 0}, {0, 0.3}, {0, f.WorstRho}, {0.1, 0.5}} {
		pr, err := b.Progress(p, privacy.Charged(tc.before), privacy.Charged(tc.ledger), 0)
		if err != nil {
			t.Fatal(err)
		}
		most, _ := privacy.LedgerEpsilon(tc.before+f.WorstRho, DefaultDelta)
		spent, _ := privacy.LedgerEpsilon(tc.before+tc.ledger, DefaultDelta)
		if pr.Most != most || pr.Spent != spent {
			t.Errorf("before %v, ledger %v: %+v, want most %v spent %v", tc.before, tc.ledger, pr, most, spent)
		}
		if pr.Spent > pr.Most {
			t.Errorf("before %v, ledger %v: spent %v > most %v", tc.before, tc.ledger, pr.Spent, pr.Most)
		}
	}
	// The demo session with fresh data: the consent screen's 7.92.
	pr, _ := b.Progress(p, privacy.Spent{}, privacy.Spent{}, 0)
	if FormatEpsilon(pr.Most) != f.EpsilonText() || pr.Spent != 0 {
		t.Errorf("fresh demo: %+v, want most %s and nothing spent", pr, f.EpsilonText())
	}
	// Check refuses exactly when Most passes the owner's epsilon.
	for _, before := range []float64{0, 0.05, 0.1, 0.2} {
		pr, _ := b.Progress(p, privacy.Charged(before), privacy.Spent{}, 0)
		err := Check(p, b, privacy.Charged(before))
		if (pr.Most > b.Epsilon) != errors.Is(err, ErrOverBudget) {
			t.Errorf("before %v: most %v, Check %v", before, pr.Most, err)
		}
	}
	for _, bad := range [][2]float64{{-1, 0}, {0, math.NaN()}, {math.Inf(1), 0}} {
		if _, err := b.Progress(p, privacy.Spent{Rho: bad[0], TV: 0}, privacy.Spent{Rho: bad[1]}, 0); err == nil {
			t.Errorf("spent %v accepted", bad)
		}
	}
	// ProgressOf, from figures kept (the page's meter), is Progress; it
	// refuses figures made at another delta than the owner's.
	for _, tc := range []struct{ before, ledger float64 }{{0, 0}, {0.1, 0.5}} {
		want, _ := b.Progress(p, privacy.Charged(tc.before), privacy.Charged(tc.ledger), 3)
		got, err := b.ProgressOf(f, privacy.Charged(tc.before), privacy.Charged(tc.ledger), 3)
		if err != nil || got != want {
			t.Errorf("ProgressOf: %+v (%v), want Progress's %+v", got, err, want)
		}
	}
	other, err := SessionFigures(p, DefaultDelta/10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ProgressOf(other, privacy.Spent{}, privacy.Spent{}, 0); err == nil {
		t.Error("ProgressOf read figures made at another delta than the owner's")
	}
}
