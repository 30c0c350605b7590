package plan

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/privacy"
)

// DefaultDelta is the owner's delta unless the owner chooses another: the
// delta at which every surface (page, dashboard, planner, simulator,
// docs) states epsilon, and at which a device owner's budget is read. It
// is below 1/n for any classroom- or city-sized population.
const DefaultDelta = 1e-5

// DefaultBudgetEpsilon is the owner's default budget, epsilon at
// DefaultDelta: the page's consent screen, cmd/device and cmd/loadtest
// start from it.
const DefaultBudgetEpsilon = 8.0

// DefaultLessonShare is the share of an owner's budget (epsilon, at the
// owner's delta) that one lesson's worst-case device spends: the most a
// device can spend in the default lesson is this share of the default
// budget. Not 1: the sum of a session's release costs is computed in
// floating point, and a worst case a rounding error above the budget
// would be refused by the device it was meant for; 1% of epsilon is far
// above any rounding and leaves at least 95% used.
const DefaultLessonShare = 0.99

// LessonTarget is the one sizing of a lesson's privacy from an owner's
// budget: the target (epsilon, delta) whose worst-case device spends
// DefaultLessonShare of b's epsilon at b's delta (optim's calibration
// spends the whole target on the most releases a device can make).
func LessonTarget(b Budget) (epsilon, delta float64) {
	return DefaultLessonShare * b.Epsilon, b.Delta
}

// DefaultLessonTarget is LessonTarget(DefaultBudget()): the default
// lesson's target (cmd/coordinator's default session), epsilon 7.92 at
// delta 1e-5.
func DefaultLessonTarget() (epsilon, delta float64) { return LessonTarget(DefaultBudget()) }

// Budget is a data owner's privacy budget: the most a device may spend,
// as epsilon at the owner's own delta. The owner fixes both numbers; a
// session's parameters never change the delta a budget is read at.
//
// Epsilon governs the one figure of every session and the promise of a
// shared-noise session (Figures.Promise); Floor governs a shared-noise
// session's floor (Figures.Floor), what the device's own noise keeps if
// the coordinator runs fake devices: 0 means DefaultFloorRatio times
// Epsilon (FloorLimit).
type Budget struct {
	Epsilon float64
	Delta   float64
	Floor   float64
}

// DefaultFloorRatio sets the owner's default floor limit: DefaultFloorRatio
// times their epsilon (64 at the default 8). A shared-noise device's floor
// costs about h times the promise's rho, h the honest survivors it relies
// on; at the default budget this admits the lessons that rely on up to 21
// (a class of 30 at the default threshold: floor 61.4), not 35 (a cohort
// of 50: 88.0), unless the owner raises it (docs/privacy.md, "The owner's
// two limits").
const DefaultFloorRatio = 8

// DefaultBudget is (DefaultBudgetEpsilon, DefaultDelta), with the default
// floor limit.
func DefaultBudget() Budget { return Budget{Epsilon: DefaultBudgetEpsilon, Delta: DefaultDelta} }

// FloorLimit is the most epsilon the owner accepts as a shared-noise
// session's floor: Floor, or DefaultFloorRatio times Epsilon when Floor
// is 0.
func (b Budget) FloorLimit() float64 {
	if b.Floor > 0 {
		return b.Floor
	}
	return DefaultFloorRatio * b.Epsilon
}

// Validate checks 0 < Epsilon < inf, 0 < Delta < 1 and Epsilon <= Floor
// < inf (or Floor 0: the default).
func (b Budget) Validate() error {
	if !(b.Epsilon > 0) || math.IsInf(b.Epsilon, 0) {
		return fmt.Errorf("plan: owner's epsilon = %v, want a finite value > 0", b.Epsilon)
	}
	if !(b.Delta > 0 && b.Delta < 1) {
		return fmt.Errorf("plan: owner's delta = %v, want 0 < delta < 1", b.Delta)
	}
	if b.Floor != 0 && (!(b.Floor >= b.Epsilon) || math.IsInf(b.Floor, 0)) {
		return fmt.Errorf("plan: owner's floor limit = %v, want a finite value >= epsilon %v (0: %d times it)", b.Floor, b.Epsilon, DefaultFloorRatio)
	}
	return nil
}

// Rho is the budget as standard zCDP rho: the largest rho whose
// device conversion (privacy.LedgerEpsilon) at the owner's delta is at most the
// owner's epsilon. Ledgers (which hold rho) are compared with this.
func (b Budget) Rho() (float64, error) {
	if err := b.Validate(); err != nil {
		return 0, err
	}
	r, err := privacy.LedgerRho(b.Epsilon, b.Delta)
	if err != nil {
		return 0, fmt.Errorf("plan: owner's budget: %w", err)
	}
	return r, nil
}

// Over is the one owner's-budget comparison: it returns the epsilon, at
// the owner's delta, of a ledger (all the owner's data has spent, before
// and in this session; privacy.SpentEpsilon reads it) and whether that is
// over the owner's epsilon. Check makes it with a session's worst case
// before joining; the device runtime makes it with its ledger before each
// release. The session's own delta plays no part.
func (b Budget) Over(s privacy.Spent) (eps float64, over bool, err error) {
	eps, err = privacy.SpentEpsilon(s, b.Delta)
	if err != nil {
		return 0, false, err
	}
	return eps, eps > b.Epsilon, nil
}

// Figures are a session's privacy figures for one device, as every
// surface shows them. Epsilon is stated at Delta, which is the owner's
// delta (DefaultDelta unless the owner chose another), never the
// session's: a session's own delta only describes how its target was
// written down.
type Figures struct {
	Private bool
	// Trusted: the server sees clipped, un-noised updates, so nothing
	// bounds what it learns; Epsilon holds against everyone else (other
	// devices, anyone who sees a published model).
	Trusted bool
	// LastIterate: the worst case holds a last-iterate charge ("local"),
	// proven as Gaussian DP only: its rho is never called zCDP.
	LastIterate bool

	// BudgetRho is the session's per-device budget (standard zCDP), the
	// cap of each device's ledger; RhoPaper is the papers' rho_p.
	BudgetRho, RhoPaper float64
	// WorstReleases is the most releases one device makes (every release,
	// re-asked rounds included: optim caps them at T); WorstRho their
	// zCDP cost and WorstSpent the ledger holding them.
	WorstReleases int
	WorstRho      float64
	WorstSpent    privacy.Spent
	// Epsilon is WorstRho converted at Delta: the most one device can
	// spend in this session.
	Epsilon float64
	Delta   float64
	// SessionDelta is the delta the session wrote its own target at (0
	// when its target is rho_p). It is shown, never used to read a budget.
	SessionDelta float64
	// WorstSchedule is Report.WorstSchedule: the worst-case ledger's rho
	// after each release (PlannedShare reads it).
	WorstSchedule []float64
	// RoundRho is, in a trusted session, the zCDP cost of one published
	// round to a sample inside it (every round costs the same; 0 in the
	// other modes): Published turns a count of rounds into a ledger.
	RoundRho float64

	// Promise and Floor are the session's two figures, epsilon at Delta
	// (docs/privacy.md, section 4c). In a shared-noise session (Shared)
	// a device sends only a share of the noise, and what it may lose
	// depends on the other members of its cohorts being real:
	//
	//   - Promise holds against a coordinator that sees only each
	//     round's sum of at least Threshold updates, at most Colluders
	//     of them its own (Honest = Threshold - Colluders honest
	//     survivors' shares in every sum);
	//   - Floor holds against a coordinator that runs fake devices: the
	//     device's own noise shares alone.
	//
	// In every other session both are Epsilon, PromiseSpent and
	// FloorSpent are WorstSpent, and the three counts are 0: one figure,
	// so that a caller need not tell the modes apart.
	Promise, Floor           float64
	PromiseSpent, FloorSpent privacy.Spent
	Shared                   bool
	Threshold, Colluders     int
	Honest                   int
}

// SessionFigures computes a session's figures at the owner's delta (0:
// DefaultDelta). Page, dashboard, planner, simulator and docs all print
// the result of this function through EpsilonText, RhoText and Text.
func SessionFigures(p optim.Params, ownerDelta float64) (Figures, error) {
	if ownerDelta == 0 {
		ownerDelta = DefaultDelta
	}
	r, err := Compute(p, ownerDelta)
	if err != nil {
		return Figures{}, fmt.Errorf("session figures: %w", err)
	}
	f := Figures{Private: r.Private, Trusted: r.Trusted, Delta: ownerDelta}
	if !r.Private {
		return f, nil
	}
	if p.Rho <= 0 {
		f.SessionDelta = p.Delta
	}
	f.BudgetRho, f.RhoPaper = r.BudgetRho, r.RhoPaper
	f.WorstReleases, f.WorstRho, f.WorstSpent, f.Epsilon = r.WorstParticipations, r.WorstRho, r.WorstSpent, r.WorstEpsilon
	f.LastIterate = r.WorstSpent.LastIterate
	f.WorstSchedule = r.WorstSchedule
	f.Promise, f.Floor, f.PromiseSpent, f.FloorSpent = f.Epsilon, f.Epsilon, f.WorstSpent, f.WorstSpent
	if p.Algorithm == "shared" {
		if err := sharedFigures(p, &f); err != nil {
			return Figures{}, err
		}
	}
	if f.Trusted {
		// The server's release of round t: the discrete Gaussian of
		// NoiseScale on the noisy sum, sensitivity TrustedSensitivity
		// (the cost Compute charges per round).
		q := p
		q.Rho, q.Epsilon, q.Delta = r.RhoPaper, 0, 0
		s, err := algo.NoiseScale(q, 1)
		if err != nil {
			return Figures{}, fmt.Errorf("session figures: %w", err)
		}
		if f.RoundRho, err = privacy.GaussianZCDP(algo.TrustedSensitivity(q), s); err != nil {
			return Figures{}, fmt.Errorf("session figures: %w", err)
		}
	}
	return f, nil
}

// Published is, in a trusted session, what everyone but the server can
// learn about one sample after n published rounds hold it, as a ledger:
// the noisy sum the server publishes in round t carries every update
// included in rounds 1..t, so a sample first sent in round tau is inside
// every published round from tau on (n = rounds published since then,
// at most WorstReleases: Published(WorstReleases) is WorstSpent). In
// the other modes the device's own ledger is the figure and Published
// returns an error.
func (f Figures) Published(n int) (privacy.Spent, error) {
	if !f.Private || !f.Trusted {
		return privacy.Spent{}, errors.New("plan: only a trusted session's figure grows with the rounds published")
	}
	var l privacy.Ledger
	for range min(max(n, 0), f.WorstReleases) {
		if err := l.ChargeRho(f.RoundRho); err != nil {
			return privacy.Spent{}, fmt.Errorf("plan: %w", err)
		}
	}
	return l.Spent(), nil
}

// PlannedShare is the part of the session's privacy (its worst case's
// zCDP rho) the plan spends in a device's first n releases:
// WorstSchedule[n-1] / WorstRho, 0 for n <= 0 and 1 from WorstReleases
// on. The cost of a release depends on how many came before it (noise
// cancellation's first release costs the most), so the plan's share
// after n of T releases is not n/T.
func (f Figures) PlannedShare(n int) float64 {
	if n <= 0 || len(f.WorstSchedule) == 0 || !(f.WorstRho > 0) {
		return 0
	}
	return f.WorstSchedule[min(n, len(f.WorstSchedule))-1] / f.WorstRho
}

// FormatEpsilon is the one text form of an epsilon: two decimals, rounded
// up (a stated guarantee is never smaller than the computed one).
func FormatEpsilon(eps float64) string {
	if math.IsInf(eps, 1) || math.IsNaN(eps) {
		return strconv.FormatFloat(eps, 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Ceil(eps*100)/100, 'f', 2, 64)
}

// FormatRho is the one text form of a zCDP rho: four significant digits.
func FormatRho(rho float64) string { return strconv.FormatFloat(rho, 'g', 4, 64) }

// FormatDelta is the one text form of a delta, e.g. "1e-5".
func FormatDelta(delta float64) string {
	s := strconv.FormatFloat(delta, 'g', 3, 64)
	s = strings.Replace(s, "e-0", "e-", 1)
	return strings.Replace(s, "e+0", "e+", 1)
}

// EpsilonText is FormatEpsilon(f.Epsilon).
func (f Figures) EpsilonText() string { return FormatEpsilon(f.Epsilon) }

// DeltaText is FormatDelta(f.Delta).
func (f Figures) DeltaText() string { return FormatDelta(f.Delta) }

// PromiseText is FormatEpsilon(f.Promise).
func (f Figures) PromiseText() string { return FormatEpsilon(f.Promise) }

// FloorText is FormatEpsilon(f.Floor).
func (f Figures) FloorText() string { return FormatEpsilon(f.Floor) }

// RhoText is FormatRho(f.WorstRho).
func (f Figures) RhoText() string { return FormatRho(f.WorstRho) }

// Text is the sentence every surface prints, e.g.
// "ε = 7.92 at δ = 1e-5 (zCDP ρ = 1.365, 200 releases at most)". A
// trusted session's says whom epsilon holds against (everyone but the
// server); a last-iterate session's names its rho the ledger's and the
// guarantee Gaussian DP, never zCDP.
func (f Figures) Text() string {
	switch {
	case !f.Private:
		return "no privacy guarantee"
	case f.Shared:
		return f.sharedText()
	case f.Trusted:
		return fmt.Sprintf("ε = %s at δ = %s against everyone but the server, which sees un-noised updates and is not bounded (zCDP ρ = %s, %d noisy rounds at most)",
			f.EpsilonText(), f.DeltaText(), f.RhoText(), f.WorstReleases)
	case f.LastIterate:
		return fmt.Sprintf("ε = %s at δ = %s (Gaussian DP of ledger ρ = %s, %d releases at most)", f.EpsilonText(), f.DeltaText(), f.RhoText(), f.WorstReleases)
	}
	return fmt.Sprintf("ε = %s at δ = %s (zCDP ρ = %s, %d releases at most)", f.EpsilonText(), f.DeltaText(), f.RhoText(), f.WorstReleases)
}

// Protection names what a session's figure holds against, in a word
// every surface uses: "none" (no noise, no guarantee), "server" (the
// server adds the noise: nothing bounds what it learns, Epsilon bounds
// everyone else) or "device" (each device adds its own noise: Epsilon
// bounds everyone, the server included).
func (f Figures) Protection() string {
	switch {
	case !f.Private:
		return ProtectionNone
	case f.Trusted:
		return ProtectionServer
	}
	return ProtectionDevice
}

// The values of Figures.Protection.
const (
	ProtectionNone   = "none"
	ProtectionServer = "server"
	ProtectionDevice = "device"
)

// Progress is a device's privacy in one session as its owner sees it,
// both figures as epsilon at the owner's delta (Budget.Over), counting
// what the owner's data spent before this session: Spent is what it has
// spent so far, Most the most this session can take it to (the
// session's worst case on top of what was spent before). Spent <= Most
// holds for a device whose ledger stays within the session's worst case,
// which optim's device enforces; Most <= the owner's epsilon for a
// session Check let the device join.
//
// Share is the part of this session's privacy the ledger holds: its zCDP
// rho over the session's worst case's (Figures.WorstRho). Charges add
// up in rho, so Share grows by the same step with each release of the
// same cost and is 1 exactly when the device has made the most releases
// the session plans; epsilon, a concave function of rho, is most of the
// way to Most after a few releases. The page's meter fills by Share and
// states Spent beside it. A ledger past the worst case gives a Share
// above 1 (never clamped here).
type Progress struct {
	Spent, Most float64
	Share       float64
	// Releases is the count Progress was given (the device's releases,
	// or a trusted session's rounds published since its first update);
	// Planned is the plan's share after as many (Figures.PlannedShare),
	// and OnPlan says Share is within it: the ledger holds no more than
	// the plan spends in that many releases.
	Releases int
	Planned  float64
	OnPlan   bool
	// Decreasing: in this session a later release costs less than the
	// first (noise cancellation), so the share grows fastest at first.
	Decreasing bool
	// FloorSpent and FloorMost are Spent and Most for the session's
	// floor (Figures.Floor: against a coordinator that runs fake
	// devices), what the owner's data spent before included; in every
	// session but a shared-noise one they are Spent and Most.
	FloorSpent, FloorMost float64
}

// ShareTolerance is the relative rounding a ledger's sum of charges may
// carry against the plan's schedule: a share within it of the plan is on
// the plan (Progress.OnPlan; the page's meter words).
const ShareTolerance = 1e-9

// Progress returns the owner's figures for a session p: before is what
// the owner's data spent elsewhere, ledger what the device has spent in
// this session in its releases (the count of its releases, or in a
// trusted session the rounds published that hold its update). The page's
// privacy meter shows exactly these numbers; Check compares Most with
// the owner's epsilon.
func (b Budget) Progress(p optim.Params, before, ledger privacy.Spent, releases int) (Progress, error) {
	f, err := SessionFigures(p, b.Delta)
	if err != nil {
		return Progress{}, err
	}
	if !f.Private {
		return Progress{}, fmt.Errorf("plan: algorithm %q gives no privacy guarantee", p.Algorithm)
	}
	return b.ProgressOf(f, before, ledger, releases)
}

// ProgressOf is Progress for the session whose figures f are
// (SessionFigures of its parameters at b.Delta), for a caller that keeps
// them: a shared-noise session's figures take seconds to derive in a
// page's Worker, and the meter reads Progress at every event.
func (b Budget) ProgressOf(f Figures, before, ledger privacy.Spent, releases int) (Progress, error) {
	if before.Validate() != nil || ledger.Validate() != nil || releases < 0 {
		return Progress{}, fmt.Errorf("plan: spent %+v and %+v in %d releases, want finite values >= 0", before, ledger, releases)
	}
	if f.Delta != b.Delta {
		return Progress{}, fmt.Errorf("plan: figures at delta %g read for an owner's delta %g", f.Delta, b.Delta)
	}
	if !f.Private || !(f.WorstRho > 0) {
		return Progress{}, errors.New("plan: the session gives no privacy guarantee")
	}
	worst, err := before.Add(f.WorstSpent)
	if err != nil {
		return Progress{}, fmt.Errorf("plan: %w", err)
	}
	most, _, err := b.Over(worst)
	if err != nil {
		return Progress{}, fmt.Errorf("plan: %w", err)
	}
	now, err := before.Add(ledger)
	if err != nil {
		return Progress{}, fmt.Errorf("plan: %w", err)
	}
	spent, _, err := b.Over(now)
	if err != nil {
		return Progress{}, fmt.Errorf("plan: %w", err)
	}
	share, planned := ledger.Rho/f.WorstRho, f.PlannedShare(releases)
	sch := f.WorstSchedule
	decreasing := len(sch) > 1 && sch[0] > 1.5*(sch[len(sch)-1]-sch[len(sch)-2])
	pr := Progress{Spent: spent, Most: most, Share: share, Releases: releases, Planned: planned,
		OnPlan: share <= planned*(1+ShareTolerance), Decreasing: decreasing, FloorSpent: spent, FloorMost: most}
	if f.Shared {
		if pr.FloorMost, err = b.read(before, f.FloorSpent); err != nil {
			return Progress{}, err
		}
		if pr.FloorSpent, err = b.read(before, f.FloorOf(ledger)); err != nil {
			return Progress{}, err
		}
	}
	return pr, nil
}

// FloorOf is the floor of what a device's ledger holds: in a shared-noise
// session the ledger charges each release the promise's cost, and the
// floor's is FloorSpent.Rho / WorstRho times it, release by release (the
// one share calibration scales both); in every other session the ledger
// itself.
func (f Figures) FloorOf(ledger privacy.Spent) privacy.Spent {
	if !f.Shared || !(f.WorstRho > 0) {
		return ledger
	}
	return privacy.Charged(ledger.Rho * f.FloorSpent.Rho / f.WorstRho)
}

// read is the epsilon, at the owner's delta, of what was spent before
// and s together.
func (b Budget) read(before, s privacy.Spent) (float64, error) {
	all, err := before.Add(s)
	if err != nil {
		return 0, fmt.Errorf("plan: %w", err)
	}
	eps, _, err := b.Over(all)
	if err != nil {
		return 0, fmt.Errorf("plan: %w", err)
	}
	return eps, nil
}

// ErrOverBudget is wrapped by Check when a session would take the owner
// past their budget.
var ErrOverBudget = errors.New("plan: over the owner's budget")

// Check is what a device runs before joining: it refuses (returns an
// error) when the session gives no guarantee, or when spent (what the
// owner's data has already spent elsewhere; zero for fresh data) plus
// the session's worst case exceeds the owner's budget. The comparison is
// at the owner's delta; the session's own delta plays no part, so a
// session that writes its target at a large delta is charged its real
// cost (its rho), read at the owner's delta. A coordinator that lies
// about the parameters cannot make the device spend more, because the
// device derives its noise from the same parameters it checked here.
func Check(p optim.Params, owner Budget, spent privacy.Spent) error {
	if err := owner.Validate(); err != nil {
		return err
	}
	if err := spent.Validate(); err != nil {
		return fmt.Errorf("plan: spent: %w", err)
	}
	f, err := SessionFigures(p, owner.Delta)
	if err != nil {
		return err
	}
	if !f.Private {
		return fmt.Errorf("plan: algorithm %q gives no privacy guarantee", p.Algorithm)
	}
	pr, err := owner.ProgressOf(f, spent, privacy.Spent{}, 0)
	if err != nil {
		return err
	}
	if f.Shared {
		return checkShared(f, owner, spent, pr)
	}
	if eps := pr.Most; eps > owner.Epsilon {
		if spent.Rho > 0 {
			return fmt.Errorf("%w: already spent zCDP rho %s, and this session may spend up to %s more: together epsilon %s at delta %s, over the budget of %s",
				ErrOverBudget, FormatRho(spent.Rho), FormatRho(f.WorstRho), FormatEpsilon(eps), FormatDelta(owner.Delta), strconv.FormatFloat(owner.Epsilon, 'g', -1, 64))
		}
		return fmt.Errorf("%w: this session may spend up to epsilon %s at delta %s, over the budget of %s",
			ErrOverBudget, FormatEpsilon(eps), FormatDelta(owner.Delta), strconv.FormatFloat(owner.Epsilon, 'g', -1, 64))
	}
	return nil
}

// checkShared is Check's rule for a shared-noise session: the promise
// (and the ledger's reading of the worst case, which the device's own
// refusal rule follows) within the owner's epsilon, and the floor within
// the owner's floor limit (Budget.FloorLimit), each counting what the
// owner's data spent before.
func checkShared(f Figures, owner Budget, spent privacy.Spent, pr Progress) error {
	promise, err := owner.read(spent, f.PromiseSpent)
	if err != nil {
		return err
	}
	if eps := max(promise, pr.Most); eps > owner.Epsilon {
		return fmt.Errorf("%w: if the other devices are real, this session may spend up to epsilon %s at delta %s (with what was spent before), over the budget of %s",
			ErrOverBudget, FormatEpsilon(eps), FormatDelta(owner.Delta), strconv.FormatFloat(owner.Epsilon, 'g', -1, 64))
	}
	if pr.FloorMost > owner.FloorLimit() {
		return fmt.Errorf("%w: this device's own noise alone keeps this session to epsilon %s at delta %s (with what was spent before), over the floor limit of %s",
			ErrOverBudget, FormatEpsilon(pr.FloorMost), FormatDelta(owner.Delta), strconv.FormatFloat(owner.FloorLimit(), 'g', -1, 64))
	}
	return nil
}
