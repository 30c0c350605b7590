// Boots the page half of the Go program (web/app.wasm) with the Go
// runtime's wasm_exec.js: rendering and the student's input. The program
// starts the device half in a dedicated worker (web/worker.js) through
// flStartWorker, which also opens the device's websocket on the worker's
// behalf (see web/worker.js and docs/browser.md).
(function () {
  "use strict";
  performance.mark("fl-boot");

  // flStartWorker(url) starts the worker and relays its websockets: the
  // worker asks for a socket, sends and closes through a MessageChannel,
  // and receives the socket's events. When the page is hidden for good
  // (pagehide) every open socket that has heard from the server gets the
  // worker's farewell message (the device's leave), and every socket is
  // closed with 1000, here on the page's thread, before the browser ends
  // the worker.
  window.flStartWorker = function (url) {
    const worker = new Worker(url);
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
    worker.postMessage({relay: ch.port2}, [ch.port2]);
    return worker;
  };

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
