//go:build js && wasm

// Command wasm is the browser device: the page that turns a visitor's
// browser into a federated-learning device. Built with GOOS=js GOARCH=wasm
// (make wasm writes web/app.wasm), it runs twice per page:
//
//   - on the page's main thread (web/app.js; page.go) it renders the vugu
//     components of wasm/ui, handles the drawing canvases and forwards
//     the student's actions to the worker;
//   - in the page's dedicated Web Worker (web/worker.js; worker.go,
//     app.go and the rest) it holds the view state, keeps the samples
//     (wasm/samples) and the device's state in IndexedDB (wasm/idb),
//     charges the owner's ledger (wasm/owner), and runs the
//     platform-independent device runtime (its device half wrapped by
//     wasm/yield) over the browser's WebSocket (wasm/socket; its socket
//     is opened by the page on the worker's behalf, so the page can say
//     goodbye for the device when it closes: web/app.js).
//
// The two halves talk through wasm/bridge's messages: the worker sends
// patches of the state, the page sends actions (docs/browser.md lists
// them).
//
// Where vugu cannot do something the page uses syscall/js through
// wasm/jsw: drawing on a canvas (wasm/canvas; vugu would serialise every
// pointermove event into a JSON summary and re-render), reading picked
// files and the canvas pixels (typed arrays), IndexedDB (promise and
// event based APIs), the worker's messages and performance marks.
//
// Invariants:
//   - No sample leaves the browser: samples are read from the page's
//     storage and passed only to the device runtime's algorithm half,
//     whose outgoing payload is a clipped (and, in untrusted mode, noised)
//     vector. Between page and worker they travel only as a drawing's
//     pixels or the student's picked files.
//   - The page's main thread runs no training, storage or network work.
//   - Every blocking browser call runs on its own goroutine, never inside
//     a JavaScript callback; the page's state is changed only under the
//     vugu event lock, the worker's only through app.update.
package main
