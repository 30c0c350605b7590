package ui

import (
	"errors"
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

	budgetText string
	codeText   string
	nickText   string
	nickTyped  bool

	// The row task of the session, parsed once per definition text.
	def     *task.Definition
	defText string
	// The row being typed (values by feature, the label's value or ""),
	// what the page said about the last one added, and the row to try.
	row      map[int]string
	rowLabel string
	rowMsg   string
	try      map[int]string
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

// features are the row task's columns (none for pictures).
func (c *Root) features() []task.Feature {
	if d := c.taskDef(); d != nil {
		return d.Features
	}
	return nil
}

// answers are the label's values (none for pictures).
func (c *Root) answers() []string {
	if d := c.taskDef(); d != nil {
		return d.Label.Values
	}
	return nil
}

func (c *Root) answerAsk() string {
	if d := c.taskDef(); d != nil {
		return d.Label.Ask
	}
	return ""
}

func (c *Root) answerName() string {
	if d := c.taskDef(); d != nil {
		return d.Label.Name
	}
	return ""
}

func kindIs(f task.Feature, k string) bool { return string(f.Kind) == k }

func bound(x *float64) string {
	if x == nil {
		return ""
	}
	return strconv.FormatFloat(*x, 'g', -1, 64)
}

func (c *Root) rowValue(i int) string { return c.row[i] }

func (c *Root) rowInput(i int, ev vugu.DOMEvent) {
	if c.row == nil {
		c.row = map[int]string{}
	}
	c.row[i] = ev.PropString("target", "value")
}

func (c *Root) rowLabelInput(ev vugu.DOMEvent) { c.rowLabel = ev.PropString("target", "value") }

func (c *Root) tryValue(i int) string { return c.try[i] }

func (c *Root) tryInput(i int, ev vugu.DOMEvent) {
	if c.try == nil {
		c.try = map[int]string{}
	}
	c.try[i] = ev.PropString("target", "value")
}

// values lists m's values in feature order.
func values(m map[int]string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = m[i]
	}
	return out
}

// RowMessage says why a row was refused, in words a student can act on
// (the task's *RowError names the column and what to type instead).
func RowMessage(err error) string {
	var re *task.RowError
	if errors.As(err, &re) {
		return "Check this row. " + re.Error() + "."
	}
	return "This row cannot be used: " + err.Error()
}

// checkRow returns what is wrong with a row of d, in words, or "".
func checkRow(d *task.Definition, vals []string) string {
	for i, f := range d.Features {
		if strings.TrimSpace(vals[i]) == "" {
			return "Fill in “" + f.Name + "” first."
		}
	}
	if _, err := d.Encode(vals); err != nil {
		return RowMessage(err)
	}
	return ""
}

// addRow checks the typed row and, if it fits the task, hands it to the
// worker; a row that does not fit is said and never kept or sent.
func (c *Root) addRow() {
	d := c.taskDef()
	if d == nil {
		return
	}
	vals := values(c.row, len(d.Features))
	if msg := checkRow(d, vals); msg != "" {
		c.rowMsg = msg
		return
	}
	if c.rowLabel == "" {
		c.rowMsg = "Choose the answer (“" + d.Label.Name + "”) first."
		return
	}
	lab, err := d.LabelIndex(c.rowLabel)
	if err != nil {
		c.rowMsg = RowMessage(err)
		return
	}
	c.Ctl.AddRow(vals, lab)
	c.row, c.rowLabel = nil, ""
	c.rowMsg = "Added. It stays on this device."
}

// tryRow asks the model about the row typed in the try form.
func (c *Root) tryRow() {
	d := c.taskDef()
	if d == nil {
		return
	}
	vals := values(c.try, len(d.Features))
	if msg := checkRow(d, vals); msg != "" {
		c.State.Train.Prediction = msg
		return
	}
	c.Ctl.TryRow(vals)
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
		return "This session could use up to ε = " + c.promiseText() + ", more than your limit. With this limit, the page will not join (Settings, at the bottom of the page, can change it)."
	}
	if lim := (plan.Budget{Epsilon: b}).FloorLimit(); s.Shared && s.Floor > lim {
		return "If the other phones were fake, your own noise would keep this session only to ε = " + s.FloorText +
			", more than " + strconv.FormatFloat(lim, 'g', 4, 64) + ". With this limit, the page will not join (Settings, at the bottom of the page, can change it)."
	}
	return ""
}

// promiseText is the session's one figure, or its promise when the
// phones share the noise.
func (c *Root) promiseText() string {
	if c.State.Session.Shared {
		return c.State.Session.PromiseText
	}
	return c.State.Session.EpsilonText
}

func (c *Root) modeText() string {
	if c.State.Session.Shared {
		return "a scrambled form of what the page learned, with your share of the noise added."
	}
	if c.trusted() {
		return "what the page learned from your " + c.things() + ", without noise (never the " + c.things() + " themselves). " +
			"The teacher's server adds the noise, so your privacy depends on trusting that server."
	}
	return "only what the page learned from your " + c.things() + ", with random noise added. " +
		"This page adds the noise itself, so the server never sees your " + c.things() + " " +
		"or the exact numbers learned from them."
}

// privacyLine states the session's promise on the consent screen.
func (c *Root) privacyLine() string {
	if s := c.State.Session; s.Shared {
		return c.ifReal() + ", this lesson uses at most ε = " + s.PromiseText + "; " + c.ifFake() + ", at most ε = " + s.FloorText + "."
	}
	if c.trusted() {
		return "For everyone but the teacher's server, this session uses at most ε = " + c.State.Session.EpsilonText +
			" of your privacy. Nothing limits what the server itself can learn."
	}
	return "This session uses at most ε = " + c.State.Session.EpsilonText + " of your privacy."
}

// ifReal is the condition of a shared-noise session's promise, in words:
// the other phones are real (or at most Colluders of them are not).
func (c *Root) ifReal() string {
	if n := c.State.Session.Colluders; n > 0 {
		return "If at most " + Plural(n, "of the other phones in a round is", "of the other phones in a round are") + " fake"
	}
	return "If the other phones are real"
}

// ifFake is the condition of a shared-noise session's floor, in words:
// the other phones (or more of them than the promise assumes) fake.
func (c *Root) ifFake() string {
	if c.State.Session.Colluders > 0 {
		return "if more were fake"
	}
	return "if they were fake"
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

// howWords says how the session protects what is sent, in plain words
// (the Details' "Way of learning").
func (c *Root) howWords() string {
	if s := c.State.Session; s.Shared {
		return "your phone adds its share of the noise and sends what it learned scrambled; the server can only unscramble the total of at least " +
			strconv.Itoa(s.Threshold) + " phones, whose noise together hides each one"
	}
	switch c.protection() {
	case plan.ProtectionNone:
		return "a way of learning with no noise at all (for comparing, not for real data)"
	case plan.ProtectionServer:
		return "your phone sends what it learned, and the teacher's server adds noise before it shares the class model"
	}
	return "your phone adds noise to what it learned before sending it, so the server never sees the exact numbers"
}

// perRoundWords heads the Details' row of samples used per round.
func (c *Root) perRoundWords() string {
	if c.isTask() {
		return "Rows per round"
	}
	return "Pictures per round"
}

// promiseWords is the Details' privacy promise, in words.
func (c *Root) promiseWords() string {
	if s := c.State.Session; s.Shared {
		return "at most ε = " + s.PromiseText + " for the whole lesson if the other phones are real; at most ε = " + s.FloorText + " from your own noise alone"
	}
	if c.trusted() {
		return "at most ε = " + c.State.Session.EpsilonText + " for the whole lesson against everyone but the teacher's server; no limit for the server itself"
	}
	return "at most ε = " + c.State.Session.EpsilonText + " for the whole lesson, however many rounds your phone helps in"
}

// Meter is the privacy meter component.
type Meter struct {
	M Reading `vugu:"data"`
}

// storedWords follows the count of stored pictures: " picture stored"
// or " pictures stored".
func (c *Root) storedWords() string {
	if c.State.Data.Count == 1 {
		return " " + strings.TrimSuffix(c.things(), "s") + " stored"
	}
	return " " + c.things() + " stored"
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

// columns lists the CSV file's column names: the features, then the
// label.
func (c *Root) columns() string {
	d := c.taskDef()
	if d == nil {
		return ""
	}
	names := make([]string, 0, len(d.Features)+1)
	for _, f := range d.Features {
		names = append(names, f.Name)
	}
	return strings.Join(append(names, d.Label.Name), ", ")
}

// things names the samples: "pictures" or "rows".
func (c *Root) things() string { return c.State.Session.Things() }

// protection is the session's plan.Figures.Protection (from its Mode
// when it was not given).
func (c *Root) protection() string {
	if p := c.State.Session.Protection; p != "" {
		return p
	}
	if c.State.Session.Mode == "trusted" {
		return plan.ProtectionServer
	}
	return plan.ProtectionDevice
}

func (c *Root) trusted() bool { return c.protection() == plan.ProtectionServer }

// meter is the privacy meter's reading for the training screen.
func (c *Root) meter() Reading {
	tr := c.State.Train
	if s := c.State.Session; s.Shared {
		return SharedMeter(tr.Joined, tr.Progress(), tr.EpsBudget, plan.Budget{Epsilon: tr.EpsBudget}.FloorLimit(), tr.Delta, s.Threshold, tr.Cohort)
	}
	return PrivacyMeter(c.protection(), tr.Joined, tr.Progress(), tr.EpsBudget, tr.Delta)
}

// noisyCaption names the picture of what was sent.
func (c *Root) noisyCaption() string {
	if c.State.Session.Shared {
		return "With your share of the noise (sent only scrambled)"
	}
	if c.protection() != plan.ProtectionDevice {
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
	if c.protection() == plan.ProtectionNone {
		return "Left: what your pictures taught this page in round " + strconv.Itoa(s.Round) + ", " + about +
			". Right: what your phone sent. This session adds no noise, so the two are the same and nothing protects them."
	}
	if sess := c.State.Session; sess.Shared {
		return "Left: what your pictures taught this page in round " + strconv.Itoa(s.Round) + ", " + about +
			". Right: the same with your phone's share of the noise added. Only a scrambled form of the right one left your phone: " +
			"the server can unscramble only the total of at least " + strconv.Itoa(sess.Threshold) + " phones, never yours alone, " +
			"and in that total the noise of all the phones together hides each one's pictures."
	}
	if c.trusted() {
		return "Left: what your pictures taught this page in round " + strconv.Itoa(s.Round) + ", " + about +
			". Right: what your phone sent. In this session your phone sends it without noise and the teacher's server adds the noise, so the two look the same: " +
			"the server sees it as it is, and everyone else sees only the class model with the server's noise."
	}
	return "Left: what your pictures taught this page in round " + strconv.Itoa(s.Round) + ", " + about +
		". Right: what your phone really sent, with random noise added. Only the right one left your phone. " +
		"The noise hides your own pictures; when the server adds up the whole class, the noise partly cancels out, so the class model still learns."
}
