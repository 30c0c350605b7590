// Package web holds the page's static assets (style.css, app.js, the
// worker's loader worker.js) and,
// after `make wasm`, the device build (app.wasm) and the Go runtime's
// loader (wasm_exec.js, copied from $(go env GOROOT)/lib/wasm). The
// coordinator embeds this directory and serves it under /web/, with
// index.html at /.
package web
