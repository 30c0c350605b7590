// Package web holds the page's static assets (style.css, app.js, the
// worker's loader worker.js) and,
// after `make wasm`, the device build (app.wasm), the Go runtime's
// loader (wasm_exec.js, copied from $(go env GOROOT)/lib/wasm) and
// their compressed forms (precompressed/). The coordinator embeds this
// directory, app.wasm only as its compressed forms, and serves it under
// /web/, with index.html at /.
package web
