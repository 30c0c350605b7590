package ui

import (
	"html"
	"strings"
	"testing"

	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
)

// sharedUISession is the page's Session of the default lesson in the
// shared-noise mode with cohort m (threshold ceil(0.7 m)) and c
// colluders, with its figures from plan.SessionFigures as the page
// fills them.
func sharedUISession(t *testing.T, m, c int) (Session, plan.Figures) {
	t.Helper()
	p := lessonShared(c)
	p.M, p.Cohort = 3*m, m
	f, err := plan.SessionFigures(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	return Session{JoinCode: "K7QX2MH4PA", Algorithm: "shared", Mode: "untrusted", Protection: f.Protection(), Model: "logreg",
		Rounds: p.Rounds, Cohort: m, Clip: 1, Rho: f.WorstRho, Delta: f.Delta, Epsilon: f.Epsilon, Batch: p.Batch, SinglePass: true,
		EpsilonText: f.EpsilonText(), DeltaText: f.DeltaText(), Figures: f.Text(),
		Shared: true, Promise: f.Promise, Floor: f.Floor, PromiseText: f.PromiseText(), FloorText: f.FloorText(),
		Threshold: f.Threshold, Colluders: f.Colluders}, f
}

// TestSharedWords: a shared-noise session's page states both figures
// (plan.SessionFigures) on the consent screen, in its Details and on the
// meter, with the condition of each in plain words; the meter says how
// many classmates share the noise in this round; "what your phone sent"
// says that only a scrambled form left the phone, never that the noisy
// picture itself did.
func TestSharedWords(t *testing.T) {
	for _, c := range []int{0, 2} {
		sess, f := sharedUISession(t, 10, c)
		if f.Promise >= f.Floor || f.Threshold != 7 {
			t.Fatalf("c %d: promise %v, floor %v, threshold %d", c, f.Promise, f.Floor, f.Threshold)
		}
		consent := html.UnescapeString(render(t, &State{Screen: ScreenConsent, Session: sess, Budget: 8}))
		cond := "If the other phones are real, this lesson uses at most ε = " + f.PromiseText()
		if c > 0 {
			cond = "If at most 2 of the other phones in a round are fake, this lesson uses at most ε = " + f.PromiseText()
		}
		fake := "; if they were fake, at most ε = "
		if c > 0 {
			fake = "; if more were fake, at most ε = "
		}
		for _, w := range []string{cond + fake + f.FloorText() + ".",
			"a scrambled form of what the page learned, with your share of the noise added.", "the total of at least 7 phones", "if the other phones are real; at most ε = " + f.FloorText() + " from your own noise alone"} {
			if !strings.Contains(consent, w) {
				t.Errorf("c %d: the consent screen lacks %q:\n%s", c, w, consent)
			}
		}
		if strings.Contains(consent, `id="over"`) {
			t.Errorf("c %d: the default limit refuses the default lesson:\n%s", c, consent)
		}

		owner := plan.DefaultBudget()
		pr, err := owner.Progress(lessonShared(c), privacy.Spent{}, privacy.Charged(f.WorstRho/2), 12)
		if err != nil {
			t.Fatal(err)
		}
		st := State{Screen: ScreenTrain, Session: sess, Budget: 8,
			Train: Training{Conn: "connected", Round: 12, Joined: 12, EpsSpent: pr.Spent, EpsMost: pr.Most, Share: pr.Share, Releases: 12,
				Planned: pr.Planned, OnPlan: pr.OnPlan, EpsBudget: 8, Delta: f.Delta, FloorSpent: pr.FloorSpent, FloorMost: pr.FloorMost,
				Cohort: 10, Status: SharedSentStatus(12, 10), Sent: sent()}}
		train := html.UnescapeString(render(t, &st))
		for _, w := range []string{"If the other phones are real: by the end of this lesson, at most ε = " + plan.FormatEpsilon(pr.Most),
			"Even if the other phones were fake, your own noise keeps it at most ε = " + plan.FormatEpsilon(pr.FloorMost),
			"used so far: ε = " + plan.FormatEpsilon(pr.FloorSpent), "the page allows up to 64",
			"you and 9 classmates share the noise", "Only a scrambled form of the right one left your phone",
			"Sent a scrambled, noisy update for round 12.", "With your share of the noise (sent only scrambled)"} {
			if !strings.Contains(train, w) {
				t.Errorf("c %d: the training screen lacks %q:\n%s", c, w, train)
			}
		}
		for _, w := range []string{"what your phone really sent", "Only the right one left your phone", "someone who sees everything this page sent"} {
			if strings.Contains(train, w) {
				t.Errorf("c %d: the training screen says %q", c, w)
			}
		}
		if !(pr.FloorSpent > pr.Spent) || !(pr.FloorMost > pr.FloorSpent) {
			t.Errorf("c %d: floor %v of %v, promise %v", c, pr.FloorSpent, pr.FloorMost, pr.Spent)
		}
	}
}

// lessonShared is lesson("shared") on pictures (784 features, 10
// classes: the model's dimension gives the promise its coupling term)
// with c colluders.
func lessonShared(c int) (p optim.Params) {
	p = lesson("shared")
	p.Features, p.Classes, p.Colluders = 784, 10, c
	return p
}

// TestSharedOverLimit: the page refuses a shared-noise session by either
// figure and says which: at epsilon 7.92 a cohort of 50 (threshold 35)
// keeps the promise within the default limit of 8, but its floor (88)
// is over 8 times it; a limit of 4 is under the promise.
func TestSharedOverLimit(t *testing.T) {
	sess, f := sharedUISession(t, 50, 0)
	if !(f.Promise <= 8 && f.Floor > plan.DefaultFloorRatio*8) {
		t.Fatalf("promise %v, floor %v: the case needs the floor alone over the default limit", f.Promise, f.Floor)
	}
	consent := html.UnescapeString(render(t, &State{Screen: ScreenConsent, Session: sess, Budget: 8}))
	if !strings.Contains(consent, `id="over"`) || !strings.Contains(consent, "your own noise would keep this session only to ε = "+f.FloorText()) {
		t.Errorf("a floor over the limit is not said:\n%s", consent)
	}
	if w := OverLimit(sess, 8); !strings.Contains(w, "If the other phones were fake") || !strings.Contains(w, f.FloorText()) {
		t.Errorf("OverLimit at 8: %q", w)
	}
	if w := OverLimit(sess, 4); !strings.Contains(w, "If the other phones are real, this session could use up to ε = "+f.PromiseText()) {
		t.Errorf("OverLimit at 4: %q", w)
	}
	small, _ := sharedUISession(t, 10, 0)
	if consent := html.UnescapeString(render(t, &State{Screen: ScreenConsent, Session: small, Budget: 8})); strings.Contains(consent, `id="over"`) {
		t.Errorf("the default lesson of 10 is refused at the default limit")
	}
}
