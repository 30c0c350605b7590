// Package wire is the coordinator <-> device protocol, version 1: the typed
// control messages (JSON in websocket text frames) and the binary frame
// codec for vectors (round assignments and updates in websocket binary
// frames). Both sides import this package, so every message type and field
// name is defined exactly once. See docs/protocol.md for the conversation.
//
// Invariants:
//   - Decoding never panics, whatever the input: every length, dimension
//     and kind is checked against Limits before anything is allocated or
//     read, and a violation is an error wrapping ErrBadFrame.
//   - A decoded round assignment has finite coordinates only (NaN and Inf
//     are rejected) and exactly Limits.Dim of them when Limits.Dim > 0.
//   - Update payloads are opaque here (their encoding belongs to
//     shared/mechanism); this package only bounds their size.
//   - Round ids are 1-based; 0 is never a valid round id on the wire.
//
// The package is pure Go with no I/O so it compiles for js/wasm.
package wire
