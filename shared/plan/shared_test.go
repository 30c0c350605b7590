package plan

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/privacy"
)

// TestSharedFigures checks a shared-noise session's two figures against
// values computed here: the promise is the session's budget (nc's figure
// for the same session), the floor the budget times h / (1 + h/1000)^2.
func TestSharedFigures(t *testing.T) {
	for _, tc := range []struct {
		m, c, h int
		model   string
	}{
		{m: 50, h: 35, model: "logreg"},
		{m: 10, h: 7, model: "logreg"},
		{m: 10, c: 2, h: 5, model: ""}, // no model: the slack bound as the coupling term
	} {
		p := optim.Params{Algorithm: "shared", Model: tc.model, Features: 784, Classes: 10,
			M: 3 * tc.m, Cohort: tc.m, Rounds: 40, Batch: 20, Clip: 1, Eta: 0.1, Epsilon: 8, Delta: 1e-5, Colluders: tc.c}
		if tc.model == "" {
			p.Features, p.Classes = 0, 0
		}
		s, err := Shared(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		q := p
		q.Algorithm, q.Colluders = "nc", 0
		nc, err := SessionFigures(q, 0)
		if err != nil {
			t.Fatal(err)
		}
		if s.Honest != tc.h || s.Colluders != tc.c {
			t.Errorf("m %d c %d: honest %d colluders %d, want %d %d", tc.m, tc.c, s.Honest, s.Colluders, tc.h, tc.c)
		}
		if math.Abs(s.PromiseSpent.Rho-nc.WorstRho) > 1e-12*nc.WorstRho {
			t.Errorf("m %d: promise rho %v, nc's %v", tc.m, s.PromiseSpent.Rho, nc.WorstRho)
		}
		// The promise reads as nc's epsilon up to its coupling term: never
		// below the Gaussian-DP epsilon of the budget without one, and
		// within 0.1% of nc's (read with the slack bound).
		gdp, err := privacy.GDPToEpsilon(math.Sqrt(2*nc.WorstRho), DefaultDelta)
		if err != nil {
			t.Fatal(err)
		}
		if s.Promise < gdp || s.Promise > nc.Epsilon*1.001 {
			t.Errorf("m %d: promise epsilon %v, want in [%v, %v]", tc.m, s.Promise, gdp, nc.Epsilon*1.001)
		}
		h := float64(tc.h)
		wantFloor := nc.WorstRho * h / ((1 + h/1000) * (1 + h/1000))
		if math.Abs(s.FloorSpent.Rho-wantFloor) > 1e-9*wantFloor {
			t.Errorf("m %d: floor rho %v, want %v", tc.m, s.FloorSpent.Rho, wantFloor)
		}
		fe, err := privacy.LedgerEpsilon(wantFloor, DefaultDelta)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(s.Floor-fe) > 1e-9*fe {
			t.Errorf("m %d: floor epsilon %v, want %v", tc.m, s.Floor, fe)
		}
		txt := s.Text()
		for _, w := range []string{FormatEpsilon(s.Promise), FormatEpsilon(s.Floor), "at least " + strconv.Itoa(s.Threshold)} {
			if !strings.Contains(txt, w) {
				t.Errorf("m %d: text %q lacks %q", tc.m, txt, w)
			}
		}
		t.Logf("m %d c %d: %s", tc.m, tc.c, txt)
	}
	if _, err := Shared(optim.Params{Algorithm: "nc"}, 0); err == nil {
		t.Error("Shared of an nc session: no error")
	}
}
