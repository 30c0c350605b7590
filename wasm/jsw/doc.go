// Package jsw is the small typed wrapper around syscall/js that the
// browser device uses: promises awaited with a context, byte copies
// between Go and typed arrays, fetch, DOM lookups, event listeners with
// explicit release, and the performance clock.
//
// It and wasm/socket (the page's websocket) are the packages of the
// project that import syscall/js (vugu's own js package aside), and it
// builds only for GOOS=js GOARCH=wasm.
//
// Invariants:
//   - Nothing here panics on a value that came from the page: a missing
//     element, a rejected promise or a thrown exception is an error.
//   - Await must not be called from inside a js.Func callback (the Go
//     runtime cannot resume while JavaScript waits on it); callers start a
//     goroutine first. Every function that blocks says so and takes a
//     context.
//   - Every js.Func created here is released by the returned release
//     function or once its promise settles.
package jsw
