//go:build js && wasm

package main

import (
	"context"

	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
	"browserfl/shared/privacy"
	"browserfl/wasm/owner"
)

// charge reserves this device's session in the owner's ledger
// (owner.Reserve) before its first release, when it trains on the
// owner's own data, and returns what the owner's data already spent in
// other sessions (nothing for the demo shard alone).
func (t *trainer) charge(ctx context.Context) (privacy.Spent, error) {
	a := t.a
	if !a.lib.OwnData() {
		return privacy.Spent{}, nil
	}
	budget := plan.Budget{Epsilon: a.consent.Budget, Delta: a.delta}
	c, spent, err := owner.Reserve(ctx, a.store, a.code+" ("+a.params.Algorithm+")", a.params, budget)
	if err != nil {
		return privacy.Spent{}, err
	}
	t.spentBefore = spent
	t.owner = c
	return spent, nil
}

// settle replaces this device's reservation by what its ledger spent,
// once it makes no more releases (the session ended, or the owner
// deleted the device).
func (t *trainer) settle(ctx context.Context) {
	if t.owner == nil || t.rt == nil {
		return
	}
	if algo.Trusted(t.a.params) {
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
	if err := t.owner.Settle(ctx, l.Spent()); err != nil {
		t.a.fail("Owner's ledger", err)
	}
}
