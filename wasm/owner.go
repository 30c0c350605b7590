//go:build js && wasm

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
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

// ownerLedger is the page's handle on the owner's ledger.
type ownerLedger struct{ st *idb.Store }

func openOwnerLedger(ctx context.Context) (*ownerLedger, error) {
	st, err := idb.Open(ctx, ownerDB)
	if err != nil {
		return nil, fmt.Errorf("owner's ledger: %w", err)
	}
	return &ownerLedger{st: st}, nil
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
func (o *ownerLedger) update(ctx context.Context, f func(*local.OwnerLedger) error) error {
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

// ownData reports whether the samples the device trains on include the
// owner's own (drawings, picked files), as opposed to only the demo shard.
func (a *app) ownData() bool {
	for _, src := range local.OwnSources {
		if s, ok := a.source(src); ok && len(s.Samples) > 0 {
			return true
		}
	}
	return false
}

// charge reserves this device's session in the owner's ledger before its
// first release, when it trains on the owner's own data, and returns what
// the owner's data already spent in other sessions (nothing for the demo
// shard alone). The charge id is kept in the session's store, so a
// reload resumes the same charge; a new device (after Forget, or another
// join code) is a new charge.
func (t *trainer) charge(ctx context.Context) (privacy.Spent, error) {
	a := t.a
	if !a.ownData() {
		return privacy.Spent{}, nil
	}
	id, err := a.store.Get(ctx, keyCharge)
	if errors.Is(err, idb.ErrNotFound) {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return privacy.Spent{}, fmt.Errorf("charge id: %w", err)
		}
		id = []byte(hex.EncodeToString(b[:]))
		if err := a.store.Put(ctx, map[string][]byte{keyCharge: id}); err != nil {
			return privacy.Spent{}, fmt.Errorf("charge id: %w", err)
		}
	} else if err != nil {
		return privacy.Spent{}, fmt.Errorf("charge id: %w", err)
	}
	o, err := openOwnerLedger(ctx)
	if err != nil {
		return privacy.Spent{}, err
	}
	var spent privacy.Spent
	settled := false
	owner := plan.Budget{Epsilon: a.consent.Budget, Delta: a.delta}
	name := a.code + " (" + a.params.Algorithm + ")"
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
		spent, err = l.Reserve(string(id), name, a.params, owner)
		return err
	})
	if err != nil {
		return privacy.Spent{}, err
	}
	t.spentBefore = spent
	if !settled {
		t.owner, t.chargeID = o, string(id)
	}
	return spent, nil
}

// settle replaces this device's reservation by what its ledger spent,
// once it makes no more releases (the session ended, or the owner
// deleted the device).
func (t *trainer) settle(ctx context.Context) {
	if t.owner == nil || t.rt == nil {
		return
	}
	if optim.Trusted(t.a.params) {
		// The device adds no noise and its ledger stays at 0: the
		// server's noise is what protects the data, so the reservation
		// (the server's worst case) stays.
		return
	}
	acc, ok := t.rt.Algorithm().(optim.Accountant)
	if !ok {
		return
	}
	l := acc.Ledger()
	spent := l.Spent()
	err := t.owner.update(ctx, func(l *local.OwnerLedger) error { return l.Settle(t.chargeID, spent) })
	if err != nil && !errors.Is(err, local.ErrNoCharge) {
		t.a.fail("Owner's ledger", err)
	}
}
