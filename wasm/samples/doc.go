//go:build js && wasm

// Package samples is the browser device's data library: the samples the
// student keeps in this browser, by source (the demo shard's chunks,
// picked files, drawings and, for a row task, the rows typed in the
// form), held in memory and stored in the session's IndexedDB database
// (wasm/idb) under "data/<source>/...". It also fetches the demo shard
// (pictures in chunks, a row task's example rows) from the coordinator.
//
// Every source is shuffled once (crypto-seeded) before it is first
// stored, and All joins the sources in a fixed order (demo, files,
// drawn, typed), so the device runtime's single-pass cursor means the
// same samples after a reload.
//
// Invariants:
//   - No sample leaves the browser: the library reads and writes only
//     the page's storage; the coordinator sends it the demo shard and
//     receives nothing.
//   - A source is recorded in memory only after it is stored; every
//     change is reported to the library's owner (New's changed), which
//     shows it.
//   - Builds only for GOOS=js GOARCH=wasm.
package samples
