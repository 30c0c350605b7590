//go:build js && wasm

// Package warm is the browser device's JIT warm-up: it runs the device
// code (wasm/devstep) on synthetic data in small pieces, a browser turn
// after each, while the person reads the consent screen, so that the
// first round of a session does not pay for the browser's optimising
// compiler (Up).
//
// Invariants:
//   - Nothing of the warm-up is stored or sent; its data are synthetic.
//   - No piece blocks the worker for long (a turn after each).
//   - Builds only for GOOS=js GOARCH=wasm.
package warm
