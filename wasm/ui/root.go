package ui

import (
	"strconv"
	"strings"

	"github.com/vugu/vugu"

	"browserfl/shared/wire"
)

// NicknameHint says what a nickname may be, in plain words.
const NicknameHint = "A nickname can have letters, numbers, spaces, - and _ only, at most 24 characters. Leave it empty if you like."

// Controller performs the page's actions. The browser build implements it
// with the device runtime, IndexedDB and the canvas; tests implement it
// with a recorder. Every method is called with the vugu event lock held
// and must not block: long work runs on its own goroutine, which takes
// the lock (EventEnv.Lock / UnlockRender) to publish results into State.
type Controller interface {
	// Join records the owner's consent and budget (maximum epsilon at
	// the owner's delta) and moves on to the data screen, or explains
	// why the device declines the session.
	Join(budget float64)
	// Decline leaves without joining.
	Decline()
	// LoadDemo fetches the demo shard once and stores it in the page.
	LoadDemo()
	// AddDrawing stores the canvas drawing as a sample with label.
	AddDrawing(label int)
	// ClearDrawing blanks the drawing canvas.
	ClearDrawing()
	// FilesPicked reads the files of a file input (IDX or images).
	FilesPicked(ev vugu.DOMEvent)
	// Train starts (or resumes) training.
	Train()
	// TryModel classifies the drawing on the canvas with the current
	// global model.
	TryModel()
	// Forget clears this device's storage and leaves the session.
	Forget()
	// EnterCode opens the session with the join code typed on the join
	// screen.
	EnterCode(code string)
	// DrawMore goes back to the data screen after the data ran out.
	DrawMore()
	// Done makes the device leave the session (its data stays).
	Done()
}

// Root is the page's root component.
type Root struct {
	State *State     `vugu:"data"`
	Ctl   Controller `vugu:"data"`

	budgetText string
	codeText   string
	nickText   string
	nickTyped  bool
}

func (c *Root) nickValue() string {
	if c.nickTyped {
		return c.nickText
	}
	return c.State.Nickname
}

func (c *Root) nickInput(ev vugu.DOMEvent) {
	c.nickText, c.nickTyped = ev.PropString("target", "value"), true
}

func (c *Root) budgetValue() string {
	if c.budgetText != "" {
		return c.budgetText
	}
	return strconv.FormatFloat(c.State.Budget, 'g', 4, 64)
}

func (c *Root) budgetInput(ev vugu.DOMEvent) {
	c.budgetText = ev.PropString("target", "value")
}

func (c *Root) join() {
	b, err := strconv.ParseFloat(c.budgetValue(), 64)
	if err != nil || !(b > 0) {
		c.State.Error = "The budget must be a positive number (a maximum epsilon)."
		return
	}
	nick := strings.TrimSpace(c.nickValue())
	if err := wire.CheckNickname(nick); err != nil {
		c.State.Error = NicknameHint
		return
	}
	c.State.Nickname = nick
	c.State.Error = ""
	c.Ctl.Join(b)
}

func (c *Root) labelChange(ev vugu.DOMEvent) {
	if v, err := strconv.Atoi(ev.PropString("target", "value")); err == nil && v >= 0 && v < len(c.labels()) {
		c.State.DrawLbl = v
	}
}

// labels are the drawing menu's choices, in class order.
func (c *Root) labels() []string { return LabelsOf(c.State.Session.Labels) }

// drawLabel names the class selected for the next drawing.
func (c *Root) drawLabel() string {
	if l := c.labels(); c.State.DrawLbl < len(l) {
		return l[c.State.DrawLbl]
	}
	return ""
}

func (c *Root) codeValue() string {
	if c.codeText != "" {
		return c.codeText
	}
	return c.State.Code
}

func (c *Root) codeInput(ev vugu.DOMEvent) { c.codeText = ev.PropString("target", "value") }

func (c *Root) enterCode() {
	code := strings.TrimSpace(c.codeValue())
	if code == "" {
		c.State.Error = "Type the code your teacher gave you."
		return
	}
	c.State.Error = ""
	c.Ctl.EnterCode(code)
}

func (c *Root) codeKey(ev vugu.DOMEvent) {
	if ev.PropString("key") == "Enter" {
		c.codeText = ev.PropString("target", "value")
		c.enterCode()
	}
}
func (c *Root) is(s Screen) bool { return c.State.Screen == s }

// overBudget reports whether the session may spend more than the budget
// typed so far (the page would refuse to join).
func (c *Root) overBudget() bool {
	b, err := strconv.ParseFloat(c.budgetValue(), 64)
	return err == nil && c.State.Session.Epsilon > b
}

func (c *Root) modeText() string {
	if c.State.Session.Mode == "trusted" {
		return "what the page learned from your pictures, without noise (never the pictures themselves). " +
			"The teacher's server adds the noise, so your privacy depends on trusting that server."
	}
	return "only what the page learned from your pictures, with random noise added. " +
		"This page adds the noise itself, so the server never sees your pictures " +
		"or the exact numbers learned from them."
}

// privacyLine states the session's promise on the consent screen.
func (c *Root) privacyLine() string {
	return "This session uses at most ε = " + c.State.Session.EpsilonText + " of your privacy."
}

// Meter is the privacy meter component.
type Meter struct {
	M Reading `vugu:"data"`
}

// storedWords follows the count of stored pictures: " picture stored"
// or " pictures stored".
func (c *Root) storedWords() string {
	if c.State.Data.Count == 1 {
		return " picture stored"
	}
	return " pictures stored"
}

func (c *Root) trusted() bool { return c.State.Session.Mode == "trusted" }

// noisyCaption names the picture of what was sent.
func (c *Root) noisyCaption() string {
	if c.trusted() {
		return "What it sent"
	}
	return "What it sent, with noise"
}

// sentWords explains the two pictures of "what your phone sent".
func (c *Root) sentWords() string {
	s := c.State.Train.Sent
	about := "a small part of it"
	if s.Label != "" {
		about = "about “" + s.Label + "”"
	}
	if c.trusted() {
		return "Left: what your pictures taught this page in round " + strconv.Itoa(s.Round) + ", " + about +
			". Right: what your phone sent. In this session your phone sends it without noise and the teacher's server adds the noise, so the two look the same."
	}
	return "Left: what your pictures taught this page in round " + strconv.Itoa(s.Round) + ", " + about +
		". Right: what your phone really sent, with random noise added. Only the right one left your phone. " +
		"The noise hides your own pictures; when the server adds up the whole class, the noise partly cancels out, so the class model still learns."
}
