package ui

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vugu/vugu"
	"github.com/vugu/vugu/staticrender"

	"browserfl/shared/plan"
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
func (nopCtl) AddRow([]string, int)      {}
func (nopCtl) TryRow([]string)           {}

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

// sent is a "what your phone sent" of round 12 about class "Coat".
func sent() Sent {
	s := Sent{Round: 12, Label: "Coat", Clean: make([]byte, 784), Noisy: make([]byte, 784)}
	for i := range s.Clean {
		s.Clean[i], s.Noisy[i] = byte(i), byte(3*i)
	}
	return s
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
		{Screen: ScreenTrain, Session: session(), Train: Training{EpsSpent: 3, EpsMost: 10.6, Share: 0.4, EpsBudget: 12, Delta: 1e-5, Sent: sent()}},
		{Screen: ScreenTrain, Session: fashion(), Train: Training{EpsSpent: 0, EpsMost: 10.6, EpsBudget: 12, Delta: 1e-5, Lobby: true}},
		{Screen: ScreenData, Session: session(), Data: Data{Count: 1}},
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
		for _, term := range []string{"IndexedDB", "δ", "zCDP", "clip", "Clip", "mu^2", "Gaussian", "delta",
			"times more sure", "gradient", "weights", "vector", "likelihood", "ledger"} {
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
			[]string{`id="consent"`, "ABC123", "with random noise added", "never uploaded",
				"at most ε = 10.60 of your privacy", "Smaller is more private", "Each picture is used once"},
			[]string{`id="data"`, `id="train"`, `id="over"`}},
		// The precise terms are there, but only inside the Details
		// disclosure.
		// Details says the same in words: no formula, no technical term.
		{"consent details", State{Screen: ScreenConsent, Session: session(), Budget: 12},
			[]string{`<details id="consent-details">`, "at most ε = 10.60 for the whole lesson", "this browser&#39;s own storage",
				"ε = 12, set under Settings", "Pictures per round"},
			[]string{"zCDP", "δ", "IndexedDB", "Clipping"}},
		// The limit is set under Settings, not on the consent screen: it
		// is said there in one sentence, with its default.
		{"consent states the limit, Settings changes it", State{Screen: ScreenConsent, Session: session(), Budget: 8},
			[]string{`id="limit-line"`, "fit your privacy limit of ε = 8 (you can change it under Settings", `<details id="settings">`,
				`id="budget"`, "8 is the usual setting"},
			[]string{`id="limit-fixed"`, `disabled`}},
		{"the limit is fixed once joined", State{Screen: ScreenData, Session: session(), Budget: 8},
			[]string{`id="budget"`, `id="limit-fixed"`}, nil},
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
			[]string{`id="data"`, `id="draw"`, `id="files"`, `id="demo-btn"`, "drawn (3)", ">7</option>", `<button id="train-btn" class="primary">`},
			[]string{"Coat", "IDX"}},
		// After samples are used, only drawings (appended last) may be
		// added: a new source in front would move used samples.
		{"data after use: drawing only", State{Screen: ScreenData, Session: session(), Data: Data{Count: 30, Used: 28}},
			[]string{`id="draw"`, "Why only drawing?"}, []string{`id="demo-btn"`, `id="files"`}},
		{"data empty disables training", State{Screen: ScreenData, Session: session()},
			[]string{`<button id="train-btn" class="primary" disabled`}, nil},
		// A Fashion-MNIST session draws its own classes, not digits.
		{"fashion labels in the drawing menu", State{Screen: ScreenData, DrawLbl: 4, Session: fashion()},
			[]string{">T-shirt/top</option>", ">Coat</option>", ">Ankle boot</option>", "Add as Coat"},
			[]string{">7</option>"}},
		{"training", State{Screen: ScreenTrain, Session: session(),
			Train: Training{Conn: "connected", Round: 7, Joined: 6, EpsSpent: 3, EpsMost: 10.6, Share: 0.4, EpsBudget: 12, Delta: 1e-5,
				Accuracy: []Point{{1, 0.3}, {7, 0.61}}}},
			[]string{`id="train"`, `class="meter meter-calm"`, "at most ε = 10.60 of your limit of 12", "Used so far: ε = 3.00 (40% of this lesson&#39;s privacy)",
				`style="width:40.00%"`, `data-fill="0.4"`, "61.0% right after round 7", `id="acc-line"`, `id="try"`,
				`id="stop-btn"`, `<details id="train-details">`},
			[]string{`id="consent"`, `id="used-up"`, `id="phone-sent"`}},
		{"what your phone sent", State{Screen: ScreenTrain, Session: fashion(), Train: Training{Conn: "connected", Round: 12, Sent: sent()}},
			[]string{`id="phone-sent"`, `data-round="12"`, `id="sent-clean"`, `id="sent-noisy"`, "What your phone sent", "round 12, about “Coat”",
				"with random noise added", "Only the right one left your phone"}, nil},
		{"what your phone sent, trusted", State{Screen: ScreenTrain, Session: Session{Mode: "trusted", Delta: 1e-5}, Train: Training{Sent: sent()}},
			[]string{`id="phone-sent"`, "server adds the noise"}, []string{"with random noise added"}},
		{"one picture", State{Screen: ScreenData, Session: session(), Data: Data{Count: 1, Sources: []string{"drawn (1)"}}},
			[]string{`>1</b><span id="data-words"> picture stored</span>`}, []string{"pictures stored"}},
		{"data used up", State{Screen: ScreenTrain, Session: session(),
			Train: Training{Conn: "stopped", Done: true, UsedUp: true, Status: "All your pictures have been used."}},
			[]string{`id="used-up"`, "All your pictures have been used", `id="more-btn"`, `id="done-btn"`, "Draw more pictures", "I&#39;m done"},
			[]string{`id="stop-btn"`}},
		{"consent offers a nickname box", State{Screen: ScreenConsent, Session: session(), Budget: 12, Nickname: "Ada"},
			[]string{`id="nickname"`, `maxlength="24"`, `value="Ada"`, "not your real name"}, nil},
		{"lobby", State{Screen: ScreenTrain, Session: session(), Nickname: "Ada",
			Train: Training{Conn: "connected", Lobby: true}},
			[]string{`id="lobby"`, "Waiting for your teacher to start…", "as Ada", "privacy limit", `id="stop-btn"`}, []string{`id="status"`}},
		// A status in the lobby (a lost connection) still shows.
		{"lobby, connection lost", State{Screen: ScreenTrain, Session: session(),
			Train: Training{Conn: "reconnecting", Lobby: true, Status: "Lost the connection. Trying again…"}},
			[]string{`id="lobby"`, `id="status"`, "Lost the connection"}, nil},
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

// The meter reads against the plan (the session's most), calmly: its
// fill is the share of the lesson's privacy used (plan.Progress.Share,
// not epsilon over the most), its colour stays calm within the plan, it
// says the fill is as planned only when it is, and the
// alarming-sounding exact meaning sits behind Details.
func TestPrivacyMeter(t *testing.T) {
	tests := []struct {
		pr     plan.Progress
		budget float64
		frac   float64
		class  string
		want   string
		not    string
		exact  string
	}{
		{plan.Progress{Spent: 0, Most: 7.06}, 8, 0, "meter-calm", "Nothing sent yet", "as planned", "at most 1,164 times"},
		{plan.Progress{Spent: 4.6, Most: 7.06, Share: 0.123, Releases: 17, Planned: 0.123, OnPlan: true}, 8, 0.123, "meter-calm",
			"(12% of this lesson's privacy)", "almost", "at most 99 times more sure"},
		{plan.Progress{Spent: 4.6, Most: 7.06, Share: 0.585, Releases: 17, Planned: 0.585, OnPlan: true, Decreasing: true}, 8, 0.585, "meter-calm",
			"as planned after 17 updates: the first updates use the most", "almost", "at most 99 times more sure"},
		{plan.Progress{Spent: 4.6, Most: 7.06, Share: 0.6, Releases: 17, Planned: 0.585, OnPlan: false, Decreasing: true}, 8, 0.6, "meter-calm",
			"(60% of this lesson's privacy)", "as planned after", "at most 99 times more sure"},
		{plan.Progress{Spent: 1, Most: 4, Share: 0.001}, 8, 0.001, "meter-calm", "(less than 1% of this lesson's privacy)", "(0%", "apart from a 1 in 100,000 chance"},
		{plan.Progress{Spent: 1, Most: 4, Share: 0.9999}, 8, 0.9999, "meter-calm", "(99% of this lesson's privacy)", "100%", "apart from a 1 in 100,000 chance"},
		{plan.Progress{Spent: 7.06, Most: 7.06, Share: 1}, 8, 1, "meter-calm", "as planned", "", "1,164 times"},
		{plan.Progress{Spent: 8, Most: 8, Share: 1}, 8, 1, "meter-calm", "limit is reached", "", "2,981 times"},
		{plan.Progress{Spent: 5, Most: 4, Share: 1.3}, 8, 1, "meter-over", "more than this lesson's most", "", "148 times"},
		{plan.Progress{Spent: 15, Most: 15, Share: 1}, 20, 1, "meter-calm", "as planned", "", "about 3 million times"},
	}
	for _, tc := range tests {
		m := PrivacyMeter(plan.ProtectionDevice, 1, tc.pr, tc.budget, 1e-5)
		if math.Abs(m.Fraction-tc.frac) > 1e-12 {
			t.Errorf("%+v: fraction %v, want %v", tc.pr, m.Fraction, tc.frac)
		}
		if m.Class != tc.class {
			t.Errorf("%+v: class %q, want %q", tc.pr, m.Class, tc.class)
		}
		all := m.Plan + " " + m.Label + " " + m.Meaning
		if !strings.Contains(all, tc.want) {
			t.Errorf("%+v: %q lacks %q", tc.pr, all, tc.want)
		}
		if tc.not != "" && strings.Contains(all, tc.not) {
			t.Errorf("%+v: %q says %q", tc.pr, all, tc.not)
		}
		if !strings.Contains(m.Exact, tc.exact) {
			t.Errorf("%+v: exact meaning %q lacks %q", tc.pr, m.Exact, tc.exact)
		}
		if !strings.Contains(m.Plan, "at most ε = "+plan.FormatEpsilon(tc.pr.Most)+" of your limit of") {
			t.Errorf("plan line %q", m.Plan)
		}
		for _, alarm := range []string{"times more sure", "weak"} {
			if strings.Contains(m.Plan+m.Label+m.Meaning, alarm) {
				t.Errorf("%+v: %q outside the exact meaning", tc.pr, alarm)
			}
		}
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 pictures", 1: "1 picture", 2: "2 pictures"} {
		if got := Plural(n, "picture", "pictures"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
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
	// After 17 updates of a 200-round noise-cancellation lesson
	// (plan.Budget.Progress's figures for it).
	m := PrivacyMeter(plan.ProtectionDevice, 17, plan.Progress{Spent: 5.75, Most: 7.92, Share: 0.585, Releases: 17,
		Planned: 0.585, OnPlan: true, Decreasing: true}, 8, 1e-5)
	fmt.Println(m.Plan)
	fmt.Println(m.Label)
	fmt.Println(m.Fraction, m.Class)
	// Output:
	// By the end of this lesson, at most ε = 7.92 of your limit of 8 is used.
	// Used so far: ε = 5.75 (58% of this lesson's privacy)
	// 0.585 meter-calm
}
