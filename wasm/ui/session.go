package ui

import (
	"strconv"

	"browserfl/shared/plan"
)

// The session's words: how the page describes a session (its promise,
// what is sent, how it is protected) on the consent and training
// screens, from the session's figures alone.

// promiseText is the session's one figure, or its promise when the
// phones share the noise.
func (s Session) promiseText() string {
	if s.Shared {
		return s.PromiseText
	}
	return s.EpsilonText
}

func (s Session) modeText() string {
	if s.Shared {
		return "a scrambled form of what the page learned, with your share of the noise added."
	}
	if s.trusted() {
		return "what the page learned from your " + s.Things() + ", without noise (never the " + s.Things() + " themselves). " +
			"The teacher's server adds the noise, so your privacy depends on trusting that server."
	}
	return "only what the page learned from your " + s.Things() + ", with random noise added. " +
		"This page adds the noise itself, so the server never sees your " + s.Things() + " " +
		"or the exact numbers learned from them."
}

// privacyLine states the session's promise on the consent screen.
func (s Session) privacyLine() string {
	if s.Shared {
		return s.ifReal() + ", this lesson uses at most ε = " + s.PromiseText + "; " + s.ifFake() + ", at most ε = " + s.FloorText + "."
	}
	if s.trusted() {
		return "For everyone but the teacher's server, this session uses at most ε = " + s.EpsilonText +
			" of your privacy. Nothing limits what the server itself can learn."
	}
	return "This session uses at most ε = " + s.EpsilonText + " of your privacy."
}

// ifReal is the condition of a shared-noise session's promise, in words:
// the other phones are real (or at most Colluders of them are not).
func (s Session) ifReal() string {
	if n := s.Colluders; n > 0 {
		return "If at most " + Plural(n, "of the other phones in a round is", "of the other phones in a round are") + " fake"
	}
	return "If the other phones are real"
}

// ifFake is the condition of a shared-noise session's floor, in words:
// the other phones (or more of them than the promise assumes) fake.
func (s Session) ifFake() string {
	if s.Colluders > 0 {
		return "if more were fake"
	}
	return "if they were fake"
}

// howWords says how the session protects what is sent, in plain words
// (the Details' "Way of learning").
func (s Session) howWords() string {
	if s.Shared {
		return "your phone adds its share of the noise and sends what it learned scrambled; the server can only unscramble the total of at least " +
			strconv.Itoa(s.Threshold) + " phones, whose noise together hides each one"
	}
	switch s.protection() {
	case plan.ProtectionNone:
		return "a way of learning with no noise at all (for comparing, not for real data)"
	case plan.ProtectionServer:
		return "your phone sends what it learned, and the teacher's server adds noise before it shares the class model"
	}
	return "your phone adds noise to what it learned before sending it, so the server never sees the exact numbers"
}

// promiseWords is the Details' privacy promise, in words.
func (s Session) promiseWords() string {
	if s.Shared {
		return "at most ε = " + s.PromiseText + " for the whole lesson if the other phones are real; at most ε = " + s.FloorText + " from your own noise alone"
	}
	if s.trusted() {
		return "at most ε = " + s.EpsilonText + " for the whole lesson against everyone but the teacher's server; no limit for the server itself"
	}
	return "at most ε = " + s.EpsilonText + " for the whole lesson, however many rounds your phone helps in"
}

// protection is the session's plan.Figures.Protection (from its Mode
// when it was not given).
func (s Session) protection() string {
	if p := s.Protection; p != "" {
		return p
	}
	if s.Mode == "trusted" {
		return plan.ProtectionServer
	}
	return plan.ProtectionDevice
}

func (s Session) trusted() bool { return s.protection() == plan.ProtectionServer }

// noisyCaption names the picture of what was sent.
func (s Session) noisyCaption() string {
	if s.Shared {
		return "With your share of the noise (sent only scrambled)"
	}
	if s.protection() != plan.ProtectionDevice {
		return "What it sent"
	}
	return "What it sent, with noise"
}

// sentWords explains the two pictures of "what your phone sent".
func (s Session) sentWords(sent Sent) string {
	about := "a small part of it"
	if sent.Label != "" {
		about = "about “" + sent.Label + "”"
	}
	if s.protection() == plan.ProtectionNone {
		return "Left: what your pictures taught this page in round " + strconv.Itoa(sent.Round) + ", " + about +
			". Right: what your phone sent. This session adds no noise, so the two are the same and nothing protects them."
	}
	if s.Shared {
		return "Left: what your pictures taught this page in round " + strconv.Itoa(sent.Round) + ", " + about +
			". Right: the same with your phone's share of the noise added. Only a scrambled form of the right one left your phone: " +
			"the server can unscramble only the total of at least " + strconv.Itoa(s.Threshold) + " phones, never yours alone, " +
			"and in that total the noise of all the phones together hides each one's pictures."
	}
	if s.trusted() {
		return "Left: what your pictures taught this page in round " + strconv.Itoa(sent.Round) + ", " + about +
			". Right: what your phone sent. In this session your phone sends it without noise and the teacher's server adds the noise, so the two look the same: " +
			"the server sees it as it is, and everyone else sees only the class model with the server's noise."
	}
	return "Left: what your pictures taught this page in round " + strconv.Itoa(sent.Round) + ", " + about +
		". Right: what your phone really sent, with random noise added. Only the right one left your phone. " +
		"The noise hides your own pictures; when the server adds up the whole class, the noise partly cancels out, so the class model still learns."
}
