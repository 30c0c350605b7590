package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"browserfl/shared/optim"
	"browserfl/shared/plan"
)

// OwnSources are the data sources that are the owner's own (drawings and
// picked files). The demo shard is the coordinator's data, not the
// owner's: sessions on it are not charged to the owner's ledger.
var OwnSources = []string{"files", "drawn"}

// Charge is one session's entry in the owner's ledger.
type Charge struct {
	// Rho is the zCDP rho charged: the session's worst case, reserved
	// before its first release, or what its device ledger spent once the
	// session ended (Final).
	Rho   float64 `json:"rho"`
	Final bool    `json:"final,omitempty"`
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
	Charges map[string]Charge `json:"charges"` // by charge id (one per joined device)
}

// ParseOwnerLedger decodes a stored ledger (nil or empty: a new one).
func ParseOwnerLedger(b []byte) (OwnerLedger, error) {
	var l OwnerLedger
	if len(b) > 0 {
		if err := json.Unmarshal(b, &l); err != nil {
			return OwnerLedger{}, fmt.Errorf("owner's ledger: %w", err)
		}
	}
	for id, c := range l.Charges {
		if !(c.Rho >= 0) || math.IsInf(c.Rho, 0) {
			return OwnerLedger{}, fmt.Errorf("owner's ledger: charge %q has rho %v", id, c.Rho)
		}
	}
	return l, nil
}

// Marshal encodes the ledger for storage.
func (l OwnerLedger) Marshal() ([]byte, error) { return json.Marshal(l) }

// Spent is the total zCDP rho charged, except the charge id except ("":
// every charge). Charges are summed in sorted order so the total does not
// depend on map order.
func (l OwnerLedger) Spent(except string) float64 {
	ids := make([]string, 0, len(l.Charges))
	for id := range l.Charges {
		if id != except {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	s := 0.0
	for _, id := range ids {
		s += l.Charges[id].Rho
	}
	return s
}

// ErrNoCharge is returned by Settle for an unknown charge id.
var ErrNoCharge = errors.New("owner's ledger: no such charge")

// Reserve charges the session p, on the owner's data, to the ledger
// under id before its device makes any release: the session's worst case
// (plan.SessionFigures at the owner's delta). It refuses (an error
// wrapping plan.ErrOverBudget) when what the other charges spent plus
// this worst case exceeds the owner's budget. If id is already charged
// and not settled (the page reloaded mid-session) nothing changes; a
// settled id is refused. It returns the rho the other charges spent,
// which the device counts against the budget.
func (l *OwnerLedger) Reserve(id, name string, p optim.Params, owner plan.Budget) (spentElsewhere float64, err error) {
	if id == "" {
		return 0, errors.New("owner's ledger: empty charge id")
	}
	spent := l.Spent(id)
	if c, ok := l.Charges[id]; ok {
		if c.Final {
			// Settled: its device will make no more releases, and a
			// device that did would not be covered by the entry.
			return 0, fmt.Errorf("owner's ledger: charge %q is settled", id)
		}
		return spent, nil
	}
	if err := plan.Check(p, owner, spent); err != nil {
		return 0, fmt.Errorf("owner's ledger: %w", err)
	}
	f, err := plan.SessionFigures(p, owner.Delta)
	if err != nil {
		return 0, fmt.Errorf("owner's ledger: %w", err)
	}
	if l.Charges == nil {
		l.Charges = map[string]Charge{}
	}
	l.Charges[id] = Charge{Rho: f.WorstRho, Session: name}
	return spent, nil
}

// Settle replaces a reservation by what the session's device ledger
// spent (rho) once that device makes no more releases (the session ended,
// or the owner deleted the device); the entry is then final.
func (l *OwnerLedger) Settle(id string, rho float64) error {
	c, ok := l.Charges[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNoCharge, id)
	}
	if !(rho >= 0) || math.IsInf(rho, 0) {
		return fmt.Errorf("owner's ledger: settle %q with rho %v", id, rho)
	}
	c.Rho, c.Final = rho, true
	l.Charges[id] = c
	return nil
}
