//go:build js && wasm

// Command wasm is the browser device: the page that turns a visitor's
// browser into a federated-learning device. Built with GOOS=js GOARCH=wasm
// (make wasm writes web/app.wasm); it renders the vugu components of
// wasm/ui, keeps its samples and its state in IndexedDB (wasm/idb), and
// runs the platform-independent device runtime over github.com/coder/websocket.
//
// Where vugu cannot do something the page uses syscall/js through
// wasm/jsw: drawing on a canvas (vugu would serialise every pointermove
// event into a JSON summary and re-render), reading picked files and the
// canvas pixels (typed arrays), IndexedDB (promise and event based APIs)
// and performance marks.
//
// Invariants:
//   - No sample leaves the page: samples are read from the page's storage
//     and passed only to the device runtime's algorithm half, whose
//     outgoing payload is a clipped (and, in untrusted mode, noised)
//     vector.
//   - Every blocking browser call runs on its own goroutine, never inside
//     a JavaScript callback; the UI state is changed only under the vugu
//     event lock.
package main
