package ui

import (
	"fmt"
	"math"
	"strings"

	"browserfl/shared/privacy/plan"
)

// Screen is one step of the page flow.
type Screen int

// The page flow: consent, then local data, then training.
const (
	ScreenLoading Screen = iota // fetching the session's public parameters
	ScreenConsent               // what is shared, the session's parameters, the owner's budget
	ScreenData                  // demo shard, drawn samples, picked files
	ScreenTrain                 // connection, rounds, privacy meter, accuracy, try the model
	ScreenLeft                  // the device left (storage cleared or session declined)
)

// Session is the public description of a training session, as the
// coordinator announces it. Every number here is public: it is what the
// device uses to compute its own noise scale and to decide whether to join.
type Session struct {
	JoinCode  string
	Algorithm string // registry name, e.g. "nc"
	Summary   string // what the algorithm is, in a sentence
	Mode      string // "untrusted" (devices add noise) or "trusted" (server adds noise)
	Model     string
	Rounds    int     // T
	Cohort    int     // devices asked per round (m)
	Clip      float64 // S: bound on the norm of one device correction, enforced by clipping
	Rho       float64 // per-device worst-case zCDP rho (Bun-Steinke) for the whole session
	Delta     float64 // the owner's delta, at which Epsilon is stated and the budget read
	Epsilon   float64 // Rho converted to epsilon at Delta: the most one device can spend
	// EpsilonText, DeltaText and Figures are plan.Figures' text forms,
	// the same digits the dashboard, planner and docs print.
	EpsilonText, DeltaText, Figures string
	Planned                         int // rounds this device is expected to be asked (upper bound)
	Batch                           int // samples per round (single pass: each sample is used once)
}

// Data summarises the samples kept in the page.
type Data struct {
	Count    int
	Used     int      // samples consumed by the single-pass cursor
	PerLabel [10]int  // samples per class
	Sources  []string // human-readable list: "demo shard (600)", "drawn (3)", "t10k-images (1000)"
	Busy     string   // non-empty while loading
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
	Declined   int    // rounds declined (budget or data exhausted)
	StepMillis float64
	BytesSent  int64
	EpsSpent   float64 // epsilon at Delta: the device's own ledger plus what the owner's data spent before
	EpsBudget  float64 // the owner's budget
	Delta      float64
	Accuracy   []Point
	Prediction string // result of "try the model"
	Status     string // last event, in plain words
	Done       bool   // session finished or device stopped
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
	DrawLbl int // label selected for the next drawn sample
}

// Reading is the privacy meter's reading: the fraction of the budget spent
// and a sentence that says what the number means.
type Reading struct {
	Fraction float64 // spent / budget, clamped to [0, 1]
	Label    string
	Meaning  string
}

// PrivacyMeter explains epsilon spent against budget in plain words.
// An (epsilon, delta) guarantee bounds how much more likely any outcome
// of everything this device sent becomes because one sample was or was not
// in its data: by a factor of at most e^epsilon, except with probability
// delta.
func PrivacyMeter(spent, budget, delta float64) Reading {
	m := Reading{}
	if budget > 0 {
		m.Fraction = math.Min(1, math.Max(0, spent/budget))
	}
	m.Label = fmt.Sprintf("Privacy spent: ε = %s of your budget %g (%.0f%%, δ = %s)", plan.FormatEpsilon(spent), budget, 100*m.Fraction, plan.FormatDelta(delta))
	if spent <= 0 {
		m.Meaning = "Nothing sent yet: no privacy spent."
		return m
	}
	m.Meaning = fmt.Sprintf("ε measures how much everything this page has sent can reveal about any one of your samples: "+
		"someone who sees all of it can become at most e^ε = %s times more confident about whether a given sample "+
		"was used (except with probability δ = %s). Below 1 is strong protection, 1 to 10 is what large deployments use, "+
		"above 10 is weak. %s", factor(spent), plan.FormatDelta(delta), level(spent, budget))
	return m
}

// factor formats e^eps for people: 2.7, 148, 2.3 x 10^4.
func factor(eps float64) string {
	f := math.Exp(eps)
	if f < 1000 {
		return fmt.Sprintf("%.3g", f)
	}
	e := math.Floor(math.Log10(f))
	return fmt.Sprintf("%.2g×10^%.0f", f/math.Pow(10, e), e)
}

func level(spent, budget float64) string {
	if spent >= budget*0.999 {
		return "Your budget is used up: the page takes part in no more rounds."
	}
	return "The page stops before it would pass your budget."
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
