// The dashboard's script (a file: the CSP allows no inline script).
"use strict";
const $ = id => document.getElementById(id);
const params = new URLSearchParams(location.search);
const code = params.get("code");
if (code) {
  const url = location.origin + "/?code=" + encodeURIComponent(code);
  $("join").innerHTML = "";
  const t = document.createElement("span");
  t.textContent = "Join at " + location.host + " with code ";
  const b = document.createElement("b"); b.textContent = code;
  $("join").append(t, b);
}
let rounds = [];
function fmtBytes(n) {
  const u = ["B","KB","MB","GB","TB"]; let i = 0;
  while (n >= 1000 && i < u.length-1) { n /= 1000; i++; }
  return n.toFixed(i ? 1 : 0) + " " + u[i];
}
function table(el, rows) {
  el.replaceChildren(...rows.map(([k, v]) => {
    const tr = document.createElement("tr");
    const a = document.createElement("td"); a.textContent = k;
    const b = document.createElement("td"); b.textContent = v;
    tr.append(a, b); return tr;
  }));
}
function line(canvas, pts, color, yfmt, ymin, ymax) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  canvas.width = w*dpr; canvas.height = h*dpr;
  const g = canvas.getContext("2d"); g.scale(dpr, dpr);
  g.clearRect(0, 0, w, h);
  g.fillStyle = "#8a97a6"; g.font = "12px system-ui";
  if (pts.length === 0) { g.fillText("no data yet", 10, 20); return; }
  const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0+1);
  const y0 = ymin ?? Math.min(...ys), y1 = ymax ?? Math.max(...ys, y0 + 1e-9);
  const L = 44, R = 8, T = 8, B = 20;
  const X = x => L + (x - x0) / (x1 - x0) * (w - L - R);
  const Y = y => T + (1 - (y - y0) / (y1 - y0)) * (h - T - B);
  g.strokeStyle = "#263040";
  for (let i = 0; i <= 4; i++) {
    const y = y0 + (y1 - y0) * i / 4;
    g.beginPath(); g.moveTo(L, Y(y)); g.lineTo(w - R, Y(y)); g.stroke();
    g.fillText(yfmt(y), 2, Y(y) + 4);
  }
  g.fillText("round " + x0, L, h - 4); g.fillText(String(x1), w - R - 30, h - 4);
  g.strokeStyle = color; g.lineWidth = 2.5; g.beginPath();
  pts.forEach((p, i) => i ? g.lineTo(X(p[0]), Y(p[1])) : g.moveTo(X(p[0]), Y(p[1])));
  g.stroke();
}
function timeline(canvas, recs) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  canvas.width = w*dpr; canvas.height = h*dpr;
  const g = canvas.getContext("2d"); g.scale(dpr, dpr); g.clearRect(0, 0, w, h);
  g.fillStyle = "#8a97a6"; g.font = "12px system-ui";
  const last = recs.slice(-60);
  if (!last.length) { g.fillText("no rounds yet", 10, 20); return; }
  const maxLat = Math.max(...last.map(r => r.latency_ms), 1);
  const bw = (w - 10) / last.length;
  last.forEach((r, i) => {
    const bh = (h - 24) * r.latency_ms / maxLat;
    const frac = r.cohort ? r.included / r.cohort : 0;
    g.fillStyle = frac >= 1 ? "#81c784" : frac >= .5 ? "#ffb74d" : "#e57373";
    g.fillRect(5 + i*bw, h - 20 - bh, Math.max(1, bw - 2), bh);
  });
  g.fillStyle = "#8a97a6";
  g.fillText("max " + (maxLat/1000).toFixed(2) + " s · green: all included, amber: ≥ half, red: fewer", 6, h - 4);
}
// The API needs the join code: the one in this page's URL, sent as a
// header so that it does not end up in access logs twice.
async function getJSON(path) {
  const r = await fetch(path, {cache: "no-store", headers: {"X-Join-Code": code || ""}});
  if (!r.ok) { const e = new Error(path + ": " + r.status); e.status = r.status; throw e; }
  return r.json();
}
async function poll() {
  try {
    if (!code) {
      $("state").textContent = "open this page as /dashboard?code=<join code>"; $("state").className = "err";
      return;
    }
    const s = await getJSON("/api/status");
    const after = rounds.length ? rounds[rounds.length-1].t : 0;
    const more = await getJSON("/api/rounds?after=" + after);
    rounds = rounds.concat(more);
    const ss = s.session;
    $("title").textContent = (ss.name || "session") + " · " + ss.algorithm + " · " + ss.model;
    $("state").textContent = s.finished ? "finished" : s.round ? "training"
      : s.devices.eligible >= s.min_devices ? "between rounds" : "waiting for " + s.min_devices + " devices (" + s.devices.eligible + " ready)";
    $("state").className = "kv";
    $("connected").textContent = s.devices.connected;
    $("eligible").textContent = s.devices.eligible;
    $("busy").textContent = s.devices.busy;
    const cur = s.round ? s.round.t : s.committed;
    $("round").textContent = cur;
    $("roundof").textContent = "of " + ss.rounds + " rounds · cohort m = " + ss.cohort + " of M = " + ss.M;
    if (s.round) {
      $("cohortbar").style.width = (100 * s.round.received / Math.max(1, s.round.cohort)) + "%";
      $("cohorttxt").textContent = s.round.received + " / " + s.round.cohort + " updates · " + (s.round.deadline_left_ms/1000).toFixed(1) + " s left";
    } else {
      $("cohortbar").style.width = "0"; $("cohorttxt").textContent = "between rounds";
    }
    $("sessbar").style.width = (100 * s.committed / ss.rounds) + "%";
    $("sesstxt").textContent = s.committed + " / " + ss.rounds + " rounds committed";
    const ev = rounds.filter(r => r.evaluated);
    $("acc").textContent = s.last_eval ? (100 * s.last_eval.accuracy).toFixed(1) + " %" : "–";
    line($("accchart"), ev.map(r => [r.t, r.accuracy]), "#4fc3f7", y => (100*y).toFixed(0) + "%", 0, 1);
    line($("losschart"), ev.map(r => [r.t, r.loss]), "#ffb74d", y => y.toFixed(2));
    timeline($("timeline"), rounds);
    const p = s.privacy;
    table($("privacy"), [
      ["mode", !p.private ? "not private" : p.trusted ? "trusted server adds the noise" : "untrusted: each device noises its own update"],
      ["zCDP ρ per device (whole session, worst case)", p.private ? p.rho_text : "–"],
      ["paper ρ", p.private && p.rho_p ? p.rho_p.toPrecision(3) : "–"],
      ["worst-case ε per device", p.private ? p.text : "–"],
      ["clipping S", ss.clip], ["minibatch b", ss.batch],
      ["most rounds one device joined", p.max_participations],
    ]);
    table($("traffic"), [
      ["bytes in (updates)", fmtBytes(s.bytes_in)], ["bytes out (assignments)", fmtBytes(s.bytes_out)],
      ["round latency p50 / p99", (s.latency_p50_ms/1000).toFixed(2) + " s / " + (s.latency_p99_ms/1000).toFixed(2) + " s"],
      ["compression", ss.compressor || "none (float32)"], ["model dimension d", ss.dim],
      ["rejected bad frames", s.bad_frames], ["uptime", (s.uptime_s/60).toFixed(1) + " min"],
    ]);
  } catch (e) {
    $("state").className = "err";
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
const timer = setInterval(poll, 1000);
poll();
