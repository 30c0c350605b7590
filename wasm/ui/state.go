package ui

import (
	"fmt"
	"math"
	"strings"
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
	Algorithm string // e.g. "mu2-nc" (mu^2-SGD with noise cancellation)
	Mode      string // "untrusted" (devices add noise) or "trusted" (server adds noise)
	Model     string
	Rounds    int     // T
	Cohort    int     // devices asked per round (m)
	Clip      float64 // S: bound on the norm of one device correction, enforced by clipping
	Rho       float64 // per-device zCDP rho (Bun-Steinke) promised for the whole session
	Delta     float64 // the session's delta for the (epsilon, delta) conversion
	Epsilon   float64 // rho converted to epsilon at Delta: the most one device can spend
	Planned   int     // rounds this device is expected to be asked (upper bound)
	Batch     int     // samples per round (single pass: each sample is used once)
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
	EpsSpent   float64 // epsilon at the session's delta, from the device's own ledger
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
	Budget  float64 // owner-set maximum epsilon at Session.Delta
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
	m.Label = fmt.Sprintf("ε spent %.3g of %.3g (δ = %.0e)", spent, budget, delta)
	factor := math.Exp(spent)
	switch {
	case spent <= 0:
		m.Meaning = "Nothing sent yet: no privacy spent."
	default:
		m.Meaning = fmt.Sprintf("Whatever anyone concludes from everything this page has sent, "+
			"that conclusion is at most %.2f× more (or less) likely with any one of your samples "+
			"than without it (except with probability %.0e). The page stops before this factor "+
			"passes %.2f, your budget.", factor, delta, math.Exp(budget))
	}
	return m
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
