//go:build js && wasm

// Package yield wraps the browser device's algorithm half (optim.Device)
// for the page's Web Worker: a round's work is split into separate
// browser tasks, the worker's event loop getting a turn right before and
// right after the local computation (jsw.Yield), and the page's samples
// are used at most once (single pass: Prepare refuses a release that
// would reuse one, ErrDataUsed). It is given to the device runtime as
// device.Config.NewDevice (Wrap).
//
// Invariants:
//   - The wrapper forwards every optional interface the runtime asks of
//     a device half (optim.LocalDataSetter, optim.Accountant,
//     optim.GridReleaser) to the wrapped one; it never changes what is
//     released.
//   - Builds only for GOOS=js GOARCH=wasm.
package yield
