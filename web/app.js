// Boots the page half of the Go program (web/app.wasm) with the Go
// runtime's wasm_exec.js: rendering and the student's input. The program
// starts the device half in a dedicated worker (web/worker.js).
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
