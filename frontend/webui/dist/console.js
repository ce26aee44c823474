var __defProp = Object.defineProperty;
var __defNormalProp = (obj, key, value) => key in obj ? __defProp(obj, key, { enumerable: true, configurable: true, writable: true, value }) : obj[key] = value;
var __publicField = (obj, key, value) => __defNormalProp(obj, typeof key !== "symbol" ? key + "" : key, value);

// src/api.ts
var keyItem = "tandem.apiKey";
function apiKey() {
  return localStorage.getItem(keyItem) ?? "";
}
function setAPIKey(key) {
  if (key) localStorage.setItem(keyItem, key);
  else localStorage.removeItem(keyItem);
}
function headers(json = false) {
  const h = {};
  const key = apiKey();
  if (key) h["Authorization"] = "Bearer " + key;
  if (json) h["Content-Type"] = "application/json";
  return h;
}
var APIError = class extends Error {
  constructor(message, status = 0) {
    super(message);
    __publicField(this, "status", status);
  }
  get needsKey() {
    return this.status === 401;
  }
};
async function request(path, init = {}) {
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    throw new APIError("Cannot reach the server: is tandem running? (" + String(e.message ?? e) + ")");
  }
  if (!resp.ok) throw await errorOf(resp);
  return resp;
}
async function errorOf(resp) {
  let msg = "";
  try {
    const body = await resp.json();
    msg = body?.error?.message ?? "";
  } catch {
  }
  if (resp.status === 401) {
    msg = "This server needs an API key: enter it in the API key field." + (msg ? " (" + msg + ")" : "");
  }
  return new APIError(msg || "HTTP " + resp.status + " " + resp.statusText, resp.status);
}
async function getJSON(path, signal) {
  const resp = await request(path, { headers: headers(), signal });
  return await resp.json();
}
async function readEvents(resp, onEvent) {
  if (!resp.body) throw new APIError("the response has no body");
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  let event = "";
  let data = [];
  for (; ; ) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (e) {
      if (e instanceof DOMException && e.name === "AbortError") throw e;
      throw new APIError("The connection to the server was lost (" + String(e.message ?? e) + ")");
    }
    if (chunk.done) break;
    buf += dec.decode(chunk.value, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (line === "") {
        if (data.length) onEvent({ event: event || "message", data: data.join("\n") });
        event = "";
        data = [];
      } else if (line.startsWith("data:")) {
        data.push(line.slice(5).replace(/^ /, ""));
      } else if (line.startsWith("event:")) {
        event = line.slice(6).trim();
      }
    }
  }
  if (data.length) onEvent({ event: event || "message", data: data.join("\n") });
}
function byId(id) {
  const el2 = document.getElementById(id);
  if (!el2) throw new Error("missing #" + id);
  return el2;
}
function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== void 0) e.textContent = text;
  return e;
}
function bindKeyInput(input, onChange) {
  input.value = apiKey();
  input.addEventListener("change", () => {
    setAPIKey(input.value.trim());
    onChange();
  });
}

// src/chart.ts
var W = 320;
var pad = 8;
var H = 120;
var svgNS = "http://www.w3.org/2000/svg";
var palette = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777"];
function draw(svg, series, capacity2) {
  let top = 0;
  for (const s of series) for (const p of s.points) if (p !== null && p > top) top = p;
  const most = top;
  top = top > 0 ? top * 1.1 : 1;
  const nodes = [];
  for (const y of [0.25, 0.5, 0.75]) {
    const g = document.createElementNS(svgNS, "line");
    g.setAttribute("x1", "0");
    g.setAttribute("x2", String(W));
    g.setAttribute("y1", String(H * y));
    g.setAttribute("y2", String(H * y));
    g.setAttribute("class", "grid");
    nodes.push(g);
  }
  const dx = W / Math.max(capacity2 - 1, 1);
  for (const s of series) {
    const off = capacity2 - s.points.length;
    let d = "";
    let pen = false;
    s.points.forEach((p, i) => {
      if (p === null) {
        pen = false;
        return;
      }
      const x = ((off + i) * dx).toFixed(1);
      const y = (H - pad - p / top * (H - 2 * pad)).toFixed(1);
      d += (pen ? "L" : "M") + x + " " + y + " ";
      pen = true;
    });
    const path = document.createElementNS(svgNS, "path");
    path.setAttribute("d", d.trim() || "M0 " + H);
    path.setAttribute("fill", "none");
    path.setAttribute("stroke", s.color);
    path.setAttribute("stroke-width", "2");
    path.setAttribute("vector-effect", "non-scaling-stroke");
    const title = document.createElementNS(svgNS, "title");
    title.textContent = s.name;
    path.append(title);
    nodes.push(path);
    const lastAt = s.points.length - 1;
    const last = s.points[lastAt];
    if (last !== null && last !== void 0) {
      const dot = document.createElementNS(svgNS, "circle");
      dot.setAttribute("cx", ((off + lastAt) * dx).toFixed(1));
      dot.setAttribute("cy", (H - pad - last / top * (H - 2 * pad)).toFixed(1));
      dot.setAttribute("r", "2.5");
      dot.setAttribute("fill", s.color);
      nodes.push(dot);
    }
  }
  const label = document.createElementNS(svgNS, "text");
  label.setAttribute("x", "4");
  label.setAttribute("y", "12");
  label.setAttribute("class", "axis");
  label.textContent = "max " + fmt(most);
  nodes.push(label);
  svg.replaceChildren(...nodes);
}
function fmt(v) {
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

// src/console.ts
var capacity = 120;
var ui = {
  status: byId("status"),
  alert: byId("alert"),
  key: byId("api-key"),
  policy: byId("policy"),
  engines: byId("engines").tBodies[0],
  sessions: byId("sessions").tBodies[0],
  numSessions: byId("num-sessions"),
  tps: byId("chart-tps"),
  ttft: byId("chart-ttft"),
  routing: byId("chart-routing"),
  tpsNow: byId("tps-now"),
  ttftNow: byId("ttft-now"),
  legend: byId("routing-legend"),
  detail: byId("detail"),
  detailTitle: byId("detail-title"),
  detailBody: byId("detail-body"),
  end: byId("end-session"),
  close: byId("close-detail")
};
var history = { tps: [], ttft: [], routing: /* @__PURE__ */ new Map() };
var selected = "";
var feed = null;
function push(a, v) {
  a.push(v);
  if (a.length > capacity) a.shift();
}
function setStatus(text, cls) {
  ui.status.textContent = text;
  ui.status.className = "status " + cls;
}
function showAlert(msg) {
  ui.alert.textContent = msg;
  ui.alert.hidden = msg === "";
}
function cell(text, attrs = {}) {
  return el("td", attrs, text);
}
function meter(frac, label) {
  const td = el("td");
  const m = el("meter", { min: "0", max: "1", "aria-label": label });
  m.value = frac;
  td.append(m, " " + (frac * 100).toFixed(1) + "%");
  return td;
}
function ago(t) {
  if (!t) return "—";
  const s = Math.max(0, Date.now() / 1e3 - t);
  if (s < 60) return Math.round(s) + " s ago";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  return Math.round(s / 3600) + " h ago";
}
function renderEngines(es) {
  ui.engines.replaceChildren(
    ...es.map((e) => {
      const tr = el("tr", { "data-engine": String(e.index) });
      tr.append(
        el("th", { scope: "row" }, "engine " + e.index),
        cell(e.state, { class: "state " + e.state, title: e.error ?? "" }),
        cell(String(e.num_requests_running)),
        cell(String(e.num_requests_waiting)),
        meter(e.kv_cache_usage, "KV cache usage of engine " + e.index),
        cell(String(e.num_sessions)),
        cell((e.prefix_cache_hit_rate * 100).toFixed(1) + "%"),
        cell(e.endpoint, { class: "endpoint" })
      );
      return tr;
    })
  );
}
function renderSessions(ss, total) {
  ui.numSessions.textContent = total > ss.length ? "(" + ss.length + " of " + total + ")" : "(" + total + ")";
  if (ss.length === 0) {
    ui.sessions.replaceChildren(el("tr", {}, ""));
    ui.sessions.firstElementChild.append(el("td", { colspan: "5", class: "muted" }, "No session holds cached blocks."));
    return;
  }
  ui.sessions.replaceChildren(
    ...ss.map((s) => {
      const tr = el("tr", { "data-session": s.id, "data-engine": String(s.engine_index) });
      if (s.id === selected) tr.classList.add("selected");
      const th = el("th", { scope: "row" });
      const b = el("button", { type: "button", class: "link", "aria-label": "Show session " + s.id }, s.id);
      b.addEventListener("click", () => void openSession(s.id));
      th.append(b);
      const engines = s.engines.length > 1 ? "engine " + s.engine_index + " (also " + s.engines.filter((i) => i !== s.engine_index).join(", ") + ")" : "engine " + s.engine_index;
      tr.append(
        th,
        cell(engines, { class: "holder" }),
        s.ended ? cell("ended", { class: "cached ended", title: "Its blocks stay cached until evicted, before any other" }) : cell(s.detailed ? String(s.num_cached_tokens) : "…", { class: "cached" }),
        cell(s.detailed ? String(s.num_requests) : s.ended ? "—" : "…"),
        cell(ago(s.last_active))
      );
      return tr;
    })
  );
}
function renderCharts(s) {
  const r = s.rates;
  if (r.interval > 0) {
    push(history.tps, r.tokens_per_second);
    push(history.ttft, r.ttft_seconds === null ? null : r.ttft_seconds * 1e3);
    const seen = /* @__PURE__ */ new Set();
    for (const c of r.routing) {
      const k = c.policy + " · " + c.outcome;
      seen.add(k);
      if (!history.routing.has(k)) history.routing.set(k, new Array(history.tps.length - 1).fill(0));
      push(history.routing.get(k), c.n / r.interval);
    }
    for (const [k, a] of history.routing) if (!seen.has(k)) push(a, 0);
  }
  ui.tpsNow.textContent = "now " + fmt(r.tokens_per_second) + " tok/s";
  ui.ttftNow.textContent = r.ttft_seconds === null ? "no first token in the last second" : "now " + Math.round(r.ttft_seconds * 1e3) + " ms";
  const span = Math.min(capacity, Math.max(30, history.tps.length));
  draw(ui.tps, [{ name: "tokens/s", color: palette[0], points: history.tps }], span);
  draw(ui.ttft, [{ name: "TTFT ms", color: palette[1], points: history.ttft }], span);
  const keys = [.../* @__PURE__ */ new Set([...history.routing.keys(), ...s.routing.map((c) => c.policy + " · " + c.outcome)])].sort();
  const series = keys.map((k, i) => ({ name: k, color: palette[i % palette.length], points: history.routing.get(k) ?? [] }));
  draw(ui.routing, series, span);
  ui.legend.replaceChildren(
    ...keys.map((k, i) => {
      const total = s.routing.find((c) => c.policy + " · " + c.outcome === k)?.n ?? 0;
      const li = el("li");
      const sw = el("span", { class: "swatch", "aria-hidden": "true" });
      sw.style.background = palette[i % palette.length];
      li.append(sw, k + ": " + total);
      return li;
    })
  );
}
function apply(s) {
  ui.policy.textContent = s.policy ? "routing: " + s.policy : "";
  renderEngines(s.engines);
  renderSessions(s.sessions, s.num_sessions);
  renderCharts(s);
}
async function run() {
  feed?.abort();
  const ctrl = new AbortController();
  feed = ctrl;
  let delay = 1e3;
  while (!ctrl.signal.aborted) {
    try {
      setStatus("connecting…", "wait");
      const resp = await request("console/events", { headers: headers(), signal: ctrl.signal });
      setStatus("live", "ok");
      showAlert("");
      delay = 1e3;
      await readEvents(resp, (ev) => {
        if (ev.event === "snapshot") apply(JSON.parse(ev.data));
      });
      throw new APIError("The server closed the feed.");
    } catch (e) {
      if (ctrl.signal.aborted) return;
      setStatus("disconnected", "bad");
      showAlert(e.message + " Retrying…");
      if (e instanceof APIError && e.needsKey) {
        ui.key.focus();
        return;
      }
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 5e3);
  }
}
async function openSession(id) {
  selected = id;
  ui.detail.hidden = false;
  ui.detailTitle.textContent = "Session " + id;
  ui.detailBody.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  ui.end.disabled = false;
  try {
    const r = await getJSON(
      "v1/sessions/" + encodeURIComponent(id)
    );
    const parts = [
      el("p", {}, "Held by engine " + r.engine_index + " · " + r.num_requests + " requests · " + r.num_cached_tokens + " cached tokens")
    ];
    for (const e of r.engines ?? []) {
      parts.push(
        el("h3", {}, "engine " + e.engine_index),
        el("p", {}, e.num_prompt_tokens + " prompt tokens, " + e.num_output_tokens + " output tokens, " + e.num_cached_tokens + " cached, " + e.num_running + " running, last active " + ago(e.last_active))
      );
      const ul = el("ul", { class: "requests", "aria-label": "Recent requests on engine " + e.engine_index });
      for (const rid of e.recent_request_ids ?? []) ul.append(el("li", {}, rid));
      if (!ul.childElementCount) ul.append(el("li", { class: "muted" }, "no recent requests recorded"));
      parts.push(ul);
    }
    ui.detailBody.replaceChildren(...parts);
  } catch (e) {
    ui.detailBody.replaceChildren(el("p", { class: "error" }, e.message));
  }
}
async function endSession() {
  const id = selected;
  if (!id) return;
  ui.end.disabled = true;
  try {
    await request("v1/sessions/" + encodeURIComponent(id), { method: "DELETE", headers: headers() });
    ui.detailBody.replaceChildren(el("p", { class: "ended" }, "Session " + id + " ended: its cached blocks are released first."));
  } catch (e) {
    ui.end.disabled = false;
    ui.detailBody.append(el("p", { class: "error" }, e.message));
  }
}
ui.end.addEventListener("click", () => void endSession());
ui.close.addEventListener("click", () => {
  selected = "";
  ui.detail.hidden = true;
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && !ui.detail.hidden) ui.close.click();
});
bindKeyInput(ui.key, () => void run());
void run();
