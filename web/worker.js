// The page's dedicated worker: boots the same Go program as the page
// (web/app.wasm) with the Go runtime's wasm_exec.js, both as the page's
// first message gives them: the module the page compiled (the program is
// downloaded once per page) and the loader's address. Seeing no document,
// the program runs the device half: training, the device runtime and its
// IndexedDB storage (wasm/worker.go). Messages with the page are described
// in docs/browser.md.
//
// The device's websocket is opened by the page, on the worker's behalf:
// this file replaces the worker's WebSocket with RelaySocket, which has
// the same interface (what wasm/socket uses of it) and
// relays every call and event over a MessageChannel to web/app.js. So the
// page, on its way out (pagehide), can itself send the device's leave
// message and close the socket with 1000: a worker is ended with its page
// and, on a busy machine, did not always get the chance.
"use strict";
(function () {
  let port = null;
  const early = []; // relay messages sent before the page's port arrived
  const sockets = new Map();
  let nextID = 1;
  const post = (m, transfer) => {
    if (port) port.postMessage(m, transfer || []);
    else early.push([m, transfer || []]);
  };
  const warn = (why, m) => console.warn("browserfl worker: relay message ignored (" + why + ")", m);

  class RelaySocket extends EventTarget {
    constructor(url, protocols) {
      super();
      this.url = String(url);
      if (!/^wss?:\/\//.test(this.url)) throw new DOMException("not a websocket URL: " + this.url, "SyntaxError");
      this.id = nextID++;
      this.protocol = "";
      this.binaryType = "blob";
      this.readyState = 0;
      sockets.set(this.id, this);
      const list = protocols === undefined ? [] : (Array.isArray(protocols) ? protocols : [protocols]).map(String);
      post({op: "open", id: this.id, url: this.url, protocols: list});
    }
    // send and close behave as WebSocket's do (the Go library relies on
    // it): send throws only while connecting and drops data once closing;
    // close throws on a code a script may not send (only 1000 and
    // 3000-4999) and does nothing once closing.
    send(data) {
      if (this.readyState === 0) throw new DOMException("the websocket is still connecting", "InvalidStateError");
      if (this.readyState !== 1) return;
      if (typeof data === "string") {
        post({op: "send", id: this.id, data: data});
        return;
      }
      const view = ArrayBuffer.isView(data) ? data : new Uint8Array(data);
      const buf = view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength);
      post({op: "send", id: this.id, data: buf}, [buf]);
    }
    close(code, reason) {
      if (code !== undefined && code !== 1000 && !(code >= 3000 && code <= 4999)) {
        throw new DOMException("close code " + code + " may not be sent by a script", "InvalidAccessError");
      }
      if (reason !== undefined && new TextEncoder().encode(String(reason)).length > 123) {
        throw new DOMException("close reason longer than 123 bytes", "SyntaxError");
      }
      if (this.readyState >= 2) return;
      this.readyState = 2;
      post({op: "close", id: this.id, code: code === undefined ? 1000 : Number(code), reason: reason === undefined ? "" : String(reason)});
    }
  }
  RelaySocket.CONNECTING = 0;
  RelaySocket.OPEN = 1;
  RelaySocket.CLOSING = 2;
  RelaySocket.CLOSED = 3;

  // Events from the page's real socket.
  const onRelay = (e) => {
    const m = e.data;
    if (!m || typeof m.op !== "string" || !Number.isInteger(m.id)) return warn("malformed", m);
    const s = sockets.get(m.id);
    if (!s) return; // a socket already closed
    switch (m.op) {
      case "open":
        s.readyState = 1;
        s.protocol = typeof m.protocol === "string" ? m.protocol : "";
        s.dispatchEvent(new Event("open"));
        break;
      case "message":
        if (typeof m.data !== "string" && !(m.data instanceof ArrayBuffer)) return warn("message data", m);
        if (s.readyState !== 1) return; // as a browser's: none once closing
        s.dispatchEvent(new MessageEvent("message", {data: m.data}));
        break;
      case "error":
        s.dispatchEvent(new Event("error"));
        break;
      case "close":
        s.readyState = 3;
        sockets.delete(m.id);
        s.dispatchEvent(new CloseEvent("close", {
          code: Number.isInteger(m.code) ? m.code : 1006,
          reason: typeof m.reason === "string" ? m.reason : "",
          wasClean: m.wasClean === true,
        }));
        break;
      default:
        warn("unknown op", m);
    }
  };

  // The page's first message carries the relay's port, the compiled
  // program and the loader's address; nothing else sees it.
  self.addEventListener("message", (e) => {
    if (port === null && e.data && e.data.relay instanceof MessagePort) {
      e.stopImmediatePropagation();
      port = e.data.relay;
      port.onmessage = onRelay;
      for (const [m, t] of early.splice(0)) port.postMessage(m, t);
      start(e.data.module, e.data.exec);
    }
  });
  self.WebSocket = RelaySocket;
  // flFarewell(text) gives the page the text message to send on each
  // socket it closes on its way out (the device's leave message, encoded
  // by the Go program).
  self.flFarewell = (text) => post({op: "farewell", data: String(text)});
})();

// start runs the program: mod is the WebAssembly.Module the page
// compiled, exec the address of the Go runtime's loader (same origin).
// A failure is rethrown outside the promise, so the page's Worker object
// gets an "error" event and says so.
function start(mod, exec) {
  const fail = (err) => { setTimeout(() => { throw new Error("could not start the device: " + err); }); };
  try {
    if (!(mod instanceof WebAssembly.Module)) throw new Error("the page sent no compiled program");
    if (typeof exec !== "string" || new URL(exec).origin !== self.location.origin) throw new Error("loader address " + exec);
    importScripts(exec);
  } catch (err) {
    fail(err);
    return;
  }
  const go = new Go();
  WebAssembly.instantiate(mod, go.importObject).then((instance) => go.run(instance)).catch(fail);
}
