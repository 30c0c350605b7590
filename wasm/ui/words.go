package ui

import (
	"fmt"
	"regexp"

	"browserfl/shared/plan"
)

// The privacy sentences of the training screen outside the meter, for
// each protection a session can give (plan.Figures.Protection): each
// says only what holds in that mode.

// SentStatus is the status line once this page has sent its update for
// round t.
func SentStatus(protection string, t int) string {
	switch protection {
	case plan.ProtectionServer:
		return fmt.Sprintf("Sent an update for round %d; the server adds the noise.", t)
	case plan.ProtectionNone:
		return fmt.Sprintf("Sent an update for round %d, with no privacy protection.", t)
	}
	return fmt.Sprintf("Sent a noisy update for round %d.", t)
}

// SharedSentStatus is SentStatus in a shared-noise session: the update
// left scrambled, and cohort devices (this one included) share the noise.
// The status line keeps the classmates' count after the send: the page
// publishes its state a few times a second, so the cohort's own status,
// set just before, may never be drawn.
func SharedSentStatus(t, cohort int) string {
	return withClassmates(fmt.Sprintf("Sent a scrambled, noisy update for round %d.", t), cohort)
}

// SharedIncludedStatus is the status line when round t of a shared-noise
// session included this page's update, summed with those of cohort - 1
// classmates. It stays until the next round begins, so what was sent and
// with whom is said even when the status after the send, which a fast
// round replaces within the page's publishing interval, is never drawn.
func SharedIncludedStatus(t, cohort int) string {
	return withClassmates(fmt.Sprintf("Round %d included your scrambled update.", t), cohort)
}

// FinishedStatus is the status line once the session has finished:
// how many rounds of the class model hold this page's updates (included,
// the runtime's count, kept across reloads), said in the words of the
// session's protection. It is the page's last word, so it stays on screen
// when the statuses of the rounds went by too fast to be read.
func FinishedStatus(protection string, shared bool, included int) string {
	if included == 0 {
		return "The session has finished. Thank you for helping!"
	}
	what := "noisy update"
	switch {
	case shared:
		what = "scrambled, noisy update"
	case protection == plan.ProtectionServer || protection == plan.ProtectionNone:
		what = "update"
	}
	held := fmt.Sprintf("Your %s is in 1 round of the class model.", what)
	if included > 1 {
		held = fmt.Sprintf("Your %ss are in %d rounds of the class model.", what, included)
	}
	return "The session has finished. " + held + " Thank you for helping!"
}

func withClassmates(s string, cohort int) string {
	if cohort > 1 {
		s += " " + Classmates(cohort)
	}
	return s
}

// ExcludedStatus is the status line when round t finished without this
// page's update.
func ExcludedStatus(protection string, t int) string {
	switch protection {
	case plan.ProtectionServer:
		return fmt.Sprintf("Round %d finished without your update. The server saw it, but the class model does not hold it.", t)
	case plan.ProtectionNone:
		return fmt.Sprintf("Round %d finished without your update.", t)
	}
	return fmt.Sprintf("Round %d finished without your update. The privacy it used still counts.", t)
}

// PrivacySource says, in the training screen's Details, where the
// meter's figure comes from.
func PrivacySource(protection string) string {
	switch protection {
	case plan.ProtectionServer:
		return "For the teacher's server: no limit (it sees every update without noise). " +
			"For everyone else: ε, counted from the class models the server has shared since this page first sent."
	case plan.ProtectionNone:
		return "None: this session adds no noise."
	}
	return "ε, counted by this page itself from every update it sent."
}

// NoProtection is what the page says of a session that adds no noise
// (a non-private reference algorithm): it does not join it.
const NoProtection = "This session has no privacy protection: what your phone would send is not protected at all. This page does not join it."

// TechnicalWords are the words and signs no student screen shows, its
// Details and Settings included: the names of the mathematics behind the
// figures (zCDP, rho, delta, sigma, clipping, the ledger, Gaussian noise),
// a file format's name (IDX) and the signs of a formula. A word matches
// in any case where a word starts ("clip" in "clipped", not "rho" in
// "throughout"); a sign matches anywhere.
var TechnicalWords = []string{"IDX", "zCDP", "ρ", "rho", "δ", "delta", "σ", "sigma", "clip", "ledger", "Gaussian",
	"sqrt", "√", "^", "exp(", "log(", "μ"}

// technical matches TechnicalWords as TechnicalIn says.
var technical = func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, w := range TechnicalWords {
		q := regexp.QuoteMeta(w)
		if c := w[0]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			q = `\b` + q
		}
		out = append(out, regexp.MustCompile(`(?i)`+q))
	}
	return out
}()

// TechnicalIn lists the TechnicalWords text holds.
func TechnicalIn(text string) []string {
	var found []string
	for i, re := range technical {
		if re.MatchString(text) {
			found = append(found, TechnicalWords[i])
		}
	}
	return found
}

// OverLimit is what the page says when it will not join session s with
// the owner's limit budget (plan.Check refused it): the lesson's most,
// or, when the phones share the noise, the promise or what this phone's
// own noise alone keeps (against plan.Budget.FloorLimit).
func OverLimit(s Session, budget float64) string {
	const after = "The page will not join it. You can raise your limit under Settings, at the bottom of the page, or choose not to join."
	lim := plan.Budget{Epsilon: budget}.FloorLimit()
	switch {
	case s.Shared && s.Promise <= budget && s.Epsilon <= budget && s.Floor > lim:
		return fmt.Sprintf("If the other phones were fake, your own noise would keep this session only to ε = %s of your privacy, more than %g (%d times your limit of %g). ",
			s.FloorText, lim, plan.DefaultFloorRatio, budget) + after
	case s.Shared:
		return fmt.Sprintf("If the other phones are real, this session could use up to ε = %s of your privacy, more than your limit of %g. ", s.PromiseText, budget) + after
	}
	return fmt.Sprintf("This session could use up to ε = %s of your privacy, more than your limit of %g. ", s.EpsilonText, budget) + after
}
