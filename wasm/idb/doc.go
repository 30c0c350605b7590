// Package idb is the browser device's durable key-value store on
// IndexedDB: one database per device, one object store of byte values.
//
// Why IndexedDB and not localStorage: localStorage holds strings only
// (a d-vector or a data shard would have to be base64-encoded), is
// limited to about 5 MB per origin, is synchronous (it blocks the page),
// and has no multi-key transactions. IndexedDB stores binary values, is
// asynchronous, and commits a transaction atomically.
//
// Invariants:
//   - Put writes all its pairs in one readwrite transaction with
//     durability "strict" and returns only after the transaction's
//     complete event: then every pair is on disk, or none is. This is the
//     atomic commit the device's exactly-once noise state (DESIGN
//     principle 3) needs: Y_i, N_i, the ledger and the pending round
//     change together or not at all.
//   - Every blocking call takes a context and must not be called from a
//     JavaScript callback (see package jsw).
//   - Builds only for GOOS=js GOARCH=wasm.
package idb
