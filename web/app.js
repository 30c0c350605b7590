// Boots the page half of the Go program (web/app.wasm) with the Go
// runtime's wasm_exec.js: rendering and the student's input. The program
// starts the device half in a dedicated worker (web/worker.js) through
// flStartWorker, which also opens the device's websocket on the worker's
// behalf (see web/worker.js and docs/browser.md).
//
// The program is downloaded and compiled once per page: the worker gets
// the compiled module from here (flStartWorker), not from the network.
// The addresses come from this script's data- attributes, which the
// coordinator rewrites to content-hashed names cached for good
// (docs/coordinator.md, "The page's assets"). While it downloads, the
// page says how far it is, in words.
(function () {
  "use strict";
  performance.mark("fl-boot");
  const boot = (document.currentScript && document.currentScript.dataset) || {};
  const wasmURL = boot.wasm || "/web/app.wasm";
  const execURL = boot.exec || "/web/wasm_exec.js";
  let wasmModule = null; // set before the program runs, so before flStartWorker

  // flStartWorker(url) starts the worker and relays its websockets: the
  // worker asks for a socket, sends and closes through a MessageChannel,
  // and receives the socket's events. When the page is hidden for good
  // (pagehide) every open socket that has heard from the server gets the
  // worker's farewell message (the device's leave), and every socket is
  // closed with 1000, here on the page's thread, before the browser ends
  // the worker.
  window.flStartWorker = function (url) {
    const worker = new Worker(boot.worker || url);
    const ch = new MessageChannel();
    const port = ch.port1;
    const sockets = new Map(); // id -> {ws, heard, closing}
    let farewell = null;
    let hidden = false;
    const warn = (why, m) => console.warn("browserfl: relay message ignored (" + why + ")", m);
    const closed = (id, code) => port.postMessage({op: "close", id: id, code: code, reason: "", wasClean: false});
    port.onmessage = (e) => {
      const m = e.data;
      if (!m || typeof m.op !== "string") return warn("malformed", m);
      if (m.op === "farewell") {
        if (typeof m.data !== "string" || m.data.length > 4096) return warn("farewell", m);
        farewell = m.data;
        return;
      }
      if (!Number.isInteger(m.id) || m.id <= 0) return warn("socket id", m);
      const s = sockets.get(m.id);
      switch (m.op) {
        case "open": {
          if (s || typeof m.url !== "string" || !/^wss?:\/\//.test(m.url) ||
              !Array.isArray(m.protocols) || !m.protocols.every((p) => typeof p === "string")) return warn("open", m);
          if (hidden) return closed(m.id, 1006);
          let ws;
          try {
            ws = new WebSocket(m.url, m.protocols);
          } catch (err) {
            console.warn("browserfl: websocket", err);
            port.postMessage({op: "error", id: m.id});
            return closed(m.id, 1006);
          }
          ws.binaryType = "arraybuffer";
          const rec = {ws: ws, heard: false, closing: false};
          sockets.set(m.id, rec);
          ws.onopen = () => port.postMessage({op: "open", id: m.id, protocol: ws.protocol});
          ws.onmessage = (ev) => {
            rec.heard = true;
            if (typeof ev.data === "string") port.postMessage({op: "message", id: m.id, data: ev.data});
            else port.postMessage({op: "message", id: m.id, data: ev.data}, [ev.data]);
          };
          ws.onerror = () => port.postMessage({op: "error", id: m.id});
          ws.onclose = (ev) => {
            sockets.delete(m.id);
            port.postMessage({op: "close", id: m.id, code: ev.code, reason: ev.reason, wasClean: ev.wasClean});
          };
          return;
        }
        case "send":
          if (!s) return;
          if (typeof m.data !== "string" && !(m.data instanceof ArrayBuffer)) return warn("send", m);
          // Nothing goes out after the page closed the socket (after
          // its farewell, in particular).
          if (s.closing || s.ws.readyState !== WebSocket.OPEN) return;
          s.ws.send(m.data);
          return;
        case "close":
          if (!s || s.closing) return;
          s.closing = true;
          try {
            s.ws.close(m.code, m.reason);
          } catch (err) {
            console.warn("browserfl: websocket close", err);
            s.ws.close(1000);
          }
          return;
        default:
          warn("unknown op", m);
      }
    };
    window.addEventListener("pagehide", () => {
      hidden = true;
      for (const s of sockets.values()) {
        if (s.closing) continue;
        s.closing = true;
        if (s.ws.readyState === WebSocket.OPEN && s.heard && farewell !== null) s.ws.send(farewell);
        s.ws.close(1000, "page closed");
      }
    });
    // The first message: the relay's port, the compiled program and the
    // Go runtime's loader (web/worker.js).
    worker.postMessage({relay: ch.port2, module: wasmModule, exec: new URL(execURL, location.href).href}, [ch.port2]);
    return worker;
  };

  // say puts the loading words in the page (until the program renders).
  let downloading = true; // until the program is compiled
  const say = (text) => {
    const el = document.querySelector("#vugu_mount_point .boot");
    if (el) el.textContent = text;
  };
  // progress says how much of resp's body has arrived, reading a copy of
  // it (the response itself goes to the compiler as it is, so the browser
  // can reuse its compiled code on a reload): a percentage of the file's
  // size (X-Decoded-Length, set by the coordinator; Content-Length counts
  // compressed bytes) or megabytes.
  const progress = (resp) => {
    if (!resp.ok) throw new Error("HTTP " + resp.status + " for " + resp.url);
    if (!resp.body) return resp;
    const total = Number(resp.headers.get("X-Decoded-Length")) ||
      (resp.headers.get("Content-Encoding") ? 0 : Number(resp.headers.get("Content-Length"))) || 0;
    const reader = resp.clone().body.getReader();
    let got = 0;
    const count = () => reader.read().then(({done, value}) => {
      if (done) return;
      got += value.byteLength;
      if (downloading) say(total > 0 ? "Downloading the program: " + Math.min(99, Math.floor(100 * got / total)) + "%"
        : "Downloading the program: " + (got / 1e6).toFixed(1) + " MB");
      return count();
    });
    count().catch(() => {}); // the compiler reports a failed download
    return resp;
  };
  const go = new Go();
  const fail = (err) => {
    console.error("browserfl: could not start", err);
    const el = document.getElementById("vugu_mount_point");
    if (el) el.textContent = "This page could not start its WebAssembly program: " + err;
  };
  say("Downloading the program…");
  const fetched = fetch(wasmURL).then(progress);
  const compiled = WebAssembly.compileStreaming ? WebAssembly.compileStreaming(fetched)
    : fetched.then((r) => r.arrayBuffer()).then((b) => WebAssembly.compile(b));
  compiled.then((mod) => {
    wasmModule = mod;
    downloading = false;
    say("Starting the program…");
    return WebAssembly.instantiate(mod, go.importObject);
  }).then((instance) => {
    performance.mark("fl-wasm-instantiated");
    return go.run(instance);
  }).catch(fail);
})();
