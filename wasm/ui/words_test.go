package ui

import (
	"html"
	"regexp"
	"strings"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
)

// lesson is the default lesson (cmd/coordinator's demo session) run by
// algorithm alg; the non-private references get no privacy target.
func lesson(alg string) optim.Params {
	eps, delta := plan.DefaultLessonTarget()
	p := optim.Params{Algorithm: alg, Model: "logreg", M: 30, Cohort: 10, Rounds: 200, Batch: 32, Clip: 1, Eta: 0.02, Epsilon: eps, Delta: delta}
	switch alg {
	case "soteria-svrg", "soteria-saga":
		p.LocalSize = 6400
	case "local":
		p.LocalSteps = 4
	case "mu2", "sgd":
		p.Epsilon, p.Delta = 0, 0
	}
	return p
}

// TestPrivacyWordsEveryMode: for every algorithm a page can be offered,
// the privacy words of the training screen (meter, its details, status
// lines, "what your phone sent", the Details row) are chosen by the
// session's figures (plan.SessionFigures) and say what holds: with the
// device's noise a noisy update and one epsilon against everyone; with
// the server's noise an update sent without noise, the server unbounded
// and epsilon (7.92 for the default lesson) against everyone else,
// growing with the rounds published; without noise, no protection. The
// figures come from the same functions the page calls
// (plan.Budget.Progress, plan.Figures.Published).
func TestPrivacyWordsEveryMode(t *testing.T) {
	device := []string{"Sent a noisy update for round 17.", "Used so far: ε = ", "someone who sees everything this page sent",
		"with random noise added", "counted by this page itself", "The privacy it used still counts"}
	server := []string{"Sent an update for round 17; the server adds the noise.", "Used so far, for everyone but the server: ε = ",
		"at most ε = 7.92 of your limit of 8 is used for everyone but the teacher's server", "nothing limits what it can learn",
		"Against the teacher's server: no limit", "Against everyone else: ε = ", "without noise", "the server sees it as it is",
		"For the teacher's server: no limit"}
	none := []string{"No privacy protection", "no privacy protection", "None: this session adds no noise."}
	for _, c := range []struct {
		alg, protection string
		want, not       []string
	}{
		{"nc", plan.ProtectionDevice, device, server},
		{"trusted", plan.ProtectionServer, server, append([]string{"Nothing sent", "ε = 0", "noisy update", "with random noise added", "still counts"}, device...)},
		{"noisysgd", plan.ProtectionDevice, device, server},
		{"cdpsgd", plan.ProtectionDevice, device, server},
		{"local", plan.ProtectionDevice, device, server},
		{"soteria-sgd", plan.ProtectionDevice, device, server},
		{"soteria-svrg", plan.ProtectionDevice, device, server},
		{"soteria-saga", plan.ProtectionDevice, device, server},
		{"mu2", plan.ProtectionNone, none, []string{"ε =", "noisy update", "with random noise", "with noise", "still counts"}},
		{"sgd", plan.ProtectionNone, none, []string{"ε =", "noisy update", "with random noise", "with noise", "still counts"}},
	} {
		t.Run(c.alg, func(t *testing.T) {
			p := lesson(c.alg)
			f, err := plan.SessionFigures(p, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Protection(); got != c.protection {
				t.Fatalf("protection %q, want %q", got, c.protection)
			}
			// The page after its 17th update, in round 17 (all 17
			// rounds published: the trusted figure counts 17 of them).
			owner := plan.DefaultBudget()
			var pr plan.Progress
			if f.Private {
				var ledger privacy.Spent
				if f.Trusted {
					ledger, err = f.Published(17)
				} else {
					ledger = privacy.Charged(f.WorstRho / 10)
				}
				if err != nil {
					t.Fatal(err)
				}
				if pr, err = owner.Progress(p, privacy.Spent{}, ledger, 17); err != nil {
					t.Fatal(err)
				}
				if !(pr.Spent > 0) || pr.Spent >= pr.Most || plan.FormatEpsilon(pr.Most) != f.EpsilonText() {
					t.Fatalf("%+v, session %v", pr, f.Epsilon)
				}
			}
			st := State{Screen: ScreenTrain, Session: Session{Algorithm: c.alg, Protection: f.Protection(), Delta: f.Delta,
				EpsilonText: f.EpsilonText(), DeltaText: f.DeltaText(), Figures: f.Text()},
				Train: Training{Conn: "connected", Round: 17, Joined: 17, EpsSpent: pr.Spent, EpsMost: pr.Most, Share: pr.Share,
					Releases: pr.Releases, Planned: pr.Planned, OnPlan: pr.OnPlan, Decreasing: pr.Decreasing, EpsBudget: owner.Epsilon, Delta: f.Delta,
					Status: SentStatus(f.Protection(), 17), Sent: sent()}}
			m := PrivacyMeter(f.Protection(), 17, pr, owner.Epsilon, f.Delta)
			words := strings.Join([]string{m.Plan, m.Label, m.Meaning, m.Exact, SentStatus(f.Protection(), 17),
				ExcludedStatus(f.Protection(), 17), PrivacySource(f.Protection())}, "\n")
			// What the screen shows, and the line a round without this
			// page's update brings.
			shown := html.UnescapeString(render(t, &st)) + "\n" + ExcludedStatus(f.Protection(), 17)
			for _, w := range c.want {
				if !strings.Contains(shown, w) {
					t.Errorf("the screen lacks %q; the words:\n%s", w, words)
				}
			}
			for _, w := range c.not {
				if strings.Contains(words, w) || strings.Contains(shown, w) {
					t.Errorf("%q must not be said:\n%s", w, words)
				}
			}
			if found := TechnicalIn(words); len(found) > 0 {
				t.Errorf("%q in a student's words:\n%s", found, words)
			}
			if c.protection == plan.ProtectionServer && !strings.Contains(m.Plan, "ε = 7.92") {
				t.Errorf("the trusted plan line %q does not state the session's 7.92", m.Plan)
			}
		})
	}
}

// TestServerMeterBeforeAfterSending: with the server's noise the meter
// says nothing was sent only while nothing was, and after a send whose
// round is not yet published it says the server has it.
func TestServerMeterBeforeAfterSending(t *testing.T) {
	if m := PrivacyMeter(plan.ProtectionServer, 0, plan.Progress{Most: 7.92}, 8, 1e-5); m.Label != "Nothing sent yet." {
		t.Errorf("before sending: %q", m.Label)
	}
	m := PrivacyMeter(plan.ProtectionServer, 1, plan.Progress{Most: 7.92}, 8, 1e-5)
	if strings.Contains(m.Label, "Nothing sent") || !strings.Contains(m.Label, "Sent to the server, without noise") {
		t.Errorf("sent, not yet published: %q", m.Label)
	}
}

// tags matches an HTML tag: what is left is the text a student reads.
var tags = regexp.MustCompile(`<[^>]*>`)

// TestNoTechnicalWordsOnAnyScreen renders every screen of the page, its
// Details and Settings included, for a session of each protection (the
// default lesson run by nc, trusted and mu2) and for a row task, and
// reads its text: none of TechnicalWords may be there. The planted case
// (a Details row written in the formula's words) shows the check finds them.
func TestNoTechnicalWordsOnAnyScreen(t *testing.T) {
	planted := "<td>ε = 7.92 at δ = 1e-5 (zCDP ρ = 1.365)</td><td>Clipping bound S</td><p>or IDX files</p>"
	if found := TechnicalIn(tags.ReplaceAllString(planted, " ")); len(found) != 5 {
		t.Fatalf("the planted words are found as %q, want IDX, zCDP, ρ, δ and clip", found)
	}
	if found := TechnicalIn("Throughout the lesson, your phone helps"); len(found) > 0 {
		t.Fatalf("plain words found as %q", found)
	}
	tab, _ := taskSession(t, "tabular")
	for _, alg := range []string{"nc", "trusted", "mu2", "tabular", "shared"} {
		var sess Session
		if alg == "tabular" {
			sess = tab
		} else {
			f, err := plan.SessionFigures(lesson(alg), 0)
			if err != nil {
				t.Fatal(err)
			}
			sess = Session{JoinCode: "K7QX2MH4PA", Algorithm: alg, Mode: "untrusted", Protection: f.Protection(), Model: "logreg",
				Rounds: 200, Cohort: 10, Clip: 1, Rho: f.WorstRho, Delta: f.Delta, Epsilon: f.Epsilon, Batch: 32, SinglePass: true,
				EpsilonText: f.EpsilonText(), DeltaText: f.DeltaText(), Figures: f.Text()}
			if f.Trusted {
				sess.Mode = "trusted"
			}
			sess.Shared, sess.Promise, sess.Floor, sess.PromiseText, sess.FloorText = f.Shared, f.Promise, f.Floor, f.PromiseText(), f.FloorText()
			sess.Threshold, sess.Colluders = f.Threshold, f.Colluders
		}
		train := Training{Conn: "connected", Round: 17, Joined: 17, EpsSpent: 5.75, EpsMost: 7.92, Share: 0.585, Releases: 17,
			Planned: 0.585, OnPlan: true, Decreasing: true, EpsBudget: 8, Delta: 1e-5, Status: SentStatus(sess.Protection, 17),
			Detail: "round 17 sent", Sent: sent(), Accuracy: []Point{{17, 0.6}}, FloorSpent: 20, FloorMost: 28.9, Cohort: 10}
		if sess.Shared {
			train.Status = SharedSentStatus(17, train.Cohort)
		}
		for _, st := range []State{
			{Screen: ScreenJoin, Code: "K7QX"},
			{Screen: ScreenClosed, Closed: ClosedFinished, Session: sess},
			{Screen: ScreenClosed, Closed: ClosedFull, Session: sess},
			{Screen: ScreenConsent, Session: sess, Budget: 8},
			{Screen: ScreenConsent, Session: sess, Budget: 1},
			{Screen: ScreenData, Session: sess, Budget: 8, Data: Data{Count: 3, Sources: []string{"drawn (3)"}, Refused: []string{"a.csv, line 2: too short"}}},
			{Screen: ScreenData, Session: sess, Budget: 8, Data: Data{Count: 30, Used: 28}},
			{Screen: ScreenTrain, Session: sess, Budget: 8, Train: Training{Conn: "connected", Lobby: true, EpsMost: 7.92, EpsBudget: 8, Delta: 1e-5}},
			{Screen: ScreenTrain, Session: sess, Budget: 8, Train: train},
			{Screen: ScreenTrain, Session: sess, Budget: 8, Train: Training{Done: true, UsedUp: true, EpsSpent: 7.92, EpsMost: 7.92, Share: 1, EpsBudget: 8, Delta: 1e-5}},
			{Screen: ScreenDone, Session: sess},
			{Screen: ScreenLeft, Session: sess},
		} {
			text := html.UnescapeString(tags.ReplaceAllString(render(t, &st), " "))
			if found := TechnicalIn(text); len(found) > 0 {
				t.Errorf("%s, screen %d: the page shows %q:\n%s", alg, st.Screen, found, strings.Join(strings.Fields(text), " "))
			}
		}
	}
}

// TestShareWords: the meter's share is floored (never 100% before the
// lesson's privacy is used), shows 100% for a ledger at the plan within
// its sum's rounding, and more only for a ledger really over it.
func TestShareWords(t *testing.T) {
	for _, c := range []struct {
		share float64
		want  string
	}{
		{0, "0% of this lesson's privacy"},
		{0.004, "less than 1% of this lesson's privacy"},
		{0.999, "99% of this lesson's privacy"},
		{1, "100% of this lesson's privacy"},
		{1 + 1e-12, "100% of this lesson's privacy"},
		{1.003, "101% of this lesson's privacy"},
		{1.2, "120% of this lesson's privacy"},
	} {
		if got := shareWords(c.share); got != c.want {
			t.Errorf("shareWords(%v) = %q, want %q", c.share, got, c.want)
		}
	}
}

// TestSharedStatuses: a shared-noise page's status lines after a send and
// after an inclusion say the update was scrambled and how many classmates
// share the noise (none named for a cohort of one).
func TestSharedStatuses(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{SharedSentStatus(3, 10), "Sent a scrambled, noisy update for round 3. In this round, you and 9 classmates share the noise."},
		{SharedIncludedStatus(3, 10), "Round 3 included your scrambled update. In this round, you and 9 classmates share the noise."},
		{SharedIncludedStatus(4, 2), "Round 4 included your scrambled update. In this round, you and 1 classmate share the noise."},
		{SharedIncludedStatus(5, 1), "Round 5 included your scrambled update."},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// The last word says how many rounds hold the page's updates, in the
// words of the session's protection.
func TestFinishedStatus(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{FinishedStatus(plan.ProtectionDevice, true, 2), "The session has finished. Your scrambled, noisy updates are in 2 rounds of the class model. Thank you for helping!"},
		{FinishedStatus(plan.ProtectionDevice, false, 1), "The session has finished. Your noisy update is in 1 round of the class model. Thank you for helping!"},
		{FinishedStatus(plan.ProtectionServer, false, 3), "The session has finished. Your updates are in 3 rounds of the class model. Thank you for helping!"},
		{FinishedStatus(plan.ProtectionNone, false, 1), "The session has finished. Your update is in 1 round of the class model. Thank you for helping!"},
		{FinishedStatus(plan.ProtectionDevice, true, 0), "The session has finished. Thank you for helping!"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
