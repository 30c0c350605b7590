package ui

import (
	"strconv"

	"github.com/vugu/vugu"
)

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
}

// Root is the page's root component.
type Root struct {
	State *State     `vugu:"data"`
	Ctl   Controller `vugu:"data"`

	budgetText string
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
	c.State.Error = ""
	c.Ctl.Join(b)
}

func (c *Root) labelChange(ev vugu.DOMEvent) {
	if v, err := strconv.Atoi(ev.PropString("target", "value")); err == nil && v >= 0 && v < 10 {
		c.State.DrawLbl = v
	}
}

func (c *Root) labels() []int { return []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9} }

func (c *Root) is(s Screen) bool { return c.State.Screen == s }

// overBudget reports whether the session may spend more than the budget
// typed so far (the page would refuse to join).
func (c *Root) overBudget() bool {
	b, err := strconv.ParseFloat(c.budgetValue(), 64)
	return err == nil && c.State.Session.Epsilon > b
}

func (c *Root) modeText() string {
	if c.State.Session.Mode == "trusted" {
		return "Trusted-server mode: this page sends its clipped update (never your samples); the coordinator adds the noise. " +
			"Your privacy then relies on the coordinator adding it."
	}
	return "Untrusted-server mode: this page clips its update and adds its own Gaussian noise before anything leaves, " +
		"so the coordinator only ever sees noised updates; the page computes the noise scale itself and keeps its own privacy ledger."
}

// Meter is the privacy meter component.
type Meter struct {
	M Reading `vugu:"data"`
}
