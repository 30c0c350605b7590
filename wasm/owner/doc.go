//go:build js && wasm

// Package owner is the browser device's handle on the owner's ledger:
// what the owner's own data (drawings, picked files) has spent across
// sessions, kept in its own IndexedDB database per origin (ownerDB),
// apart from the per-session databases, so it outlives a session, a
// Forget and a new join code. The ledger's contents and rules are
// local.OwnerLedger's; this package stores them and keeps one device's
// charge in them (Reserve before the first release, Settle when the
// device makes no more).
//
// Invariants:
//   - The ledger is read and written only in Ledger.update: under the
//     Web Lock ownerLock and in one readwrite IndexedDB transaction, so
//     two tabs that reserve at the same instant never both pass on the
//     same old ledger (docs/browser.md, "The owner's ledger").
//   - A device's charge id is kept in its session's store (KeyCharge),
//     so a reload resumes the same charge.
//   - Builds only for GOOS=js GOARCH=wasm.
package owner
