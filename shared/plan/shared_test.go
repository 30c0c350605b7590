package plan

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/privacy"
)

// sharedFigSession is a shared-noise session of cohort m with c colluders
// and threshold t (0: the default), at epsilon eps; model "" leaves the
// dimension unknown.
func sharedFigSession(m, t, c int, eps float64, model string) optim.Params {
	p := optim.Params{Algorithm: "shared", Model: model, Features: 784, Classes: 10,
		M: 3 * m, Cohort: m, Rounds: 40, Batch: 20, Clip: 1, Eta: 0.1, Epsilon: eps, Delta: 1e-5, Threshold: t, Colluders: c}
	if model == "" {
		p.Features, p.Classes = 0, 0
	}
	return p
}

// TestSharedFigures checks a shared-noise session's two figures, as
// SessionFigures gives them, against values computed here from the
// proof (docs/privacy.md 4c), never from the code's own path: the
// promise is the session's budget (nc's figure for the same session,
// with c colluders subtracted from the threshold), the floor the budget
// times h / (1 + h/1000)^2 with h = t - c. A floor 10% too small (a share
// variance mis-scaled in the floor) or a promise with the colluders not
// subtracted moves a rho by far more than the 1e-9 allowed.
func TestSharedFigures(t *testing.T) {
	for _, tc := range []struct {
		m, t, c, h int
		model      string
	}{
		{m: 50, h: 35, model: "logreg"},
		{m: 10, h: 7, model: "logreg"},
		{m: 10, c: 2, h: 5, model: "logreg"},
		{m: 10, t: 9, c: 3, h: 6, model: "logreg"},
		{m: 10, c: 2, h: 5, model: ""}, // no model: the slack bound as the coupling term
	} {
		p := sharedFigSession(tc.m, tc.t, tc.c, 8, tc.model)
		s, err := SessionFigures(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		q := p
		q.Algorithm, q.Colluders, q.Threshold = "nc", 0, 0
		nc, err := SessionFigures(q, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Shared || s.Honest != tc.h || s.Colluders != tc.c || s.Threshold != tc.h+tc.c {
			t.Errorf("m %d c %d: shared %v honest %d colluders %d threshold %d, want true %d %d %d", tc.m, tc.c, s.Shared, s.Honest, s.Colluders, s.Threshold, tc.h, tc.c, tc.h+tc.c)
		}
		if s.WorstRho != nc.WorstRho || s.Epsilon != nc.Epsilon {
			t.Errorf("m %d c %d: ledger's worst case rho %v epsilon %v, nc's %v %v", tc.m, tc.c, s.WorstRho, s.Epsilon, nc.WorstRho, nc.Epsilon)
		}
		if math.Abs(s.PromiseSpent.Rho-nc.WorstRho) > 1e-9*nc.WorstRho {
			t.Errorf("m %d c %d: promise rho %v, want nc's %v", tc.m, tc.c, s.PromiseSpent.Rho, nc.WorstRho)
		}
		// The promise reads as nc's epsilon up to its coupling term: never
		// below the Gaussian-DP epsilon of the budget without one, and
		// within 0.1% of nc's (read with the slack bound).
		gdp, err := privacy.GDPToEpsilon(math.Sqrt(2*nc.WorstRho), DefaultDelta)
		if err != nil {
			t.Fatal(err)
		}
		if s.Promise < gdp || s.Promise > nc.Epsilon*1.001 {
			t.Errorf("m %d c %d: promise epsilon %v, want in [%v, %v]", tc.m, tc.c, s.Promise, gdp, nc.Epsilon*1.001)
		}
		h := float64(tc.h)
		wantFloor := nc.WorstRho * h / ((1 + h/1000) * (1 + h/1000))
		if math.Abs(s.FloorSpent.Rho-wantFloor) > 1e-9*wantFloor {
			t.Errorf("m %d c %d: floor rho %v, want %v", tc.m, tc.c, s.FloorSpent.Rho, wantFloor)
		}
		fe, err := privacy.LedgerEpsilon(wantFloor, DefaultDelta)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(s.Floor-fe) > 1e-9*fe {
			t.Errorf("m %d c %d: floor epsilon %v, want %v", tc.m, tc.c, s.Floor, fe)
		}
		txt := s.Text()
		for _, w := range []string{s.PromiseText(), s.FloorText(), "at least " + strconv.Itoa(s.Threshold)} {
			if !strings.Contains(txt, w) {
				t.Errorf("m %d c %d: text %q lacks %q", tc.m, tc.c, txt, w)
			}
		}
		t.Logf("m %d t %d c %d: %s", tc.m, s.Threshold, tc.c, txt)
	}
}

// TestOneFigureElsewhere: every other algorithm has one figure, so that
// callers need not tell the modes apart.
func TestOneFigureElsewhere(t *testing.T) {
	for _, alg := range []string{"nc", "trusted", "cdpsgd", "noisysgd"} {
		p := sharedFigSession(10, 0, 0, 8, "logreg")
		p.Algorithm = alg
		f, err := SessionFigures(p, 0)
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		if f.Shared || f.Promise != f.Epsilon || f.Floor != f.Epsilon || f.PromiseSpent != f.WorstSpent || f.FloorSpent != f.WorstSpent || f.Threshold != 0 || f.Honest != 0 {
			t.Errorf("%s: %+v: want promise = floor = epsilon %v", alg, f, f.Epsilon)
		}
		pr, err := DefaultBudget().Progress(p, privacy.Spent{}, privacy.Charged(f.WorstRho/2), 1)
		if err != nil {
			t.Fatal(err)
		}
		if pr.FloorSpent != pr.Spent || pr.FloorMost != pr.Most {
			t.Errorf("%s: floor %v of %v, want %v of %v", alg, pr.FloorSpent, pr.FloorMost, pr.Spent, pr.Most)
		}
	}
}

// TestCheckShared checks the owner's two limits on a shared-noise
// session (at epsilon 8, t = 7 of 10: promise 8.00, floor 29.25): the
// promise against the owner's epsilon, the floor against the floor
// limit (8 times it unless the owner sets one), each with what was
// spent before.
func TestCheckShared(t *testing.T) {
	p := sharedFigSession(10, 0, 0, 7.92, "logreg")
	f, err := SessionFigures(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	spent := privacy.Charged(0.2)
	withBefore := func(s privacy.Spent) float64 {
		all, err := spent.Add(s)
		if err != nil {
			t.Fatal(err)
		}
		e, err := privacy.SpentEpsilon(all, DefaultDelta)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	floorBefore := withBefore(f.FloorSpent)
	for _, tc := range []struct {
		name   string
		b      Budget
		spent  privacy.Spent
		refuse bool
	}{
		{"default", DefaultBudget(), privacy.Spent{}, false},
		{"promise over", Budget{Epsilon: f.Promise * 0.999, Delta: DefaultDelta, Floor: 1000}, privacy.Spent{}, true},
		{"floor at its limit", Budget{Epsilon: 8, Delta: DefaultDelta, Floor: f.Floor * 1.0001}, privacy.Spent{}, false},
		{"floor over its limit", Budget{Epsilon: 8, Delta: DefaultDelta, Floor: f.Floor * 0.999}, privacy.Spent{}, true},
		{"default floor limit", Budget{Epsilon: f.Floor / DefaultFloorRatio * 0.999, Delta: DefaultDelta}, privacy.Spent{}, true},
		{"floor with what was spent before", Budget{Epsilon: 9, Delta: DefaultDelta, Floor: (f.Floor + floorBefore) / 2}, spent, true},
		{"promise with what was spent before", Budget{Epsilon: f.Promise * 1.001, Delta: DefaultDelta, Floor: 1000}, spent, true},
	} {
		err := Check(p, tc.b, tc.spent)
		if got := err != nil; got != tc.refuse {
			t.Errorf("%s: Check = %v, want refused %v", tc.name, err, tc.refuse)
		} else if err != nil && !errors.Is(err, ErrOverBudget) {
			t.Errorf("%s: %v, want ErrOverBudget", tc.name, err)
		}
	}
	// The meter's floor: FloorMost is the floor for fresh data, and a
	// ledger at the worst case reaches it.
	pr, err := DefaultBudget().Progress(p, privacy.Spent{}, f.WorstSpent, f.WorstReleases)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(pr.FloorMost-f.Floor) > 1e-9*f.Floor || math.Abs(pr.FloorSpent-f.Floor) > 1e-6*f.Floor || pr.FloorMost <= pr.Most {
		t.Errorf("floor spent %v of %v, want %v (promise %v)", pr.FloorSpent, pr.FloorMost, f.Floor, pr.Most)
	}
	if err := (Budget{Epsilon: 8, Delta: DefaultDelta, Floor: 4}).Validate(); err == nil {
		t.Error("a floor limit below the epsilon limit: no error")
	}
}
