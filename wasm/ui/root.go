package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vugu/vugu"

	"browserfl/shared/plan"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// NicknameHint says what a nickname may be, in plain words.
const NicknameHint = "A nickname needs at least one letter or number, and can have letters, numbers, spaces, - and _ only, at most 24 characters. Leave it empty if you like."

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
	// AddRow stores one row of the session's task (its features' values
	// as typed, and the index of its label), which the page has checked
	// with task.Definition.Encode.
	AddRow(values []string, label int)
	// TryRow asks the current global model about one row's features
	// (checked by the page like AddRow's).
	TryRow(values []string)
}

// Root is the page's root component.
type Root struct {
	State *State     `vugu:"data"`
	Ctl   Controller `vugu:"data"`

	budgetText textInput
	codeText   textInput
	nickText   string
	nickTyped  bool

	// The row task of the session, parsed once per definition text.
	def     *task.Definition
	defText string
	// The row being typed (values by feature, the label's value or ""),
	// what the page said about the last one added, and the row to try.
	row      fieldValues
	rowLabel textInput
	rowMsg   string
	try      fieldValues
}

// taskDef returns the session's row task (nil for a picture session;
// the worker refuses a session whose task does not parse or match
// before consent, so nil here means pictures).
func (c *Root) taskDef() *task.Definition {
	if c.State.Session.Task == "" {
		return nil
	}
	if c.defText != c.State.Session.Task {
		c.def, _ = task.Parse([]byte(c.State.Session.Task))
		c.defText = c.State.Session.Task
	}
	return c.def
}

func (c *Root) isTask() bool { return c.taskDef() != nil }

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
		return string(c.budgetText)
	}
	return strconv.FormatFloat(c.State.Budget, 'g', 4, 64)
}

func (c *Root) join() {
	b, err := strconv.ParseFloat(c.budgetValue(), 64)
	if err != nil || !(b > 0) || math.IsInf(b, 0) {
		c.State.Error = "Your privacy limit (under Settings, at the bottom of the page) must be a number above 0."
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
		return string(c.codeText)
	}
	return c.State.Code
}

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
		c.codeText.input(ev)
		c.enterCode()
	}
}
func (c *Root) is(s Screen) bool { return c.State.Screen == s }

// overBudget reports whether the session may spend more than the budget
// typed so far (the page would refuse to join).
func (c *Root) overBudget() bool { return c.overWords() != "" }

// overWords says why the page would not join with the limit typed so
// far ("" when it would): the lesson's most over the limit or, when the
// phones share the noise, what this phone's own noise alone keeps over
// the second limit (plan.Budget.FloorLimit).
func (c *Root) overWords() string {
	b, err := strconv.ParseFloat(c.budgetValue(), 64)
	if err != nil {
		return ""
	}
	s := c.State.Session
	if s.Epsilon > b || (s.Shared && s.Promise > b) {
		return "This session could use up to ε = " + s.promiseText() + ", more than your limit. With this limit, the page will not join (Settings, at the bottom of the page, can change it)."
	}
	if lim := (plan.Budget{Epsilon: b}).FloorLimit(); s.Shared && s.Floor > lim {
		return "If the other phones were fake, your own noise would keep this session only to ε = " + s.FloorText +
			", more than " + strconv.FormatFloat(lim, 'g', 4, 64) + ". With this limit, the page will not join (Settings, at the bottom of the page, can change it)."
	}
	return ""
}

// LimitWords explains the owner's privacy limit, and its default, in one
// sentence (the page's Settings).
var LimitWords = fmt.Sprintf("Your privacy limit is the most of your privacy (ε) one lesson may use: this page never joins a lesson "+
	"that could use more, %g is the usual setting, and a smaller number protects you more. "+
	"In lessons where phones share the noise, your own noise alone must also keep it under %d times your limit, in case the other phones were fake.",
	plan.DefaultBudgetEpsilon, plan.DefaultFloorRatio)

// limitLine states the limit under the consent screen's buttons, what
// it does, and where it is changed.
func (c *Root) limitLine() string {
	return "This page joins only lessons that fit your privacy limit of ε = " + c.budgetValue() +
		" (you can change it under Settings, at the bottom of the page), and it stops before any round would go over it."
}

// limitDetail is the consent screen's Details row for the limit.
func (c *Root) limitDetail() string {
	return "ε = " + c.budgetValue() + ", set under Settings; the page checks it before every round it helps in."
}

// limitFixed: the owner has joined with a limit, which this session
// keeps (the runtime checks it before every release).
func (c *Root) limitFixed() bool {
	switch c.State.Screen {
	case ScreenData, ScreenTrain, ScreenDone, ScreenLeft:
		return true
	}
	return false
}

// perRoundWords heads the Details' row of samples used per round.
func (c *Root) perRoundWords() string {
	if c.isTask() {
		return "Rows per round"
	}
	return "Pictures per round"
}

// Meter is the privacy meter component.
type Meter struct {
	M Reading `vugu:"data"`
}

// storedWords follows the count of stored pictures: " picture stored"
// or " pictures stored".
func (c *Root) storedWords() string {
	if c.State.Data.Count == 1 {
		return " " + strings.TrimSuffix(c.State.Session.Things(), "s") + " stored"
	}
	return " " + c.State.Session.Things() + " stored"
}

// usedWords heads the count of samples used.
func (c *Root) usedWords() string {
	if c.isTask() {
		return "Rows used"
	}
	return "Pictures used"
}

// moreWords is the button that goes back for more samples.
func (c *Root) moreWords() string {
	if c.isTask() {
		return "Add more rows"
	}
	return "Draw more pictures"
}

// meter is the privacy meter's reading for the training screen.
func (c *Root) meter() Reading {
	tr, s := c.State.Train, c.State.Session
	if s.Shared {
		return SharedMeter(tr.Joined, tr.Progress(), tr.EpsBudget, plan.Budget{Epsilon: tr.EpsBudget}.FloorLimit(), tr.Delta, s.Threshold, tr.Cohort)
	}
	return PrivacyMeter(s.protection(), tr.Joined, tr.Progress(), tr.EpsBudget, tr.Delta)
}
