package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"browserfl/shared/plan"
)

// Screen is one step of the page flow.
type Screen int

// The page flow: join code, consent, then local data, then training.
const (
	ScreenLoading Screen = iota // fetching the session's public parameters
	ScreenConsent               // what is shared, the session's parameters, the owner's budget
	ScreenData                  // demo shard, drawn samples, picked files
	ScreenTrain                 // connection, rounds, privacy meter, accuracy, try the model
	ScreenLeft                  // the device left (storage cleared or session declined)
	ScreenJoin                  // no join code (or a wrong one): a box to type it
	ScreenClosed                // the session cannot be joined (finished or full): said before consent
	ScreenDone                  // the owner said they are done (the device has left)
)

// Why a session cannot be joined (State.Closed).
const (
	ClosedFinished = "finished"
	ClosedFull     = "full"
)

// Session is the public description of a training session, as the
// coordinator announces it. Every number here is public: it is what the
// device uses to compute its own noise scale and to decide whether to join.
type Session struct {
	JoinCode  string
	Algorithm string // registry name, e.g. "nc"
	Summary   string // what the algorithm is, in a sentence
	Mode      string // "untrusted" (devices add noise) or "trusted" (server adds noise)
	// Protection is whom the session's figures hold against
	// (plan.Figures.Protection): plan.ProtectionDevice,
	// ProtectionServer or ProtectionNone. Every privacy sentence of the
	// page is chosen by it.
	Protection string
	Model      string
	Rounds     int     // T
	Cohort     int     // devices asked per round (m)
	Clip       float64 // S: bound on the norm of one device correction, enforced by clipping
	Rho        float64 // per-device worst-case zCDP rho (Bun-Steinke) for the whole session
	Delta      float64 // the owner's delta, at which Epsilon is stated and the budget read
	Epsilon    float64 // Rho converted to epsilon at Delta: the most one device can spend
	// EpsilonText, DeltaText and Figures are plan.Figures' text forms,
	// the same digits the dashboard, planner and docs print.
	EpsilonText, DeltaText, Figures string
	Planned                         int // rounds this device is expected to be asked (upper bound)
	Batch                           int // samples per round (single pass: each sample is used once)
	// SinglePass is true when the algorithm uses each sample at most once
	// (optim.Params.SinglePass): the device leaves when they are used up.
	SinglePass bool
	// Labels names the classes in class order (the session's class
	// names, or the digits "0".."9" when it has none): the drawing menu
	// offers them.
	Labels []string
	// Task is the definition of the row task the session learns (its
	// JSON text, wire.SessionParams.Task, read with plan.SessionTask),
	// or "" for a session that learns pictures.
	Task string
	// DemoRows: the coordinator has example rows for this task
	// (/api/demo/rows; a teacher's own task has none).
	DemoRows bool
	// Shared: the phones share the noise (a shared-noise session), and
	// the session has two figures (plan.Figures.Promise and Floor):
	// Promise if the other phones of each round are real, Floor from
	// this phone's own noise alone (if they were fake), with their text
	// forms. Threshold is the fewest phones whose updates the server
	// adds up before it can read anything, Colluders the most of them
	// the figures assume could be on the server's side.
	Shared                 bool
	Promise, Floor         float64
	PromiseText, FloorText string
	Threshold, Colluders   int
}

// DigitLabels are the class names of a session that states none.
var DigitLabels = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

// LabelsOf returns names when there are any, else the digits.
func LabelsOf(names []string) []string {
	if len(names) > 0 {
		return names
	}
	return DigitLabels
}

// Data summarises the samples kept in the page.
type Data struct {
	Count    int
	Used     int      // samples consumed by the single-pass cursor
	PerLabel [10]int  // samples per class
	Sources  []string // human-readable list: "demo shard (600)", "drawn (3)", "t10k-images (1000)"
	Busy     string   // non-empty while loading
	DrawHint string   // a word about the drawing (e.g. "draw something first")
	// Refused lists, in words, the lines of the last picked CSV files
	// that did not fit the task (file, line number and why).
	Refused []string
}

// Point is one (round, accuracy) measurement of the global model.
type Point struct {
	Round    int
	Accuracy float64 // in [0, 1]
}

// Training is what the training view shows.
type Training struct {
	Conn       string // "connecting", "connected", "reconnecting", "closed"
	Round      int    // the session's latest round seen
	Joined     int    // rounds this device sent an update for (N_i)
	Included   int    // rounds whose class model holds this device's update (device.State.Included)
	Declined   int    // rounds declined (budget or data exhausted)
	StepMillis float64
	BytesSent  int64
	EpsSpent   float64 // epsilon at Delta: the device's own ledger plus what the owner's data spent before
	EpsMost    float64 // epsilon at Delta: the most this session can take it to (plan.Budget.Progress)
	// Share is the part of this lesson's privacy used (plan.Progress.Share:
	// the ledger's zCDP rho over the lesson's worst case), the meter's
	// fill; Planned is the plan's share after Releases updates, OnPlan
	// says Share is within it and Decreasing that later updates cost
	// less (plan.Progress).
	Share, Planned float64
	OnPlan         bool
	Releases       int
	Decreasing     bool
	EpsBudget      float64 // the owner's budget
	Delta          float64
	// FloorSpent and FloorMost are EpsSpent and EpsMost for a shared-noise
	// session's floor (plan.Progress): what this page's own noise alone
	// keeps, if the other phones were fake.
	FloorSpent, FloorMost float64
	// Cohort is, in a shared-noise session, how many phones share the
	// noise in the latest round this page took part in, this one
	// included (0 before the first).
	Cohort     int
	Accuracy   []Point
	Prediction string // result of "try the model"
	Status     string // last event, in plain words
	Detail     string // the technical reason behind Status, shown under "Details"
	Lobby      bool   // connected; the session waits for the teacher's Start
	Done       bool   // session finished or device stopped
	UsedUp     bool   // the device stopped because every sample is used
	// More says, in plain words, that more example pictures are being
	// fetched or could not be yet ("" when nothing is to say).
	More string
	// Sent is "what your phone sent" for the latest update this page
	// prepared (empty before the first): computed in the page, shown
	// only here.
	Sent Sent
}

// Progress is the owner's figures the view holds, as plan.Budget.Progress
// gave them.
func (t Training) Progress() plan.Progress {
	return plan.Progress{Spent: t.EpsSpent, Most: t.EpsMost, Share: t.Share, Releases: t.Releases,
		Planned: t.Planned, OnPlan: t.OnPlan, Decreasing: t.Decreasing, FloorSpent: t.FloorSpent, FloorMost: t.FloorMost}
}

// Sent is one update shown before and after the noise: the same Side x
// Side slice of both (local.UpdatePicture), as grey levels (128 is zero).
// Clean is the update as this page computed it, which never leaves the
// page; Noisy is what it sent.
type Sent struct {
	Round int
	// Label is what the slice is about: a class name for a model with a
	// row of weights per class, empty for another model.
	Label        string
	Clean, Noisy []byte
}

// State is everything the page renders. The controller mutates it under
// the vugu event lock; components only read it.
type State struct {
	Screen  Screen
	Session Session
	Budget  float64 // owner-set maximum epsilon at Session.Delta (the owner's delta)
	Data    Data
	Train   Training
	Error   string
	DrawLbl int    // label selected for the next drawn sample
	Closed  string // ScreenClosed: ClosedFinished or ClosedFull
	Code    string // ScreenJoin: the code to show in the box
	// Nickname is the optional name for the teacher's list (validated
	// with wire.CheckNickname when the owner joins).
	Nickname string
}

// Reading is the privacy meter's reading, against the plan: the most this
// session can use (plan.Budget.Progress), never against alarm.
type Reading struct {
	// Fraction is the bar's fill: the part of this lesson's privacy used
	// (plan.Progress.Share), clamped to [0, 1]. It adds up update by
	// update and is full only when the lesson has used all it may.
	Fraction float64
	// Class colours the meter: "meter-calm" while within the plan (always,
	// for a device whose ledger keeps its cap), "meter-over" past it.
	Class   string
	Plan    string // the session's most, against the owner's limit
	Label   string // what is used so far
	Meaning string // what the number means, in words a student reads
	Exact   string // the precise meaning (behind Details)
	// Floor is, in a shared-noise session, the second figure: what this
	// page's own noise alone keeps if the other phones were fake, and
	// how many classmates share the noise in this round ("" elsewhere).
	Floor string
}

// FillText is Fraction in full ("0.5851538641081843"): the bar's
// data-fill attribute, which tests compare with the device's ledger.
func (r Reading) FillText() string { return strconv.FormatFloat(r.Fraction, 'g', -1, 64) }

// PrivacyMeter explains the privacy a session has used, from the owner's
// figures pr (plan.Budget.Progress: epsilon spent, the most the session
// can take it to, the share of the session's privacy used and the plan's
// share after as many updates), against the owner's limit (budget), in
// plain words, for a session whose figures hold against whom protection
// says (plan.Figures.Protection); joined is the number of updates this
// page has sent. An (epsilon, delta) guarantee bounds how much more
// likely any outcome of what the adversary sees becomes because one
// sample was or was not in this device's data: by a factor of at most
// e^epsilon, except with probability delta. Exact says that; the other
// sentences say no more than it.
//
// The bar fills by pr.Share, which adds up update by update and is full
// at the lesson's planned end, with epsilon stated beside it: epsilon
// itself is most of the way to its most after the first few updates,
// which a bar filled by it would show as "almost used up".
//
// With the device's own noise (plan.ProtectionDevice) the adversary is
// anyone who sees what this page sent, the server included, and spent
// is the page's own ledger. With the server's noise
// (plan.ProtectionServer) the server sees every update without noise, so
// nothing bounds what it learns, and spent bounds everyone else (what
// the published models carry, plan.Figures.Published). Without noise
// (plan.ProtectionNone) nothing is bounded and the meter says so.
func PrivacyMeter(protection string, joined int, pr plan.Progress, budget, delta float64) Reading {
	spent, most := pr.Spent, pr.Most
	switch protection {
	case plan.ProtectionNone:
		return Reading{Class: "meter-over",
			Label:   "No privacy protection: what this page sends is not protected at all.",
			Meaning: "This session adds no noise, so nothing limits what can be learned about your pictures from what is sent.",
			Exact:   "This session makes no privacy promise: anyone who sees what this page sent could learn about any one of your pictures."}
	case plan.ProtectionServer:
		return serverMeter(joined, pr, budget, delta)
	}
	m := fill(pr)
	if most > 0 {
		m.Plan = fmt.Sprintf("By the end of this lesson, at most ε = %s of your limit of %g is used.", plan.FormatEpsilon(most), budget)
	}
	if spent <= 0 {
		m.Label = "Used so far: ε = 0. Nothing sent yet."
	} else {
		m.Label = fmt.Sprintf("Used so far: ε = %s (%s)", plan.FormatEpsilon(spent), shareWords(pr.Share))
	}
	m.Meaning = "The bar fills a little with each update this page sends, and it is full only at the end of the lesson. " +
		onPlan(pr) + level(spent, most, budget) +
		" Smaller ε is more private: under 1 is very strong protection, 1 to 10 is common in real apps."
	if spent > 0 {
		m.Exact = fmt.Sprintf("ε = %s means: someone who sees everything this page sent "+
			"can become at most %s times more sure whether any one of your pictures was used (apart from %s), "+
			"even if they know all your other pictures.", plan.FormatEpsilon(spent), factor(spent), chance(delta))
	} else {
		m.Exact = fmt.Sprintf("ε = 0 means nothing about your pictures has been sent. "+
			"At this lesson's most, someone who sees everything this page sent could become at most %s times more sure "+
			"whether any one of your pictures was used (apart from %s), even if they know all your other pictures.", factor(most), chance(delta))
	}
	return m
}

// shareWords says the share of the lesson's privacy used: "12% of this
// lesson's privacy" (below 1%, "less than 1%"; never rounded up to 100%
// before it is, and above it only when the ledger is over the plan by
// more than the rounding of its sum, plan.ShareTolerance).
func shareWords(share float64) string {
	pct := math.Floor(100 * share)
	switch {
	case share > 0 && pct < 1:
		return "less than 1% of this lesson's privacy"
	case share > 1+plan.ShareTolerance:
		pct = math.Ceil(100 * share)
	case share > 1:
		pct = 100
	}
	return fmt.Sprintf("%.0f%% of this lesson's privacy", pct)
}

// onPlan says the bar is where the plan puts it after the updates sent
// (plan.Progress.OnPlan), when it is; "" before any update or off the
// plan.
func onPlan(pr plan.Progress) string {
	if pr.Releases <= 0 || !pr.OnPlan || pr.Share <= 0 {
		return ""
	}
	if pr.Decreasing {
		return fmt.Sprintf("That is as planned after %s: the first updates use the most, and each later one less. ", Plural(pr.Releases, "update", "updates"))
	}
	return fmt.Sprintf("That is as planned after %s. ", Plural(pr.Releases, "update", "updates"))
}

// fill is the meter's fill and colour: the share of the lesson's privacy
// used, calm within the lesson's most.
func fill(pr plan.Progress) Reading {
	m := Reading{Class: "meter-calm", Fraction: math.Min(1, math.Max(0, pr.Share))}
	if math.IsNaN(pr.Share) {
		m.Fraction = 0
	}
	if pr.Spent > pr.Most*(1+1e-9) {
		m.Class = "meter-over"
	}
	return m
}

// serverMeter is PrivacyMeter when the server adds the noise: two
// figures, the server's (no limit) and everyone else's (spent, most).
func serverMeter(joined int, pr plan.Progress, budget, delta float64) Reading {
	spent, most := pr.Spent, pr.Most
	m := fill(pr)
	if most > 0 {
		m.Plan = fmt.Sprintf("By the end of this lesson, at most ε = %s of your limit of %g is used for everyone but the teacher's server. "+
			"The server sees what your phone sends without noise: nothing limits what it can learn.", plan.FormatEpsilon(most), budget)
	}
	switch {
	case joined == 0 && spent <= 0:
		m.Label = "Nothing sent yet."
	case spent <= 0:
		m.Label = "Sent to the server, without noise. Everyone else sees your updates only inside the class model, with the server's noise."
	default:
		m.Label = fmt.Sprintf("Used so far, for everyone but the server: ε = %s (%s)", plan.FormatEpsilon(spent), shareWords(pr.Share))
	}
	m.Meaning = "Your phone sends what it learned without noise, and the teacher's server adds the noise before the class model is shared. " +
		"So the server could learn about your pictures, and nothing limits how much: you are trusting it. " +
		"Everyone else (other students, anyone who sees the class model) sees only the noisy model: for them the bar fills a little with each round the server shares, " +
		"and is full only at the end of the lesson, if the server adds the noise it promised. " +
		"Smaller ε is more private: under 1 is very strong protection, 1 to 10 is common in real apps."
	server := "Against the teacher's server: no limit, because it sees every update of this page without noise. "
	if spent > 0 {
		m.Exact = server + fmt.Sprintf("Against everyone else: ε = %s means someone who sees every class model the server has shared "+
			"can become at most %s times more sure whether any one of your pictures was used (apart from %s), "+
			"even if they know all your other pictures.", plan.FormatEpsilon(spent), factor(spent), chance(delta))
	} else {
		m.Exact = server + fmt.Sprintf("Against everyone else, at this lesson's most: someone who sees every class model the server shares "+
			"could become at most %s times more sure whether any one of your pictures was used (apart from %s), "+
			"even if they know all your other pictures.", factor(most), chance(delta))
	}
	return m
}

// chance says delta in words: "a 1 in 100,000 chance".
func chance(delta float64) string {
	if delta <= 0 || delta >= 1 {
		return fmt.Sprintf("a chance of %.2g", delta)
	}
	n := 1 / delta
	if r := math.Round(n); math.Abs(n-r) < 1e-6*n && r < 1e15 {
		return "a 1 in " + thousands(int64(r)) + " chance"
	}
	return fmt.Sprintf("a chance of %.2g", delta)
}

// thousands formats n with commas: 100000 -> "100,000".
func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// factor formats e^eps for people: 2.72, 148, 1,064, 22,026, "about
// 3 million", "more than a billion".
func factor(eps float64) string {
	f := math.Exp(eps)
	switch {
	case f < 10:
		return fmt.Sprintf("%.3g", f)
	case f < 1e6:
		return thousands(int64(math.Round(f)))
	case f < 1e9:
		return fmt.Sprintf("about %.0f million", f/1e6)
	}
	return "more than a billion"
}

func level(spent, most, budget float64) string {
	switch {
	case budget > 0 && spent >= budget*0.999:
		return "Your limit is reached: the page helps in no more rounds."
	case spent > most*(1+1e-9):
		return "This is more than this lesson's most."
	case most > 0 && spent >= most*0.999:
		return "All of this lesson's privacy is used, as planned."
	}
	return "The page never lets it pass this lesson's most."
}

// Things names what a session's samples are, for the student: "rows"
// for a row task, else "pictures".
func (s Session) Things() string {
	if s.Task != "" {
		return "rows"
	}
	return "pictures"
}

// UsedNotice says why only the last source may grow once samples are
// used.
func (s Session) UsedNotice() string {
	if s.Task != "" {
		return "Some rows are already used: only rows you type can be added now."
	}
	return "Some pictures are already used: only drawings can be added now."
}

// Plural returns "1 picture" or "n pictures".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Sparkline returns SVG polyline points for the accuracy chart in a
// w x h box (accuracy 0 at the bottom, 1 at the top; rounds 1..maxRound
// from left to right).
func Sparkline(pts []Point, maxRound int, w, h float64) string {
	if len(pts) == 0 {
		return ""
	}
	if maxRound < 1 {
		maxRound = 1
	}
	var b strings.Builder
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		x := w * float64(p.Round) / float64(maxRound)
		y := h * (1 - math.Min(1, math.Max(0, p.Accuracy)))
		fmt.Fprintf(&b, "%.1f,%.1f", x, y)
	}
	return b.String()
}

// SharedMeter is PrivacyMeter for a shared-noise session (the phones
// share the noise, and the server can unscramble only the total of at
// least threshold phones' updates): the one figure of PrivacyMeter
// becomes the promise, which holds if the other phones are real, and
// Floor says what this page's own noise alone keeps if they were fake
// (pr.FloorSpent, pr.FloorMost, against floorLimit), and how many
// classmates share the noise in this round (cohort phones, this one
// included; 0 when not yet known).
func SharedMeter(joined int, pr plan.Progress, budget, floorLimit, delta float64, threshold, cohort int) Reading {
	m := PrivacyMeter(plan.ProtectionDevice, joined, pr, budget, delta)
	if pr.Most > 0 {
		m.Plan = fmt.Sprintf("If the other phones are real: by the end of this lesson, at most ε = %s of your limit of %g is used.", plan.FormatEpsilon(pr.Most), budget)
	}
	m.Floor = fmt.Sprintf("Even if the other phones were fake, your own noise keeps it at most ε = %s by the end (used so far: ε = %s; the page allows up to %g).",
		plan.FormatEpsilon(pr.FloorMost), plan.FormatEpsilon(pr.FloorSpent), floorLimit)
	if cohort > 1 {
		m.Floor += " " + Classmates(cohort)
	}
	who := fmt.Sprintf("the server, which can only unscramble the total of at least %d phones,", threshold)
	if pr.Spent > 0 {
		m.Exact = fmt.Sprintf("If the other phones are real, ε = %s means: %s "+
			"can become at most %s times more sure whether any one of your pictures was used (apart from %s), "+
			"even if it knows all your other pictures. If the other phones were fake, the same holds with ε = %s.",
			plan.FormatEpsilon(pr.Spent), who, factor(pr.Spent), chance(delta), plan.FormatEpsilon(pr.FloorSpent))
	} else {
		m.Exact = fmt.Sprintf("ε = 0 means nothing about your pictures has been sent. At this lesson's most, if the other phones are real, "+
			"%s could become at most %s times more sure whether any one of your pictures was used (apart from %s), "+
			"even if it knows all your other pictures; if they were fake, ε = %s.", who, factor(pr.Most), chance(delta), plan.FormatEpsilon(pr.FloorMost))
	}
	return m
}

// Classmates says how many classmates share the noise in this round:
// cohort phones, this one included.
func Classmates(cohort int) string {
	return "In this round, you and " + Plural(cohort-1, "classmate", "classmates") + " share the noise."
}
