package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
)

// OwnSources are the data sources that are the owner's own (drawings and
// picked files). The demo shard is the coordinator's data, not the
// owner's: sessions on it are not charged to the owner's ledger.
var OwnSources = []string{"files", "drawn"}

// Charge is one session's entry in the owner's ledger.
type Charge struct {
	// Rho is the zCDP rho charged: the session's worst case, reserved
	// before its first release, or what its device ledger spent once the
	// session ended (Final). LastIterate and TV are the rest of that
	// ledger (privacy.Spent): whether a last-iterate charge is in it, and
	// its coupling term.
	Rho         float64 `json:"rho"`
	LastIterate bool    `json:"last_iterate,omitempty"`
	TV          float64 `json:"tv,omitempty"`
	Final       bool    `json:"final,omitempty"`
	// Session names the session for the owner (join code and algorithm).
	Session string `json:"session,omitempty"`
}

// OwnerLedger is what the owner's own data has spent, across sessions.
// The page keeps one per origin (IndexedDB is per origin) for all of the
// owner's own data together: a session on any of it is charged, so the
// same drawings or files used again in a new session start from what
// they already spent. zCDP composes by addition, so the total is the sum
// of the entries, read as epsilon at the owner's delta.
//
// Clearing the site's data deletes the ledger with everything else; a
// page cannot prevent that (docs/browser.md).
type OwnerLedger struct {
	// Version is OwnerLedgerVersion; 0 (absent) in ledgers stored before
	// charges recorded their kind.
	Version int               `json:"version,omitempty"`
	Charges map[string]Charge `json:"charges"` // by charge id (one per joined device)
}

// OwnerLedgerVersion is the version Marshal writes: charges carry
// LastIterate and TV.
const OwnerLedgerVersion = 1

// ParseOwnerLedger decodes a stored ledger (nil or empty: a new one). A
// ledger stored before version 1 did not record which charges were
// last-iterate ones: each of its charges is read as one
// (privacy.AnyCharged: Gaussian DP with the slack bound, valid for every
// charge), never through the zCDP conversion.
func ParseOwnerLedger(b []byte) (OwnerLedger, error) {
	var l OwnerLedger
	if len(b) > 0 {
		if err := json.Unmarshal(b, &l); err != nil {
			return OwnerLedger{}, fmt.Errorf("owner's ledger: %w", err)
		}
	}
	if l.Version < 0 || l.Version > OwnerLedgerVersion {
		return OwnerLedger{}, fmt.Errorf("owner's ledger: version %d, want at most %d", l.Version, OwnerLedgerVersion)
	}
	for id, c := range l.Charges {
		if !(c.Rho >= 0) || math.IsInf(c.Rho, 0) || !(c.TV >= 0) || math.IsInf(c.TV, 0) {
			return OwnerLedger{}, fmt.Errorf("owner's ledger: charge %q has rho %v, tv %v", id, c.Rho, c.TV)
		}
		if l.Version == 0 {
			s := privacy.AnyCharged(c.Rho)
			c.LastIterate, c.TV = s.LastIterate, s.TV
			l.Charges[id] = c
		}
	}
	l.Version = OwnerLedgerVersion
	return l, nil
}

// Marshal encodes the ledger for storage (version OwnerLedgerVersion).
func (l OwnerLedger) Marshal() ([]byte, error) {
	l.Version = OwnerLedgerVersion
	return json.Marshal(l)
}

// spent is a charge's ledger.
func (c Charge) spent() privacy.Spent {
	return privacy.Spent{Rho: c.Rho, LastIterate: c.LastIterate, TV: c.TV}
}

// Spent is what the charges have spent, except the charge id except ("":
// every charge), composed (privacy.Spent.Add). Charges are summed in
// sorted order so the total does not depend on map order.
func (l OwnerLedger) Spent(except string) (privacy.Spent, error) {
	ids := make([]string, 0, len(l.Charges))
	for id := range l.Charges {
		if id != except {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var s privacy.Spent
	for _, id := range ids {
		var err error
		if s, err = s.Add(l.Charges[id].spent()); err != nil {
			return privacy.Spent{}, fmt.Errorf("owner's ledger: %w", err)
		}
	}
	return s, nil
}

// ErrNoCharge is returned by Settle for an unknown charge id.
var ErrNoCharge = errors.New("owner's ledger: no such charge")

// Reserve charges the session p, on the owner's data, to the ledger
// under id before its device makes any release: the session's worst case
// (plan.SessionFigures at the owner's delta). It refuses (an error
// wrapping plan.ErrOverBudget) when what the other charges spent plus
// this worst case exceeds the owner's budget. If id is already charged
// and not settled (the page reloaded mid-session) nothing changes; a
// settled id is refused. It returns what the other charges spent, which
// the device counts against the budget.
func (l *OwnerLedger) Reserve(id, name string, p optim.Params, owner plan.Budget) (spentElsewhere privacy.Spent, err error) {
	if id == "" {
		return privacy.Spent{}, errors.New("owner's ledger: empty charge id")
	}
	spent, err := l.Spent(id)
	if err != nil {
		return privacy.Spent{}, err
	}
	if c, ok := l.Charges[id]; ok {
		if c.Final {
			// Settled: its device will make no more releases, and a
			// device that did would not be covered by the entry.
			return privacy.Spent{}, fmt.Errorf("owner's ledger: charge %q is settled", id)
		}
		return spent, nil
	}
	if err := plan.Check(p, owner, spent); err != nil {
		return privacy.Spent{}, fmt.Errorf("owner's ledger: %w", err)
	}
	f, err := plan.SessionFigures(p, owner.Delta)
	if err != nil {
		return privacy.Spent{}, fmt.Errorf("owner's ledger: %w", err)
	}
	if l.Charges == nil {
		l.Charges = map[string]Charge{}
	}
	w := f.WorstSpent
	l.Charges[id] = Charge{Rho: w.Rho, LastIterate: w.LastIterate, TV: w.TV, Session: name}
	return spent, nil
}

// Settle replaces a reservation by what the session's device ledger
// spent once that device makes no more releases (the session ended, or
// the owner deleted the device); the entry is then final.
func (l *OwnerLedger) Settle(id string, s privacy.Spent) error {
	c, ok := l.Charges[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNoCharge, id)
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("owner's ledger: settle %q: %w", id, err)
	}
	c.Rho, c.LastIterate, c.TV, c.Final = s.Rho, s.LastIterate, s.TV, true
	l.Charges[id] = c
	return nil
}
