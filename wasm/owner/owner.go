//go:build js && wasm

package owner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"browserfl/shared/plan"
	"browserfl/shared/privacy"
	"browserfl/shared/wire"
	"browserfl/wasm/idb"
	"browserfl/wasm/local"
)

// The owner's ledger lives in its own IndexedDB database, one per origin
// (the browser keeps IndexedDB per origin), apart from the per-session
// databases "browserfl:<code>": it outlives a session, a Forget and a new
// join code. Its name cannot be a session's ("browserfl:" prefix).
const (
	ownerDB        = "browserfl-owner"
	keyOwnerLedger = "ledger"
)

// KeyCharge is the key of this device's charge id in the owner's ledger,
// in the session's store.
const KeyCharge = "owner-charge"

// Ledger is the page's handle on the owner's ledger.
type Ledger struct{ st *idb.Store }

// Open opens the owner's ledger.
func Open(ctx context.Context) (*Ledger, error) {
	st, err := idb.Open(ctx, ownerDB)
	if err != nil {
		return nil, fmt.Errorf("owner's ledger: %w", err)
	}
	return &Ledger{st: st}, nil
}

// ownerLock is the Web Lock that the owner's ledger is read and written
// under.
const ownerLock = "browserfl-owner-ledger"

// update reads the ledger, applies f and writes it back, with no other
// tab or worker of the origin in between: under the Web Lock ownerLock
// (navigator.locks, in pages and workers alike), and in one readwrite
// IndexedDB transaction (idb.Store.Update), which IndexedDB runs one at a
// time per store across the origin. Either alone serializes the reserve
// step; where a browser has no Web Locks the transaction does it alone.
// Two tabs that start at the same instant therefore never both pass on
// the same old ledger (docs/browser.md). f runs inside the transaction:
// it must not block.
func (o *Ledger) update(ctx context.Context, f func(*local.OwnerLedger) error) error {
	var ferr error // f's own error (a refusal), returned as is
	rmw := func() error {
		return o.st.Update(ctx, keyOwnerLedger, func(b []byte) ([]byte, error) {
			l, err := local.ParseOwnerLedger(b)
			if err == nil {
				err = f(&l)
			}
			if err != nil {
				ferr = err
				return nil, err
			}
			return l.Marshal()
		})
	}
	err := idb.Exclusive(ctx, ownerLock, rmw)
	if errors.Is(err, idb.ErrNoLocks) {
		err = rmw()
	}
	if err != nil && (ferr == nil || !errors.Is(err, ferr)) {
		return fmt.Errorf("owner's ledger: %w", err)
	}
	return err
}

// Charge is one device's open reservation in the owner's ledger.
type Charge struct {
	ledger *Ledger
	id     string
}

// Reserve reserves the session p, named name on the owner's list, in
// the owner's ledger before the device's first release on the owner's
// own data, against the owner's budget, and returns what the owner's
// data already spent in other sessions. The charge id is kept in the
// session's store session, so a reload resumes the same charge; a new
// device (after Forget, or another join code) is a new charge. The
// charge is nil when it was settled already (the session ended: the
// runtime stops at once, its state says so); spent then counts it.
func Reserve(ctx context.Context, session *idb.Store, name string, p wire.SessionParams, budget plan.Budget) (*Charge, privacy.Spent, error) {
	id, err := session.Get(ctx, KeyCharge)
	if errors.Is(err, idb.ErrNotFound) {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, privacy.Spent{}, fmt.Errorf("charge id: %w", err)
		}
		id = []byte(hex.EncodeToString(b[:]))
		if err := session.Put(ctx, map[string][]byte{KeyCharge: id}); err != nil {
			return nil, privacy.Spent{}, fmt.Errorf("charge id: %w", err)
		}
	} else if err != nil {
		return nil, privacy.Spent{}, fmt.Errorf("charge id: %w", err)
	}
	o, err := Open(ctx)
	if err != nil {
		return nil, privacy.Spent{}, err
	}
	var spent privacy.Spent
	settled := false
	err = o.update(ctx, func(l *local.OwnerLedger) error {
		if c, ok := l.Charges[string(id)]; ok && c.Final {
			// Settled when the session ended: the runtime stops at once
			// (its state says so). Its own ledger still counts what it
			// spent, on top of the other charges.
			var err error
			spent, err = l.Spent(string(id))
			settled = true
			return err
		}
		var err error
		spent, err = l.Reserve(string(id), name, p, budget)
		return err
	})
	if err != nil {
		return nil, privacy.Spent{}, err
	}
	if settled {
		return nil, spent, nil
	}
	return &Charge{ledger: o, id: string(id)}, spent, nil
}

// Settle replaces the reservation by what the device's ledger spent,
// once it makes no more releases (the session ended, or the owner
// deleted the device). A charge no longer in the ledger is no error.
func (c *Charge) Settle(ctx context.Context, spent privacy.Spent) error {
	err := c.ledger.update(ctx, func(l *local.OwnerLedger) error { return l.Settle(c.id, spent) })
	if err != nil && !errors.Is(err, local.ErrNoCharge) {
		return err
	}
	return nil
}
