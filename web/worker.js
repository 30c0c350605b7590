// The page's dedicated worker: boots the same Go program as the page
// (web/app.wasm) with the Go runtime's wasm_exec.js. Seeing no document,
// the program runs the device half: training, the device runtime, its
// IndexedDB storage and its websocket (wasm/worker.go). Messages with the
// page are described in docs/browser.md.
"use strict";
importScripts("wasm_exec.js");
(function () {
  const go = new Go();
  const url = "app.wasm";
  const start = (result) => go.run(result.instance);
  // A failure is rethrown outside the promise, so the page's Worker
  // object gets an "error" event and says so.
  const fail = (err) => { setTimeout(() => { throw new Error("could not start the device: " + err); }); };
  if (WebAssembly.instantiateStreaming) {
    WebAssembly.instantiateStreaming(fetch(url), go.importObject).then(start).catch(fail);
  } else {
    fetch(url).then((r) => r.arrayBuffer())
      .then((b) => WebAssembly.instantiate(b, go.importObject)).then(start).catch(fail);
  }
})();
