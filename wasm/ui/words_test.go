package ui

import (
	"html"
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

// studentTerms are words no student reads on the training screen outside
// its Details, in any mode.
var studentTerms = []string{"zCDP", "ρ", "rho", "δ", "delta", "σ", "sigma", "clipping", "Clipping", "ledger", "Gaussian"}

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
			var spent, most float64
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
				pr, err := owner.Progress(p, privacy.Spent{}, ledger)
				if err != nil {
					t.Fatal(err)
				}
				spent, most = pr.Spent, pr.Most
				if !(spent > 0) || spent >= most || plan.FormatEpsilon(most) != f.EpsilonText() {
					t.Fatalf("spent %v, most %v, session %v", spent, most, f.Epsilon)
				}
			}
			st := State{Screen: ScreenTrain, Session: Session{Algorithm: c.alg, Protection: f.Protection(), Delta: f.Delta,
				EpsilonText: f.EpsilonText(), DeltaText: f.DeltaText(), Figures: f.Text()},
				Train: Training{Conn: "connected", Round: 17, Joined: 17, EpsSpent: spent, EpsMost: most, EpsBudget: owner.Epsilon, Delta: f.Delta,
					Status: SentStatus(f.Protection(), 17), Sent: sent()}}
			m := PrivacyMeter(f.Protection(), 17, spent, most, owner.Epsilon, f.Delta)
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
			for _, w := range studentTerms {
				if strings.Contains(words, w) {
					t.Errorf("%q in a student's words:\n%s", w, words)
				}
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
	if m := PrivacyMeter(plan.ProtectionServer, 0, 0, 7.92, 8, 1e-5); m.Label != "Nothing sent yet." {
		t.Errorf("before sending: %q", m.Label)
	}
	m := PrivacyMeter(plan.ProtectionServer, 1, 0, 7.92, 8, 1e-5)
	if strings.Contains(m.Label, "Nothing sent") || !strings.Contains(m.Label, "Sent to the server, without noise") {
		t.Errorf("sent, not yet published: %q", m.Label)
	}
}
