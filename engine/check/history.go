package check

import (
	"browserfl/shared/optim/plausible"
)

// History is what the check stage tests a device's message against: the
// rounds it was asked and the running sum of its included messages
// (plausible.History, read by the Gate). It is "from the start" when it holds
// every included message of the device since its first release in the
// session and every round it was asked since then: only then do the
// persistence test and the noise allowed by the rounds asked apply.
type History struct{ h plausible.History }

// NewHistory returns an empty history, from the device's start or not
// (a device the shell has not seen from its first release).
func NewHistory(fromStart bool) History { return History{h: plausible.History{FromStart: fromStart}} }

// Ask records that the device was asked for a round (before its answer
// is checked).
func (h *History) Ask() { h.h.Ask() }

// Asks returns the rounds recorded by Ask.
func (h *History) Asks() int { return h.h.Asks() }

// Len returns the number of included messages the history holds.
func (h *History) Len() int { return h.h.Len() }

// FromStart reports whether the history is from the device's start.
func (h *History) FromStart() bool { return h.h.FromStart }

// Include adds an included message, checked against this history.
func (h *History) Include(vec []float64) { h.h.Add(vec) }

// Restart starts the history again, not from the start: the device's
// message was included without the shell seeing it on its own (in an
// edge's aggregate), or the shell lost the decision of one, so the
// history may miss an inclusion. It only loosens the tests, so an honest
// device is never refused for a history its shell lost.
func (h *History) Restart() {
	h.h.Reset()
	h.h.FromStart = false
}

// AskedElsewhere marks the history as no longer from the start, keeping
// its sum: the device was asked for a round the shell did not see, so
// the noise its releases may carry is no longer known.
func (h *History) AskedElsewhere() { h.h.FromStart = false }

// Message is the check stage: g's test of a decoded message x (norm its L2
// norm) from a device with history h; a nil h tests the message alone.
// An accepted message joins h only when it is included (Include).
func Message(g Gate, x []float64, norm float64, h *History) error {
	if h == nil {
		return g.Check(x, norm, nil)
	}
	return g.Check(x, norm, &h.h)
}
