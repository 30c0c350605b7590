package ui

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vugu/vugu"
	"github.com/vugu/vugu/staticrender"
)

// nopCtl is a Controller that records nothing: the render tests only
// look at the HTML.
type nopCtl struct{}

func (nopCtl) Join(float64)              {}
func (nopCtl) Decline()                  {}
func (nopCtl) LoadDemo()                 {}
func (nopCtl) AddDrawing(int)            {}
func (nopCtl) ClearDrawing()             {}
func (nopCtl) FilesPicked(vugu.DOMEvent) {}
func (nopCtl) Train()                    {}
func (nopCtl) TryModel()                 {}
func (nopCtl) Forget()                   {}

func render(t *testing.T, st *State) string {
	t.Helper()
	env, err := vugu.NewBuildEnv()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := staticrender.New(&b).Render(env.RunBuild(&Root{State: st, Ctl: nopCtl{}})); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func session() Session {
	return Session{JoinCode: "ABC123", Algorithm: "nc", Mode: "untrusted", Model: "logreg",
		Rounds: 20, Cohort: 5, Clip: 1, Rho: 2, Delta: 1e-5, Epsilon: 10.6, Batch: 64,
		EpsilonText: "10.60", DeltaText: "1e-5", Figures: "ε = 10.60 at δ = 1e-5 (zCDP ρ = 2, 20 releases at most)"}
}

func TestRenderScreens(t *testing.T) {
	tests := []struct {
		name   string
		state  State
		want   []string
		absent []string
	}{
		{"consent", State{Screen: ScreenConsent, Session: session(), Budget: 12},
			[]string{`id="consent"`, "ABC123", "noised updates", "never uploaded", `id="budget"`, "ε = 10.60 at δ = 1e-5 (zCDP ρ = 2, 20 releases at most)", "maximum ε at δ = <span>1e-5</span>"},
			[]string{`id="data"`, `id="train"`, `id="over"`}},
		{"consent over budget", State{Screen: ScreenConsent, Session: session(), Budget: 8},
			[]string{`id="over"`, "up to ε = 10.60, more than this budget"}, nil},
		{"trusted mode says who adds noise", State{Screen: ScreenConsent, Session: Session{Mode: "trusted", Delta: 1e-5}, Budget: 1},
			[]string{"the coordinator adds the noise"}, []string{"adds its own Gaussian noise"}},
		{"data", State{Screen: ScreenData, Session: session(), Data: Data{Count: 3, Sources: []string{"drawn (3)"}}},
			[]string{`id="data"`, `id="draw"`, `id="files"`, `id="demo-btn"`, "drawn (3)"},
			[]string{`disabled`}},
		{"data empty disables training", State{Screen: ScreenData, Session: session()},
			[]string{`id="train-btn"`, `disabled`}, nil},
		{"training", State{Screen: ScreenTrain, Session: session(),
			Train: Training{Conn: "connected", Round: 7, Joined: 6, EpsSpent: 3, EpsBudget: 12, Delta: 1e-5,
				Accuracy: []Point{{1, 0.3}, {7, 0.61}}}},
			[]string{`id="train"`, `id="meter"`, "ε = 3.00 of your budget 12", "61.0% after round 7", `id="acc-line"`, `id="try"`},
			[]string{`id="consent"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.state
			html := render(t, &st)
			for _, w := range tc.want {
				if !strings.Contains(html, w) {
					t.Errorf("missing %q in\n%s", w, html)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(html, a) {
					t.Errorf("unexpected %q", a)
				}
			}
		})
	}
}

func TestPrivacyMeter(t *testing.T) {
	tests := []struct {
		spent, budget float64
		frac          float64
		want          string
	}{
		{0, 4, 0, "Nothing sent yet"},
		{1, 4, 0.25, "e^ε = 2.72 times"},
		{2, 4, 0.5, "stops before"},
		{4, 4, 1, "used up"},
		{10, 4, 1, "×10^4"}, // e^10 = 2.2e4; a fraction above 1 is clamped
	}
	for _, tc := range tests {
		m := PrivacyMeter(tc.spent, tc.budget, 1e-5)
		if math.Abs(m.Fraction-tc.frac) > 1e-12 {
			t.Errorf("spent %v of %v: fraction %v, want %v", tc.spent, tc.budget, m.Fraction, tc.frac)
		}
		if !strings.Contains(m.Meaning, tc.want) {
			t.Errorf("spent %v of %v: meaning %q lacks %q", tc.spent, tc.budget, m.Meaning, tc.want)
		}
	}
}

func TestSparkline(t *testing.T) {
	got := Sparkline([]Point{{1, 0}, {2, 0.5}, {4, 1}}, 4, 100, 50)
	if want := "25.0,50.0 50.0,25.0 100.0,0.0"; got != want {
		t.Fatalf("Sparkline = %q, want %q", got, want)
	}
	if Sparkline(nil, 4, 100, 50) != "" {
		t.Fatal("empty series must draw nothing")
	}
}

func ExamplePrivacyMeter() {
	m := PrivacyMeter(1.5, 8, 1e-5)
	fmt.Println(m.Label)
	fmt.Printf("%.4f\n", m.Fraction)
	// Output:
	// Privacy spent: ε = 1.50 of your budget 8 (19%, δ = 1e-5)
	// 0.1875
}
