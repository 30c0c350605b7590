//go:build js && wasm

// Package canvas is the page's drawing surfaces, on the main thread:
// the 28x28 pads the student draws on (a sample to add, a drawing to ask
// the model about) and the two pictures of "what your phone sent". It
// uses syscall/js directly (through wasm/jsw), not vugu: vugu would
// serialise every pointermove event into a JSON summary and re-render,
// and setting a canvas's size on each render would reset its bitmap
// (docs/browser.md, "Where vugu is not used, and why").
//
// Invariants:
//   - A pad's pixels leave it only as a sample's features (Features,
//     local.FromRGBA), read when the student adds or tries a drawing.
//   - Pointer listeners are released when a pad is bound to another
//     element or to none (vugu re-creates elements when screens change).
//   - Builds only for GOOS=js GOARCH=wasm.
package canvas
