// Boots the Go device (web/app.wasm) with the Go runtime's wasm_exec.js.
// Everything else, including the UI, is Go.
(function () {
  "use strict";
  performance.mark("fl-boot");
  const go = new Go();
  const url = "/web/app.wasm";
  const start = (result) => {
    performance.mark("fl-wasm-instantiated");
    return go.run(result.instance);
  };
  const fail = (err) => {
    console.error("browserfl: could not start", err);
    const el = document.getElementById("vugu_mount_point");
    if (el) el.textContent = "This page could not start its WebAssembly program: " + err;
  };
  if (WebAssembly.instantiateStreaming) {
    WebAssembly.instantiateStreaming(fetch(url), go.importObject).then(start).catch(fail);
  } else {
    fetch(url).then((r) => r.arrayBuffer())
      .then((b) => WebAssembly.instantiate(b, go.importObject)).then(start).catch(fail);
  }
})();
