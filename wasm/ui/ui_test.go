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
func (nopCtl) EnterCode(string)          {}
func (nopCtl) DrawMore()                 {}
func (nopCtl) Done()                     {}

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
		Rounds: 20, Cohort: 5, Clip: 1, Rho: 2, Delta: 1e-5, Epsilon: 10.6, Batch: 64, SinglePass: true,
		EpsilonText: "10.60", DeltaText: "1e-5", Figures: "ε = 10.60 at δ = 1e-5 (zCDP ρ = 2, 20 releases at most)"}
}

func fashion() Session {
	s := session()
	s.Labels = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
	return s
}

// The used-up notice comes before everything else of the training
// screen: on a phone it is what the student sees first.
func TestUsedUpNoticeFirst(t *testing.T) {
	html := render(t, &State{Screen: ScreenTrain, Session: session(), Train: Training{Done: true, UsedUp: true}})
	notice, stats := strings.Index(html, `id="used-up"`), strings.Index(html, `class="stats"`)
	if notice < 0 || stats < 0 || notice > stats {
		t.Errorf("used-up notice at %d, stats at %d: want the notice first", notice, stats)
	}
}

// Words a student reads outside Details carry none of the precise terms.
func TestPlainWordsOutsideDetails(t *testing.T) {
	for _, st := range []State{
		{Screen: ScreenConsent, Session: session(), Budget: 12},
		{Screen: ScreenTrain, Session: session(), Train: Training{EpsSpent: 3, EpsBudget: 12, Delta: 1e-5}},
	} {
		html := render(t, &st)
		for strings.Contains(html, "<details") {
			i := strings.Index(html, "<details")
			j := strings.Index(html[i:], "</details>")
			if j < 0 {
				t.Fatal("unclosed details")
			}
			html = html[:i] + html[i+j+len("</details>"):]
		}
		for _, term := range []string{"IndexedDB", "δ", "zCDP", "clip", "Clip", "mu^2", "Gaussian", "delta"} {
			if strings.Contains(html, term) {
				t.Errorf("screen %d shows %q outside Details", st.Screen, term)
			}
		}
	}
}

func TestRenderScreens(t *testing.T) {
	tests := []struct {
		name   string
		state  State
		want   []string
		absent []string
	}{
		{"consent", State{Screen: ScreenConsent, Session: session(), Budget: 12},
			[]string{`id="consent"`, "ABC123", "with random noise added", "never uploaded", `id="budget"`,
				"at most ε = 10.60 of your privacy", "Smaller is more private", "Each picture is used once"},
			[]string{`id="data"`, `id="train"`, `id="over"`}},
		// The precise terms are there, but only inside the Details
		// disclosure.
		{"consent details", State{Screen: ScreenConsent, Session: session(), Budget: 12},
			[]string{`<details id="consent-details">`, "ε = 10.60 at δ = 1e-5 (zCDP ρ = 2, 20 releases at most)", "IndexedDB", "Clipping bound"}, nil},
		{"consent, samples reused", State{Screen: ScreenConsent, Session: Session{Mode: "untrusted", Delta: 1e-5}, Budget: 1},
			[]string{"used again and again"}, []string{"used once"}},
		{"consent over budget", State{Screen: ScreenConsent, Session: session(), Budget: 8},
			[]string{`id="over"`, "up to ε = 10.60, more than your limit"}, nil},
		{"trusted mode says who adds noise", State{Screen: ScreenConsent, Session: Session{Mode: "trusted", Delta: 1e-5}, Budget: 1},
			[]string{"server adds the noise", "trusting that server"}, []string{"adds the noise itself"}},
		{"join box", State{Screen: ScreenJoin, Code: "WRONG", Error: `The code "WRONG" is not valid.`},
			[]string{`id="join"`, `id="code-input"`, `value="WRONG"`, `id="code-btn"`, "not valid"},
			[]string{`id="consent"`}},
		{"finished before consent", State{Screen: ScreenClosed, Closed: ClosedFinished, Session: session()},
			[]string{`id="closed"`, "This session has finished"}, []string{`id="consent"`, `id="retry-btn"`}},
		{"full before consent", State{Screen: ScreenClosed, Closed: ClosedFull, Session: session()},
			[]string{`id="closed"`, "This session is full", `id="retry-btn"`}, []string{`id="consent"`}},
		{"data", State{Screen: ScreenData, Session: session(), Data: Data{Count: 3, Sources: []string{"drawn (3)"}}},
			[]string{`id="data"`, `id="draw"`, `id="files"`, `id="demo-btn"`, "drawn (3)", ">7</option>"},
			[]string{`disabled`, "Coat"}},
		// After samples are used, only drawings (appended last) may be
		// added: a new source in front would move used samples.
		{"data after use: drawing only", State{Screen: ScreenData, Session: session(), Data: Data{Count: 30, Used: 28}},
			[]string{`id="draw"`, "Why only drawing?"}, []string{`id="demo-btn"`, `id="files"`}},
		{"data empty disables training", State{Screen: ScreenData, Session: session()},
			[]string{`id="train-btn"`, `disabled`}, nil},
		// A Fashion-MNIST session draws its own classes, not digits.
		{"fashion labels in the drawing menu", State{Screen: ScreenData, DrawLbl: 4, Session: fashion()},
			[]string{">T-shirt/top</option>", ">Coat</option>", ">Ankle boot</option>", "Add as Coat"},
			[]string{">7</option>"}},
		{"training", State{Screen: ScreenTrain, Session: session(),
			Train: Training{Conn: "connected", Round: 7, Joined: 6, EpsSpent: 3, EpsBudget: 12, Delta: 1e-5,
				Accuracy: []Point{{1, 0.3}, {7, 0.61}}}},
			[]string{`id="train"`, `id="meter"`, "ε = 3.00 of your limit 12", "61.0% right after round 7", `id="acc-line"`, `id="try"`,
				`id="stop-btn"`, `<details id="train-details">`},
			[]string{`id="consent"`, `id="used-up"`}},
		{"data used up", State{Screen: ScreenTrain, Session: session(),
			Train: Training{Conn: "stopped", Done: true, UsedUp: true, Status: "All your pictures have been used."}},
			[]string{`id="used-up"`, "All your pictures have been used", `id="more-btn"`, `id="done-btn"`, "Draw more pictures", "I&#39;m done"},
			[]string{`id="stop-btn"`}},
		{"consent offers a nickname box", State{Screen: ScreenConsent, Session: session(), Budget: 12, Nickname: "Ada"},
			[]string{`id="nickname"`, `maxlength="24"`, `value="Ada"`, "not your real name"}, nil},
		{"lobby", State{Screen: ScreenTrain, Session: session(), Nickname: "Ada",
			Train: Training{Conn: "connected", Lobby: true, Status: "Waiting for your teacher to start…"}},
			[]string{`id="lobby"`, "Waiting for your teacher to start…", "as Ada", "privacy limit", `id="stop-btn"`}, nil},
		{"training has no lobby notice", State{Screen: ScreenTrain, Session: session(), Train: Training{Conn: "connected", Round: 2}},
			nil, []string{`id="lobby"`}},
		{"done", State{Screen: ScreenDone, Session: session()},
			[]string{`id="done"`, "Thank you"}, []string{`id="train"`}},
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
		{1, 4, 0.25, "at most 2.72 times more sure"},
		{1, 4, 0.25, "apart from a 1 in 100,000 chance"},
		{2, 4, 0.5, "stops before"},
		{4, 4, 1, "limit is reached"},
		{10, 4, 1, "22,026 times"}, // e^10; a fraction above 1 is clamped
		{7, 8, 0.875, "1,097 times"},
		{15, 4, 1, "about 3 million times"},
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
	// Privacy used: ε = 1.50 of your limit 8 (19%)
	// 0.1875
}
