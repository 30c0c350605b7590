// The dashboard's script (a file: the CSP allows no inline script).
//
// Three views, chosen from the status's state: the lobby (how to join,
// big, and who joined), training (progress, charts, people, privacy) and
// the end-of-session summary. Fields a coordinator does not send yet
// (state, people, teacher) are optional: without them the view follows
// the committed rounds and the people counts come from devices.
"use strict";
const $ = id => document.getElementById(id);
const params = new URLSearchParams(location.search);
let code = params.get("code");
// ?session=ID shows a finished session (read-only); the API answers for it.
const viewSession = params.get("session") || "";

// The teacher's secret comes in ?teacher= once; it is kept for this tab
// only and taken out of the address bar at once, so that the projector
// never shows it.
let teacherSecret = params.get("teacher") || sessionStorage.getItem("bfl-teacher") || "";
if (params.has("teacher")) {
  sessionStorage.setItem("bfl-teacher", teacherSecret);
  params.delete("teacher");
  const q = params.toString();
  history.replaceState(null, "", location.pathname + (q ? "?" + q : "") + location.hash);
}

let rounds = [];
let qrFor = "";
// Text boxes drawn on each canvas (canvas coordinates), for the layout
// test: every label must lie inside its canvas.
window.dashTextBoxes = {};

function headers(extra) {
  const h = Object.assign({"X-Join-Code": code || ""}, extra || {});
  if (teacherSecret) h["X-Teacher-Secret"] = teacherSecret;
  return h;
}
async function getJSON(path) {
  if (viewSession) path += (path.includes("?") ? "&" : "?") + "session=" + encodeURIComponent(viewSession);
  const r = await fetch(path, {cache: "no-store", headers: headers()});
  if (!r.ok) {
    const e = new Error(path + ": " + r.status); e.status = r.status;
    e.teacher = (await r.text()).includes("teacher secret");
    throw e;
  }
  return r.json();
}
function fmtBytes(n) {
  const u = ["B", "KB", "MB", "GB", "TB"]; let i = 0;
  while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
  return n.toFixed(i ? 1 : 0) + " " + u[i];
}
function fmtDuration(sec) {
  sec = Math.max(0, Math.floor(sec));
  const h = Math.floor(sec / 3600), m = Math.floor(sec % 3600 / 60), s = sec % 60;
  return h ? h + " h " + String(m).padStart(2, "0") + " min" : m ? m + " min " + String(s).padStart(2, "0") + " s" : s + " s";
}
function pct(x) { return (100 * x).toFixed(1) + " %"; }
// guessPct is the accuracy of a blind guess among k classes, in the
// fewest digits that say it ("10 %", "25 %", "33.3 %").
function guessPct(k) {
  const p = 100 / k;
  return (Number.isInteger(p) ? String(p) : p.toFixed(1)) + " %";
}
// timeLeft is the lesson's time left, in seconds, from the measured pace
// of its last rounds: the median gap between the starts of the last (at
// most) 21 committed rounds (a pause or a slow round moves a median
// little), times the rounds left; null before 3 rounds are committed or
// when none are left.
function timeLeft(rs, left) {
  const done = rs.filter(r => r.started).slice(-21);
  if (done.length < 3 || left <= 0) return null;
  const gaps = [];
  for (let i = 1; i < done.length; i++) gaps.push((Date.parse(done[i].started) - Date.parse(done[i - 1].started)) / 1000);
  gaps.sort((a, b) => a - b);
  const mid = gaps.length >> 1, med = gaps.length % 2 ? gaps[mid] : (gaps[mid - 1] + gaps[mid]) / 2;
  return med > 0 ? med * left : null;
}
// timeLeftFor is timeLeft for status s and the rounds rs: null while
// the lesson cannot move (paused, or between rounds with fewer devices
// ready than a round needs: the warning says so), whose pace says
// nothing of the time left.
function timeLeftFor(s, rs) {
  if (s.state === "paused" || (!s.round && s.devices.eligible < s.min_devices)) return null;
  return timeLeft(rs, s.session.rounds - s.committed);
}
function table(el, rows) {
  el.replaceChildren(...rows.map(([k, v]) => {
    const tr = document.createElement("tr");
    const a = document.createElement("td"); a.textContent = k;
    const b = document.createElement("td"); b.textContent = v;
    tr.append(a, b); return tr;
  }));
}

// canvasCtx sizes a canvas to its box and returns a context whose text
// calls are recorded in dashTextBoxes.
function canvasCtx(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, canvas.clientWidth), h = Math.max(1, canvas.clientHeight);
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
  }
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const px = Math.round(Math.min(18, Math.max(11, h / 16)));
  g.font = px + "px system-ui, sans-serif";
  g.textBaseline = "alphabetic";
  const boxes = window.dashTextBoxes[canvas.id] = [];
  // text draws s with its left edge at x, baseline y, moved inside the
  // canvas if it would stick out.
  const text = (s, x, y, kind) => {
    const fpx = parseFloat(g.font) || px;
    const tw = g.measureText(s).width;
    x = Math.max(0, Math.min(x, w - tw));
    y = Math.max(fpx, Math.min(y, h - 2));
    g.fillText(s, x, y);
    boxes.push({text: s, x, y: y - fpx, w: tw, h: fpx + 2, kind: kind || ""});
  };
  return {g, w, h, px, text};
}

// niceTicks returns about n tick values covering [lo, hi] at a round
// step (1, 2 or 5 times a power of ten) and the decimals that print
// every tick differently.
function niceTicks(lo, hi, n) {
  if (!(hi - lo > 1e-12)) { const pad = Math.abs(lo) * 0.05 || 0.5; lo -= pad; hi += pad; }
  const raw = (hi - lo) / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(k => k * p).find(k => k >= raw * 0.999);
  const a = Math.floor(lo / step + 1e-9) * step, b = Math.ceil(hi / step - 1e-9) * step;
  const ticks = [];
  for (let i = 0; a + i * step <= b + step / 2; i++) ticks.push(a + i * step);
  return {ticks, decimals: Math.max(0, -Math.floor(Math.log10(step) + 1e-9))};
}

// emptyNote draws a sentence in the middle of an empty chart: no chart is
// an empty box.
function emptyNote(canvas, sentence) {
  const {g, w, h, px, text} = canvasCtx(canvas);
  const fpx = Math.round(Math.min(26, Math.max(13, px * 1.25)));
  g.font = fpx + "px system-ui, sans-serif";
  g.fillStyle = "#8a97a6";
  const lines = [];
  let cur = "";
  for (const word of sentence.split(" ")) {
    const t = cur ? cur + " " + word : word;
    if (cur && g.measureText(t).width > w - 24) { lines.push(cur); cur = word; } else cur = t;
  }
  if (cur) lines.push(cur);
  const lh = fpx * 1.3, top = Math.max(fpx, (h - lines.length * lh) / 2 + fpx);
  lines.forEach((l, i) => text(l, (w - g.measureText(l).width) / 2, top + i * lh, "note"));
}

// line draws pts ([x, y]) with y ticks at distinct round values: fixed
// ticks when ymin and ymax are given, else niceTicks of the data.
function line(canvas, pts, color, yfmt, ymin, ymax, empty) {
  if (pts.length === 0) { emptyNote(canvas, empty || "Nothing to draw yet."); return; }
  const {g, w, h, px, text} = canvasCtx(canvas);
  g.fillStyle = "#8a97a6";
  const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1);
  let ticks, decimals = 0;
  if (ymin != null && ymax != null) ticks = [0, 1, 2, 3, 4].map(i => ymin + (ymax - ymin) * i / 4);
  else ({ticks, decimals} = niceTicks(Math.min(...ys), Math.max(...ys), 4));
  const y0 = ticks[0], y1 = ticks[ticks.length - 1];
  const labels = ticks.map(y => yfmt(y, decimals));
  const L = Math.max(...labels.map(l => g.measureText(l).width)) + 8, R = 8, T = px / 2 + 2, B = px + 8;
  const X = x => L + (x - x0) / (x1 - x0) * (w - L - R);
  const Y = y => T + (1 - (y - y0) / (y1 - y0)) * (h - T - B);
  g.strokeStyle = "#263040"; g.lineWidth = 1;
  ticks.forEach((y, i) => {
    g.beginPath(); g.moveTo(L, Y(y)); g.lineTo(w - R, Y(y)); g.stroke();
    text(labels[i], 2, Y(y) + px / 3, "y");
  });
  text("round " + x0, L, h - 3);
  const last = String(x1);
  text(last, w - R - g.measureText(last).width, h - 3);
  g.strokeStyle = color; g.lineWidth = 2.5; g.beginPath();
  pts.forEach((p, i) => i ? g.lineTo(X(p[0]), Y(p[1])) : g.moveTo(X(p[0]), Y(p[1])));
  g.stroke();
  if (pts.length === 1) { g.fillStyle = color; g.beginPath(); g.arc(X(pts[0][0]), Y(pts[0][1]), 4, 0, 7); g.fill(); }
}

function timeline(canvas, recs) {
  const last = recs.slice(-60);
  if (!last.length) { emptyNote(canvas, "Each round appears here as a bar once it is done: the first after round 1."); return; }
  const {g, w, h, px, text} = canvasCtx(canvas);
  g.fillStyle = "#8a97a6";
  const maxLat = Math.max(...last.map(r => r.latency_ms), 1);
  const top = px + 6, bottom = px + 8;
  const bw = (w - 10) / last.length;
  last.forEach((r, i) => {
    const bh = (h - top - bottom) * r.latency_ms / maxLat;
    const frac = r.cohort ? r.included / r.cohort : 0;
    g.fillStyle = frac >= 1 ? "#81c784" : frac >= .5 ? "#ffb74d" : "#e57373";
    g.fillRect(5 + i * bw, h - bottom - bh, Math.max(1, bw - 2), bh);
  });
  g.fillStyle = "#8a97a6";
  text("longest " + (maxLat / 1000).toFixed(2) + " s", 5, px);
  text("round " + last[0].t, 5, h - 3);
  const lt = "round " + last[last.length - 1].t;
  text(lt, w - 5 - g.measureText(lt).width, h - 3);
}

// The class model's pictures: the public model (/api/model.json, what
// every device receives) drawn as one 28x28 tile per class (logistic
// models: the class's weights) or per strongest first-layer unit (MLP).
let model = null, modelRound = -1, modelBusy = false, modelAt = 0, modelMissing = false;
// What was drawn, for the tests: the round and one tile summary each.
window.dashModel = {round: 0, tiles: []};

async function pollModel(s) {
  if (viewSession || modelBusy || s.committed <= 0 || s.committed === modelRound) return;
  if (Date.now() - modelAt < 2000 && modelRound > 0) return;
  modelBusy = true; modelAt = Date.now();
  try {
    model = await getJSON("/api/model.json");
    modelRound = model.round;
    drawModel();
  } catch (e) {
    // 404 before the first commit: the note stays; a coordinator
    // without the model says so.
    modelMissing = s.committed > 0;
  } finally { modelBusy = false; }
}

// modelTiles returns the pictures to draw ({name, w: weights of the
// side x side pixels}) and the sentence under the title, or a sentence
// alone when the model is not drawn.
function modelTiles(m) {
  if (m.session && m.session.task) {
    return {note: "This model reads the rows the class typed or picked (words and numbers), not pictures, so its weights are not drawn as pictures."};
  }
  if (m.session && m.session.transform) {
    return {note: "This model reads features computed from each picture (patterns at several sizes and angles), not its pixels, so its weights are not drawn as pictures."};
  }
  const F = m.features, side = Math.round(Math.sqrt(F));
  if (side * side !== F) return {note: "This model's inputs are not a square picture, so its weights are not drawn."};
  const W = m.weights;
  if (m.model === "logreg" || m.model === "logreg-unit") {
    return {tiles: m.labels.map((name, c) => ({name, w: W.slice(c * (F + 1), c * (F + 1) + F)})),
      note: "Orange: a bright pixel here points to this answer. Blue: it points away."};
  }
  if (m.model === "mlp" && m.hidden > 0) {
    const H = m.hidden, units = [];
    for (let j = 0; j < H; j++) {
      const w = W.slice(j * F, (j + 1) * F);
      units.push({j, w, n: w.reduce((a, v) => a + v * v, 0)});
    }
    units.sort((a, b) => b.n - a.n);
    return {tiles: units.slice(0, Math.min(10, H)).map(u => ({name: "detector " + (u.j + 1), w: u.w})),
      note: "The model's first step has " + H + " pattern detectors; these are the " + Math.min(10, H) +
        " strongest. Each looks for a pattern; none stands for one answer alone."};
  }
  return {note: "This model's weights are not drawn."};
}

// drawModel draws the model's tiles, colours on one scale for all tiles
// (the 99th percentile of |w|): orange positive, blue negative.
function drawModel() {
  if (!model) return;
  drawModelIn($("sum-tiles"), $("sum-pics-note"));
  drawModelIn($("tiles"), $("pics-note"));
}

// drawModelIn draws the model's tiles into box, its sentence into noteEl.
function drawModelIn(box, noteEl) {
  const {tiles, note} = modelTiles(model);
  noteEl.textContent = note;
  if (!tiles) { box.replaceChildren(); window.dashModel = {round: model.round, tiles: []}; return; }
  const side = Math.round(Math.sqrt(model.features));
  const all = tiles.flatMap(t => t.w.map(Math.abs)).sort((a, b) => a - b);
  const scale = all[Math.floor(0.99 * (all.length - 1))] || 1e-12;
  if (box.children.length !== tiles.length) {
    box.replaceChildren(...tiles.map(() => {
      const d = document.createElement("div"); d.className = "tile";
      const c = document.createElement("canvas"); c.width = side; c.height = side;
      const l = document.createElement("div"); l.className = "word";
      d.append(c, l); return d;
    }));
  }
  const drawn = [];
  tiles.forEach((t, i) => {
    const d = box.children[i], c = d.firstChild, g = c.getContext("2d");
    if (c.width !== side) { c.width = side; c.height = side; }
    const img = g.createImageData(side, side);
    let sum = 0;
    t.w.forEach((v, k) => {
      const a = Math.max(-1, Math.min(1, v / scale));
      // Dark grey (24,24,24) at 0, orange (255,138,80) at +1, blue
      // (79,195,247) at -1: red above blue exactly when w > 0.
      const [r, gr, b] = a >= 0 ? [255, 138, 80] : [79, 195, 247], f = Math.abs(a);
      img.data[4 * k] = 24 + f * (r - 24); img.data[4 * k + 1] = 24 + f * (gr - 24); img.data[4 * k + 2] = 24 + f * (b - 24);
      img.data[4 * k + 3] = 255;
      sum += v * (k + 1);
    });
    g.putImageData(img, 0, 0);
    d.lastChild.textContent = t.name;
    d.title = t.name;
    drawn.push({name: t.name, sum});
  });
  window.dashModel = {round: model.round, tiles: drawn};
  fitTiles(box);
}

// fitTiles sizes the tiles to fill their box: the column count that
// gives the largest tiles.
function fitTiles(box) {
  if (!box) { fitTiles($("tiles")); fitTiles($("sum-tiles")); return; }
  const n = box.children.length;
  if (!n || box.clientWidth === 0) return;
  const W = box.clientWidth, H = box.clientHeight, gap = 8;
  const word = box.firstChild.lastChild.offsetHeight || 18;
  let best = 0, cols = 1;
  for (let c = 1; c <= n; c++) {
    const rows = Math.ceil(n / c);
    const size = Math.floor(Math.min((W - gap * (c - 1)) / c, (H - gap * (rows - 1)) / rows - word - 2));
    if (size > best) { best = size; cols = c; }
  }
  box.style.setProperty("--tile", Math.max(8, best) + "px");
  box.style.setProperty("--cols", cols);
}

// modelNote says why no picture is shown yet.
function modelNote(s) {
  if (viewSession) return "The pictures are drawn during the lesson only.";
  if (s.committed > 0) return modelMissing ? "The class model cannot be read from the coordinator just now." : "Loading the class model…";
  return "The class model's pictures appear after round 1.";
}

// people returns the counts and the nickname list: from status.people
// when the coordinator sends it, else the device counts alone.
function people(s) {
  const d = s.devices || {};
  if (Array.isArray(s.people)) {
    const c = {lobby: 0, active: 0, stuck: 0, left: 0};
    for (const p of s.people) {
      if (p.state === "gone" || p.state === "removed") c.left++; else if (p.state in c) c[p.state]++;
    }
    return {counts: c, list: s.people};
  }
  const active = Math.max(0, (d.connected || 0) - (d.left || 0) - (d.stuck || 0));
  return {counts: {lobby: null, active, stuck: d.stuck || 0, left: d.left || 0}, list: null};
}
// Stuck devices first: the ones a teacher may have to walk over to (a
// class of 30 on a projector must not hide them below the fold).
const stateOrder = {stuck: 0, active: 1, lobby: 2, left: 3, gone: 4, removed: 5};
const nameOf = p => p.nickname || "(no name)";
// removeButton asks the coordinator to remove p's device (teacher only);
// compact, it is a small ✕ (the class list keeps a whole class in view),
// named for screen readers and on hover.
function removeButton(p, compact) {
  const b = document.createElement("button");
  b.className = "remove danger"; b.textContent = compact ? "✕" : "Remove"; b.dataset.device = p.device;
  b.title = "Remove " + nameOf(p) + " from the session";
  b.setAttribute("aria-label", b.title);
  b.addEventListener("click", () => removeDevice(p));
  return b;
}
async function removeDevice(p) {
  if (!confirm("Remove " + nameOf(p) + " from the session? Their page stops and cannot join this session again.")) return;
  try {
    const r = await fetch("/api/teacher/remove?device=" + encodeURIComponent(p.device), {method: "POST", headers: headers()});
    if (!r.ok) throw new Error((await r.text()).trim() || String(r.status));
    $("msg").hidden = true;
  } catch (e) {
    $("msg").hidden = false; $("msg").textContent = "remove " + nameOf(p) + ": " + e.message;
  }
  poll();
}
// renderFlags lists, for the teacher, the devices whose updates were not
// used (rejected), with the reason in words and a Remove button.
function renderFlags(s) {
  const flagged = s.teacher && Array.isArray(s.people) ? s.people.filter(p => p.rejected > 0) : [];
  $("flags").hidden = flagged.length === 0;
  $("flaglist").replaceChildren(...flagged.map(p => {
    const li = document.createElement("li");
    li.className = p.state || "";
    const b = document.createElement("b"); b.textContent = nameOf(p);
    const n = p.rejected === 1 ? "1 update was" : p.rejected + " updates were";
    li.append(b, ": " + n + " not used. Last time: " + (p.rejection || "no reason given") + ". ");
    if (p.state === "removed") li.append("Removed.");
    else if (p.device) li.append(removeButton(p));
    return li;
  }));
}
function names(el, list, withRounds) {
  if (!list) {
    const li = document.createElement("li"); li.textContent = "nicknames appear here once devices join the lobby";
    el.replaceChildren(li); return;
  }
  const sorted = list.slice().sort((a, b) => (stateOrder[a.state] ?? 9) - (stateOrder[b.state] ?? 9) ||
    String(a.nickname).localeCompare(String(b.nickname)));
  el.replaceChildren(...sorted.map(p => {
    const li = document.createElement("li");
    li.className = (p.state || "") + (p.rejected > 0 ? " flagged" : "");
    li.textContent = nameOf(p);
    li.title = (p.state || "") + (p.why ? ": " + p.why : "");
    if (withRounds && p.rounds) { const sm = document.createElement("small"); sm.textContent = p.rounds; li.append(sm); }
    if (p.device && p.state !== "removed") li.append(removeButton(p, true));
    return li;
  }));
}
function counts(el, c) {
  const cells = [["lobby", c.lobby], ["active", c.active], ["stuck", c.stuck], ["left", c.left]];
  el.replaceChildren(...cells.map(([k, v]) => {
    const d = document.createElement("div");
    const n = document.createElement("div"); n.className = "n"; n.textContent = v == null ? "–" : v;
    const l = document.createElement("div"); l.className = "l"; l.textContent = k;
    d.append(n, l); return d;
  }));
}

// ending: the teacher's End reads ended at once and then commits the
// round it found open. Until that round is in, the page keeps the
// training view (no summary counts one round fewer) and offers no New.
function ending(s) { return s.state === "ended" && !!s.round; }

function viewOf(s) {
  if (s.state) return s.state === "ended" ? (ending(s) ? "training" : "summary") : s.state === "lobby" ? "lobby" : "training";
  if (s.finished) return "summary";
  return s.committed === 0 && !s.round ? "lobby" : "training";
}
const stateText = {lobby: "lobby: waiting for the teacher to start", running: "training", paused: "paused", ended: "session ended"};

function renderJoin(s) {
  const j = s.join || {};
  const urls = (j.urls && j.urls.length) ? j.urls : [location.origin + "/?code=" + encodeURIComponent(code)];
  // Host and query as two unbreakable pieces: a long URL wraps between
  // them, not inside the address.
  const shown = urls[0].replace(/^https?:\/\//, "");
  const cut = shown.indexOf("/");
  for (const id of ["url-big", "url-small"]) {
    $(id).replaceChildren(...[shown.slice(0, cut < 0 ? shown.length : cut), cut < 0 ? "" : shown.slice(cut)].map(t => {
      const sp = document.createElement("span"); sp.textContent = t; return sp;
    }));
  }
  $("alt-big").replaceChildren(...urls.slice(1).map(u => {
    const li = document.createElement("li"); li.textContent = "or " + u.replace(/^https?:\/\//, ""); return li;
  }));
  for (const id of ["code", "code-big", "code-small"]) $(id).textContent = code;
  renderLocalOnly(j, urls);
  if (j.loopback_only) return;
  if (qrFor !== urls[0]) {
    qrFor = urls[0];
    const src = "/api/join-qr.png?code=" + encodeURIComponent(code) + "&u=" + encodeURIComponent(urls[0]);
    $("qr-big").src = src; $("qr-small").src = src;
  }
}

// renderLocalOnly replaces the QR code, which no phone could use, by
// what to do when the coordinator listens on this computer only.
function renderLocalOnly(j, urls) {
  const local = !!j.loopback_only;
  $("localonly").hidden = !local; $("localonly-small").hidden = !local;
  $("qr-big").hidden = local; $("qr-small").hidden = local;
  $("join-head").textContent = local ? "Only this computer can join now" : "Join on your phone or laptop";
  if (!local) return;
  let port = "8080";
  try { port = new URL(urls[0]).port || port; } catch (e) { /* keep 8080 */ }
  const cmd = 'make run RUNFLAGS="-listen :' + port + '"';
  $("lo-cmd").textContent = cmd; $("lo-flag").textContent = $("lo-cmd-small").textContent = "-listen :" + port;
  const lan = j.lan_urls || [];
  if (lan.length) {
    $("lo-open").replaceChildren("Phones then open ", Object.assign(document.createElement("b"), {textContent: lan[0].replace(/^https?:\/\//, "")}),
      " (or scan the QR code shown then).");
  } else {
    $("lo-open").textContent = "This computer has no network address yet: connect it to the class's Wi-Fi, then start it again; the address for phones appears here.";
  }
}

function renderTeacher(s, state) {
  choice = s.teacher_choice || null;
  $("controls").hidden = !s.teacher;
  if (!s.teacher) return;
  $("btn-start").hidden = state !== "lobby";
  $("btn-pause").hidden = state !== "running";
  $("btn-resume").hidden = state !== "paused";
  $("btn-end").hidden = !(state === "running" || state === "paused" || state === "lobby");
  $("btn-new").hidden = state !== "ended" || ending(s);
  $("taskform").hidden = state !== "lobby";
  $("modeform").hidden = state !== "lobby" || !choice || !choice.current;
  for (const r of document.querySelectorAll('input[name="mf-alg"]')) {
    r.closest("label").hidden = !choice || !choice.algorithms.includes(r.value);
    if (!$("modeform").open) r.checked = !!choice && r.value === choice.current;
  }
}

// The teacher's choice of how the noise is added, as the teacher's
// status serves it (teacher_choice: the ways this server offers,
// plan.TeacherAlgorithms it can run, and the current session's; absent
// when the operator fixed it or only one can run): the lobby form
// shows those, and a teacher's task or a new session keeps the current
// one (POST /api/teacher/new?algorithm=).
let choice = null;
function algorithmQuery() {
  return choice && choice.current ? "?algorithm=" + encodeURIComponent(choice.current) : "";
}

// newSession asks for a new session (a task definition or none) and
// follows it; a refusal is said in msg.
async function newSession(query, body, msg, form) {
  $(msg).hidden = true;
  try {
    const r = await fetch("/api/teacher/new" + query, {method: "POST", headers: Object.assign({"Content-Type": "application/json"}, headers()), body});
    if (!r.ok) throw new Error((await r.text()).trim() || String(r.status));
    followNew(await r.json());
    $(form).open = false;
  } catch (e) {
    $(msg).hidden = false; $(msg).textContent = (form === "taskform" ? "This task cannot be used: " : "This cannot be started: ") + e.message;
  }
  poll();
}
$("mf").addEventListener("submit", ev => {
  ev.preventDefault();
  const pick = document.querySelector('input[name="mf-alg"]:checked');
  if (!pick) return;
  // The way this lobby already runs: nothing to change, and the
  // students in the lobby stay (the coordinator would keep it too).
  if (choice && pick.value === choice.current) {
    $("mf-msg").hidden = false;
    $("mf-msg").textContent = "This lobby already adds the noise this way: nothing changed, and the students who joined stay.";
    return;
  }
  newSession("?algorithm=" + encodeURIComponent(pick.value), "", "mf-msg", "modeform");
});

// The teacher's own task (docs/tasks.md): the form becomes a
// browserfl.task/v1 definition, which POST /api/teacher/new checks
// (shared/task) and makes the next session's task.
function taskColumn() {
  const row = document.createElement("div");
  row.className = "tfcol";
  row.innerHTML = '<label>Name <input class="c-name" maxlength="40" required></label>' +
    '<label>Question <input class="c-ask" maxlength="80" required></label>' +
    '<label>Kind <select class="c-kind"><option value="number">number</option><option value="category">one of a list</option><option value="text">text</option></select></label>' +
    '<label class="c-more">From, to <input class="c-range" placeholder="0, 10"></label>' +
    '<button type="button" class="c-del" title="Remove this column">✕</button>';
  const kind = row.querySelector(".c-kind"), more = row.querySelector(".c-more");
  kind.addEventListener("change", () => {
    more.firstChild.textContent = kind.value === "number" ? "From, to " : kind.value === "category" ? "Choices, separated by commas " : "Longest, in letters ";
    row.querySelector(".c-range").placeholder = kind.value === "number" ? "0, 10" : kind.value === "category" ? "small, big" : "40";
  });
  row.querySelector(".c-del").addEventListener("click", () => row.remove());
  $("tf-cols").append(row);
}
const list = v => v.split(",").map(x => x.trim()).filter(x => x);

function taskDefinition() {
  const title = $("tf-title").value.trim();
  const name = title.toLowerCase().normalize("NFKD").replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40) || "class-task";
  const features = [...document.querySelectorAll("#tf-cols .tfcol")].map(row => {
    const f = {name: row.querySelector(".c-name").value.trim(), ask: row.querySelector(".c-ask").value.trim(), kind: row.querySelector(".c-kind").value};
    const more = row.querySelector(".c-range").value;
    if (f.kind === "number") { const [lo, hi] = list(more).map(Number); f.min = lo; f.max = hi; }
    else if (f.kind === "category") f.values = list(more);
    else Object.assign(f, {max_length: parseInt(more, 10) || 40, char_grams: [1, 2, 3], word_grams: true, buckets: 1024});
    return f;
  });
  return {format: "browserfl.task/v1", name, title, about: $("tf-about").value.trim(), features,
    label: {name: $("tf-label").value.trim(), ask: $("tf-label-ask").value.trim(), values: list($("tf-label-values").value)},
    model: "logreg", privacy: {}};
}

$("tf-add").addEventListener("click", taskColumn);
taskColumn();
$("tf").addEventListener("submit", ev => {
  ev.preventDefault();
  newSession(algorithmQuery(), JSON.stringify(taskDefinition()), "tf-msg", "taskform");
});

function renderTraining(s) {
  const ss = s.session, p = s.privacy || {}, sum = (s.join && s.join.summary) || {};
  const cur = s.round ? s.round.t : s.committed;
  $("round").textContent = cur;
  $("roundof").textContent = "of " + ss.rounds + " rounds · " + ss.cohort + (ss.cohort === 1 ? " device" : " devices") + " asked each round";
  const left = timeLeftFor(s, rounds);
  $("running").textContent = (s.running_s != null ? "running for " + fmtDuration(s.running_s) : "") +
    (left != null ? " · about " + fmtDuration(left) + " left" : "");
  if (s.round) {
    $("cohortbar").style.width = (100 * s.round.received / Math.max(1, s.round.cohort)) + "%";
    $("cohorttxt").textContent = s.round.received + " / " + s.round.cohort + " updates · " + (s.round.deadline_left_ms / 1000).toFixed(1) + " s left";
  } else {
    $("cohortbar").style.width = "0";
    $("cohorttxt").textContent = s.state === "paused" ? "paused" : "between rounds · " + (s.devices.eligible) + " ready, " + s.min_devices + " needed";
  }
  $("sessbar").style.width = (100 * s.committed / ss.rounds) + "%";
  $("sesstxt").textContent = s.committed + " / " + ss.rounds + " rounds committed";
  $("acc").textContent = s.last_eval ? pct(s.last_eval.accuracy) : "–";
  $("acc-kv").textContent = "test accuracy" + (ss.classes > 1 ? " · a guess would be " + guessPct(ss.classes) : "");
  const ev = rounds.filter(r => r.evaluated);
  // A session that tests nothing says why (a task without test rows).
  const first = s.accuracy_note ? noAccuracy(s, "students can try the model on their phones.")
    : "The first accuracy appears here once the class model is first tested, after its first rounds.";
  $("acc-title").textContent = ss.task ? "Right answers on test rows" : "Right answers on test pictures";
  line($("accchart"), ev.map(r => [r.t, r.accuracy]), "#4fc3f7", y => (100 * y).toFixed(0) + "%", 0, 1, first);
  line($("losschart"), ev.map(r => [r.t, r.loss]), "#ffb74d", (y, dec) => y.toFixed(dec), null, null,
    "This line appears with the first accuracy: it shows how wrong the model still is.");
  timeline($("timeline"), rounds);
  const most = Math.max(p.max_participations || 0, sum.most_included || 0);
  $("priv-words").textContent = privWords(p, false);
  table($("privacy"), [
    ["worst case for one device, whole lesson", !p.private ? "no promise"
      : p.trusted ? "ε at most " + p.epsilon_text + " against everyone but this server; this server itself: no limit"
      : p.shared ? "ε at most " + p.promise_text + " if the other devices are real; ε at most " + p.floor_text + " from a device's own noise alone (smaller is more private)"
      : "ε at most " + p.epsilon_text + " (smaller is more private)"],
    ["most rounds one device helped in", most + " of " + ss.rounds],
    ["devices that helped", sum.participants ?? "–"],
  ]);
  if (!model || modelRound <= 0) { $("pics-note").textContent = modelNote(s); $("tiles").replaceChildren(); }
  else fitTiles();
  pollModel(s);
  const pe = people(s);
  counts($("counts"), pe.counts);
  names($("names"), pe.list, true);
}

// renderDetails fills the Details panel: the precise figures behind the
// plain words of the screen.
function renderDetails(s) {
  const ss = s.session, p = s.privacy || {};
  table($("d-session"), [
    ["name", ss.name || "–"], ["algorithm · model", ss.algorithm + " · " + ss.model], ["model dimension d", ss.dim],
    ["devices M · cohort m · rounds T", ss.M + " · " + ss.cohort + " · " + ss.rounds],
    ["clipping S · minibatch b · step η", ss.clip + " · " + ss.batch + " · " + ss.eta],
    ["round deadline", (ss.deadline_ms / 1000).toFixed(0) + " s"], ["min devices a round needs", s.min_devices],
    ["lesson started", s.started_at ? new Date(s.started_at).toLocaleTimeString() : "not yet"],
  ]);
  table($("d-privacy"), [
    ["worst case per device, whole session", p.private ? p.text : "no privacy guarantee"],
    ["mode", !p.private ? "not private" : p.trusted ? "trusted server adds the noise"
      : p.shared ? "each device adds a share of the noise; this server unscrambles only sums of at least " + p.threshold + " updates"
      : "each device noises its own update"],
    [p.last_iterate ? "papers' ρ_p · ledger ρ budget (read as Gaussian DP)" : "papers' ρ_p · zCDP ρ budget", p.private ? (ss.rho_p ?? "–") + " · " + (p.zcdp_rho ?? "–") : "–"],
  ]);
  const texts = (s.notices || []).map(n => n.text).concat(s.notices ? [] : (s.warnings || []));
  $("d-warnings").replaceChildren(...(texts.length ? texts : ["none now"]).map(t => Object.assign(document.createElement("li"), {textContent: t})));
  $("d-model").textContent = "The download (Final model, JSON) is schema " + "browserfl.model/v1: " + ss.model + ", " + ss.dim +
    " weights, class names and the last accuracy. It is the public model every device receives.";
  if (s.bytes_in == null) return;
  table($("traffic"), [
    ["bytes in · out", fmtBytes(s.bytes_in) + " · " + fmtBytes(s.bytes_out)],
    ["round latency p50 · p99", (s.latency_p50_ms / 1000).toFixed(2) + " s · " + (s.latency_p99_ms / 1000).toFixed(2) + " s"],
    ["compression", ss.compressor || "none (float32)"],
    ["rejected bad frames", s.bad_frames], ["since the session's store was first used (lobby included)", fmtDuration(s.uptime_s)],
  ].concat((s.edges || []).map(e => [
    "edge " + e.id,
    e.alive ? e.devices + (e.devices === 1 ? " device" : " devices") : "not heard from for " + fmtDuration(e.silent_ms / 1000),
  ])));
}

function renderLobby(s) {
  $("collects").hidden = !s.collects;
  $("collects").textContent = s.collects ? "What each student will type: " + s.collects : "";
  const pe = people(s);
  const n = pe.list ? pe.list.filter(p => p.state === "lobby" || p.state === "active").length : s.devices.connected;
  $("lobby-count").textContent = n + (n === 1 ? " device joined" : " devices joined");
  names($("names-big"), pe.list, false);
}

// noAccuracy is the status's accuracy_note as a sentence, with more
// words after a colon when given.
function noAccuracy(s, more) {
  const n = s.accuracy_note.charAt(0).toUpperCase() + s.accuracy_note.slice(1);
  return more ? n + ": " + more : n + ".";
}

function renderSummary(s) {
  const ss = s.session, p = s.privacy || {}, sum = (s.join && s.join.summary) || {};
  const acc = sum.final_accuracy ?? (s.last_eval ? s.last_eval.accuracy : null);
  $("sum-acc").textContent = acc == null ? "–" : pct(acc);
  $("sum-acc-note").textContent = acc == null ? (s.accuracy_note || "no evaluation") : "final test accuracy (round " + (sum.final_round || s.last_eval.t) + ")" +
    (sum.best_accuracy != null && sum.best_accuracy > acc ? " · best " + pct(sum.best_accuracy) + " (round " + sum.best_round + ")" : "") +
    (acc != null && ss.classes > 1 ? " · a guess would be " + guessPct(ss.classes) : "");
  $("sum-rounds").textContent = s.committed;
  // The session's length: from its start to the last commit (the
  // uptime goes on counting after the end).
  // From the teacher's Start (running_s; older coordinators: from the
  // store's first use) to the end.
  let took = s.running_s ?? s.uptime_s;
  const lastRec = rounds[rounds.length - 1], t0 = Date.parse(sum.session_start || "");
  if (s.running_s == null && lastRec && lastRec.started && !isNaN(t0)) {
    const t1 = Date.parse(lastRec.started) + (lastRec.latency_ms || 0);
    if (t1 > t0) took = (t1 - t0) / 1000;
  }
  $("sum-rounds-note").textContent = "rounds of " + ss.rounds + " in " + fmtDuration(took);
  $("sum-people").textContent = sum.participants ?? "–";
  $("sum-people-note").textContent = "devices took part" + (sum.registered ? " (" + sum.registered + " joined)" : "");
  $("sum-eps").textContent = p.private ? (p.shared ? p.promise_text + " / " + p.floor_text : p.epsilon_text) : "–";
  const most = Math.max(p.max_participations || 0, sum.most_included || 0);
  $("sum-eps-note").textContent = p.private ? "ε at most, for any one device" + (p.trusted ? ", against everyone but this server"
    : p.shared ? ", if the other devices were real / from its own noise alone" : "") +
    " (the busiest helped in " + most + (most === 1 ? " round)" : " rounds)") : "no privacy promise";
  const ev = rounds.filter(r => r.evaluated);
  line($("sumchart"), ev.map(r => [r.t, r.accuracy]), "#4fc3f7", y => (100 * y).toFixed(0) + "%", 0, 1,
    s.accuracy_note ? noAccuracy(s, "") : "The class model was not tested in this session, so there is no accuracy to draw.");
  $("download").href = "/api/model.json?code=" + encodeURIComponent(code);
  $("sum-model-note").textContent = "The class model after round " + s.committed + ", as a file other programs can read (see Details).";
  // The words first: the tiles take the room they leave.
  $("sum-priv-words").textContent = privWords(p, true);
  if (!model || modelRound <= 0) { $("sum-pics-note").textContent = modelNote(s); $("sum-tiles").replaceChildren(); }
  else fitTiles();
  pollModel(s);
}

// privWords says whom the session's privacy protects against, in the
// present or (the summary) the past: with the devices' noise everyone;
// with the coordinator's noise everyone but the coordinator, which sees
// each update without noise and is bounded by nothing.
function privWords(p, past) {
  if (!p.private) return past ? "This session added no noise: it made no privacy promise." : "This session adds no noise: it makes no privacy promise.";
  if (p.trusted) return past
    ? "Each device sent its update without noise; this server added noise to the sum before sharing the class model. Nothing limited what this server could learn; everyone else saw only the noisy model (ε at most " + p.epsilon_text + ")."
    : "Each device sends its update without noise; this server adds noise to the sum before sharing the class model. Nothing limits what this server can learn; everyone else sees only the noisy model (ε at most " + p.epsilon_text + ").";
  if (p.shared) {
    const own = p.colluders > 0 ? ", at most " + p.colluders + " of them on this server's side" : "";
    return (past ? "Each device added a share of the noise to its own update and sent it scrambled: this server could unscramble only the sum of each round's updates, of at least "
      : "Each device adds a share of the noise to its own update and sends it scrambled: this server can unscramble only the sum of each round's updates, of at least ") +
      p.threshold + " devices" + own + ". If they are real devices, ε is at most " + p.promise_text +
      ". If this server ran fake devices, each device's own noise alone still keeps ε at most " + p.floor_text + ".";
  }
  return past ? "Each device added noise to its own update before sending it." : "Each device adds noise to its own update before sending it: nobody sees a clean update.";
}

// followNew follows a new session (POST /api/teacher/new's answer): it
// has its own join code.
function followNew(n) {
  if (!n.join_code) return;
  code = n.join_code; rounds = [];
  model = null; modelRound = -1; modelMissing = false;
  const u = new URL(location.href);
  u.searchParams.set("code", code); u.searchParams.delete("teacher");
  history.replaceState(null, "", u.pathname + u.search);
}

async function teacher(action) {
  if ((action === "end" || action === "new") &&
      !confirm(action === "end" ? "End the session for everyone?" : "Start a new session? The current one stays in the store until you reset it.")) return;
  try {
    const r = await fetch("/api/teacher/" + action + (action === "new" ? algorithmQuery() : ""), {method: "POST", headers: headers()});
    if (!r.ok) throw new Error((await r.text()).trim() || String(r.status));
    $("msg").hidden = true;
    if (action === "new") followNew(await r.json());
  } catch (e) {
    $("msg").hidden = false; $("msg").textContent = action + ": " + e.message;
  }
  poll();
}
for (const b of document.querySelectorAll("#controls button")) b.addEventListener("click", () => teacher(b.dataset.action));

let timer = 0;
async function poll() {
  try {
    if (!code) {
      $("state").textContent = "open this page as /dashboard?code=<join code>"; $("state").className = "badge err";
      return;
    }
    const s = await getJSON("/api/status");
    const after = rounds.length ? rounds[rounds.length - 1].t : 0;
    if (s.committed < after) rounds = [];
    if (s.committed > after || rounds.length === 0) rounds = rounds.concat(await getJSON("/api/rounds?after=" + (rounds.length ? after : 0)));
    const ss = s.session;
    $("title").textContent = s.title || (ss.name || "session") + " · " + ss.algorithm + " · " + ss.model;
    document.title = $("title").textContent;
    const view = viewOf(s);
    const state = s.state || (view === "summary" ? "ended" : view === "lobby" ? "lobby" : "running");
    document.body.dataset.view = view;
    $("state").textContent = ending(s) ? "ending: finishing round " + s.round.t
      : s.state ? stateText[s.state] || s.state
      : view === "summary" ? "session finished" : s.round ? "training"
      : s.devices.eligible >= s.min_devices ? "between rounds" : "waiting for " + s.min_devices + " devices (" + s.devices.eligible + " ready)";
    $("state").className = "badge " + state;
    renderJoin(s);
    renderTeacher(s, state);
    renderFlags(s);
    renderDetails(s);
    // The coordinator's plan warnings (the class may not finish the
    // planned rounds), shown while they hold.
    const w = (s.notices ? s.notices.map(n => n.words) : (s.warnings || [])).join(" · ");
    $("warnings").hidden = !w; $("warnings").textContent = w ? "⚠ " + w : "";
    if (view === "lobby") renderLobby(s);
    else if (view === "summary") renderSummary(s);
    else renderTraining(s);
    document.body.dataset.rendered = "1";
  } catch (e) {
    $("state").className = "badge err";
    if (e.teacher && e.status === 403) {
      // A wrong teacher link: forget its secret (no more wrong guesses
      // from this page) and go on as the read-only dashboard.
      teacherSecret = "";
      sessionStorage.removeItem("bfl-teacher");
      $("msg").hidden = false; $("msg").textContent = "This teacher link is not right: showing the dashboard without the teacher's buttons.";
      return;
    }
    if (e.teacher) {
      $("state").textContent = "too many wrong teacher links from this network; retrying";
      return;
    }
    if (e.status === 403) {
      // Do not keep guessing: repeated wrong codes slow down every page
      // behind this network address.
      $("state").textContent = "wrong join code in this page's address";
      clearInterval(timer);
      return;
    }
    $("state").textContent = e.status === 429 ? "too many wrong join codes from this network; retrying" : "coordinator unreachable";
  }
}
timer = setInterval(poll, 1000);
poll();
window.addEventListener("resize", () => { poll(); fitTiles(); });
