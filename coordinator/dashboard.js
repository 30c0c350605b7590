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
  const text = (s, x, y) => {
    const tw = g.measureText(s).width;
    x = Math.max(0, Math.min(x, w - tw));
    y = Math.max(px, Math.min(y, h - 2));
    g.fillText(s, x, y);
    boxes.push({text: s, x, y: y - px, w: tw, h: px + 2});
  };
  return {g, w, h, px, text};
}

function line(canvas, pts, color, yfmt, ymin, ymax) {
  const {g, w, h, px, text} = canvasCtx(canvas);
  g.fillStyle = "#8a97a6";
  if (pts.length === 0) { text("no evaluation yet", 10, px + 6); return; }
  const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1);
  const y0 = ymin ?? Math.min(...ys), y1 = ymax ?? Math.max(...ys, y0 + 1e-9);
  const L = g.measureText(yfmt(y1)).width + 8, R = 8, T = px / 2 + 2, B = px + 8;
  const X = x => L + (x - x0) / (x1 - x0) * (w - L - R);
  const Y = y => T + (1 - (y - y0) / (y1 - y0)) * (h - T - B);
  g.strokeStyle = "#263040"; g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const y = y0 + (y1 - y0) * i / 4;
    g.beginPath(); g.moveTo(L, Y(y)); g.lineTo(w - R, Y(y)); g.stroke();
    text(yfmt(y), 2, Y(y) + px / 3);
  }
  text("round " + x0, L, h - 3);
  const last = String(x1);
  text(last, w - R - g.measureText(last).width, h - 3);
  g.strokeStyle = color; g.lineWidth = 2.5; g.beginPath();
  pts.forEach((p, i) => i ? g.lineTo(X(p[0]), Y(p[1])) : g.moveTo(X(p[0]), Y(p[1])));
  g.stroke();
  if (pts.length === 1) { g.fillStyle = color; g.beginPath(); g.arc(X(pts[0][0]), Y(pts[0][1]), 4, 0, 7); g.fill(); }
}

function timeline(canvas, recs) {
  const {g, w, h, px, text} = canvasCtx(canvas);
  g.fillStyle = "#8a97a6";
  const last = recs.slice(-60);
  if (!last.length) { text("no rounds yet", 10, px + 6); return; }
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
const stateOrder = {active: 0, lobby: 1, stuck: 2, left: 3, gone: 4, removed: 5};
const nameOf = p => p.nickname || "(no name)";
// removeButton asks the coordinator to remove p's device (teacher only).
function removeButton(p) {
  const b = document.createElement("button");
  b.className = "remove danger"; b.textContent = "Remove"; b.dataset.device = p.device;
  b.title = "Remove " + nameOf(p) + " from the session";
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
    li.title = p.state || "";
    if (withRounds && p.rounds) { const sm = document.createElement("small"); sm.textContent = p.rounds; li.append(sm); }
    if (p.device && p.state !== "removed") li.append(removeButton(p));
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

function viewOf(s) {
  if (s.state) return s.state === "ended" ? "summary" : s.state === "lobby" ? "lobby" : "training";
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
  $("hint-big").hidden = !j.loopback_hint; $("hint-big").textContent = j.loopback_hint || "";
  if (qrFor !== urls[0]) {
    qrFor = urls[0];
    const src = "/api/join-qr.png?code=" + encodeURIComponent(code) + "&u=" + encodeURIComponent(urls[0]);
    $("qr-big").src = src; $("qr-small").src = src;
  }
}

function renderTeacher(s, state) {
  $("controls").hidden = !s.teacher;
  if (!s.teacher) return;
  $("btn-start").hidden = state !== "lobby";
  $("btn-pause").hidden = state !== "running";
  $("btn-resume").hidden = state !== "paused";
  $("btn-end").hidden = !(state === "running" || state === "paused" || state === "lobby");
  $("btn-new").hidden = state !== "ended";
}

function renderTraining(s) {
  const ss = s.session, p = s.privacy || {}, sum = (s.join && s.join.summary) || {};
  const cur = s.round ? s.round.t : s.committed;
  $("round").textContent = cur;
  $("roundof").textContent = "of " + ss.rounds + " rounds · m = " + ss.cohort + " per round";
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
  const ev = rounds.filter(r => r.evaluated);
  line($("accchart"), ev.map(r => [r.t, r.accuracy]), "#4fc3f7", y => (100 * y).toFixed(0) + "%", 0, 1);
  line($("losschart"), ev.map(r => [r.t, r.loss]), "#ffb74d", y => y.toFixed(2));
  timeline($("timeline"), rounds);
  const most = Math.max(p.max_participations || 0, sum.most_included || 0);
  table($("privacy"), [
    ["mode", !p.private ? "not private" : p.trusted ? "trusted server adds the noise" : "each device noises its own update"],
    ["worst case per device, whole session", p.private ? p.text : "no privacy guarantee"],
    ["most rounds one device was included in", most + " of " + ss.rounds],
    ["that device's worst case", p.private ? "ε ≤ " + p.epsilon_text + " (the bound above)" : "–"],
    ["devices that took part", sum.participants ?? "–"],
    ["clipping S · minibatch b", ss.clip + " · " + ss.batch],
  ]);
  table($("traffic"), [
    ["bytes in · out", fmtBytes(s.bytes_in) + " · " + fmtBytes(s.bytes_out)],
    ["round latency p50 · p99", (s.latency_p50_ms / 1000).toFixed(2) + " s · " + (s.latency_p99_ms / 1000).toFixed(2) + " s"],
    ["compression", ss.compressor || "none (float32)"], ["model dimension d", ss.dim],
    ["rejected bad frames", s.bad_frames], ["session running for", fmtDuration(s.uptime_s)],
  ].concat((s.edges || []).map(e => [
    "edge " + e.id,
    e.alive ? e.devices + (e.devices === 1 ? " device" : " devices") : "not heard from for " + fmtDuration(e.silent_ms / 1000),
  ])));
  const pe = people(s);
  counts($("counts"), pe.counts);
  names($("names"), pe.list, true);
}

function renderLobby(s) {
  const pe = people(s);
  const n = pe.list ? pe.list.filter(p => p.state === "lobby" || p.state === "active").length : s.devices.connected;
  $("lobby-count").textContent = n + (n === 1 ? " device joined" : " devices joined");
  names($("names-big"), pe.list, false);
}

function renderSummary(s) {
  const ss = s.session, p = s.privacy || {}, sum = (s.join && s.join.summary) || {};
  const acc = sum.final_accuracy ?? (s.last_eval ? s.last_eval.accuracy : null);
  $("sum-acc").textContent = acc == null ? "–" : pct(acc);
  $("sum-acc-note").textContent = acc == null ? "no evaluation" : "final test accuracy (round " + (sum.final_round || s.last_eval.t) + ")" +
    (sum.best_accuracy != null && sum.best_accuracy > acc ? " · best " + pct(sum.best_accuracy) + " (round " + sum.best_round + ")" : "");
  $("sum-rounds").textContent = s.committed;
  // The session's length: from its start to the last commit (the
  // uptime goes on counting after the end).
  let took = s.uptime_s;
  const lastRec = rounds[rounds.length - 1], t0 = Date.parse(sum.session_start || "");
  if (lastRec && lastRec.started && !isNaN(t0)) {
    const t1 = Date.parse(lastRec.started) + (lastRec.latency_ms || 0);
    if (t1 > t0) took = (t1 - t0) / 1000;
  }
  $("sum-rounds-note").textContent = "rounds of " + ss.rounds + " in " + fmtDuration(took);
  $("sum-people").textContent = sum.participants ?? "–";
  $("sum-people-note").textContent = "devices took part" + (sum.registered ? " (" + sum.registered + " joined)" : "");
  $("sum-eps").textContent = p.private ? p.epsilon_text : "–";
  $("sum-eps-note").textContent = p.private ? "ε of the worst device at most, at δ = " + p.delta_text + " (included in " +
    Math.max(p.max_participations || 0, sum.most_included || 0) + " rounds)" : "no privacy guarantee";
  const ev = rounds.filter(r => r.evaluated);
  line($("sumchart"), ev.map(r => [r.t, r.accuracy]), "#4fc3f7", y => (100 * y).toFixed(0) + "%", 0, 1);
  $("download").href = "/api/model.json?code=" + encodeURIComponent(code);
  $("sum-model-note").textContent = ss.model + ", " + ss.dim + " weights after round " + s.committed + " (schema browserfl.model/v1)";
  table($("sum-privacy"), [
    ["per device, whole session", p.private ? p.text : "no privacy guarantee"],
    ["mode", !p.private ? "not private" : p.trusted ? "trusted server" : "each device noises its own update"],
  ]);
}

async function teacher(action) {
  if ((action === "end" || action === "new") &&
      !confirm(action === "end" ? "End the session for everyone?" : "Start a new session? The current one stays in the store until you reset it.")) return;
  try {
    const r = await fetch("/api/teacher/" + action, {method: "POST", headers: headers()});
    if (!r.ok) throw new Error((await r.text()).trim() || String(r.status));
    $("msg").hidden = true;
    if (action === "new") {
      // The new session has its own join code: follow it.
      const n = await r.json();
      if (n.join_code) {
        code = n.join_code; rounds = [];
        const u = new URL(location.href);
        u.searchParams.set("code", code); u.searchParams.delete("teacher");
        history.replaceState(null, "", u.pathname + u.search);
      }
    }
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
    $("title").textContent = (ss.name || "session") + " · " + ss.algorithm + " · " + ss.model;
    const view = viewOf(s);
    const state = s.state || (view === "summary" ? "ended" : view === "lobby" ? "lobby" : "running");
    document.body.dataset.view = view;
    $("state").textContent = s.state ? stateText[s.state] || s.state
      : view === "summary" ? "session finished" : s.round ? "training"
      : s.devices.eligible >= s.min_devices ? "between rounds" : "waiting for " + s.min_devices + " devices (" + s.devices.eligible + " ready)";
    $("state").className = "badge " + state;
    renderJoin(s);
    renderTeacher(s, state);
    renderFlags(s);
    // The coordinator's plan warnings (the class may not finish the
    // planned rounds), shown while they hold.
    const w = (s.warnings || []).join(" · ");
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
window.addEventListener("resize", poll);
