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

// src/markdown.ts
function escapeHTML(s) {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
function inline(raw) {
  raw = raw.replace(/\u0000/g, "�");
  const parts = raw.split(/(`+[^`]*?`+)/);
  let out = "";
  for (const p of parts) {
    const m = /^(`+)([^`]*?)\1$/.exec(p);
    if (m && p.length > 1) {
      out += "<code>" + escapeHTML(m[2]) + "</code>";
      continue;
    }
    out += spans(escapeHTML(p));
  }
  return out;
}
function spans(s) {
  const links = [];
  s = s.replace(/\[([^\]\u0000]+)\]\(([^)\s]+)\)/g, (all, text, href) => {
    const url = href.replace(/&amp;/g, "&");
    if (!/^(https?:\/\/|mailto:)/i.test(url)) return all;
    links.push('<a href="' + href + '" rel="noopener noreferrer" target="_blank">' + emphasis(text) + "</a>");
    return "\0" + (links.length - 1) + "\0";
  });
  return emphasis(s).replace(/\u0000(\d+)\u0000/g, (_, i) => links[Number(i)]);
}
function emphasis(s) {
  s = s.replace(/\*\*(?=\S)(.+?)\*\*/g, "<strong>$1</strong>");
  s = s.replace(/__(?=\S)(.+?)__/g, "<strong>$1</strong>");
  s = s.replace(/(^|[^*\w])\*(?=\S)([^*]+?)\*(?!\w)/g, "$1<em>$2</em>");
  s = s.replace(/(^|[^_\w])_(?=\S)([^_]+?)_(?!\w)/g, "$1<em>$2</em>");
  s = s.replace(/~~(?=\S)(.+?)~~/g, "<del>$1</del>");
  return s;
}
function render(src) {
  const lines = src.replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  let para = [];
  let list = null;
  let quote = [];
  const flushPara = () => {
    if (para.length) out.push("<p>" + para.map(inline).join("<br>") + "</p>");
    para = [];
  };
  const flushList = () => {
    if (list) out.push("<" + list.tag + ">" + list.items.map((i) => "<li>" + i + "</li>").join("") + "</" + list.tag + ">");
    list = null;
  };
  const flushQuote = () => {
    if (quote.length) out.push("<blockquote>" + render(quote.join("\n")) + "</blockquote>");
    quote = [];
  };
  const flush = () => {
    flushPara();
    flushList();
    flushQuote();
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*(```+|~~~+)\s*([\w+#.-]*)/.exec(line);
    if (fence) {
      flush();
      const code = [];
      let j = i + 1;
      while (j < lines.length && !lines[j].trim().startsWith(fence[1])) code.push(lines[j++]);
      const lang = fence[2] ? ' class="language-' + escapeHTML(fence[2]) + '" data-lang="' + escapeHTML(fence[2]) + '"' : "";
      out.push("<pre><code" + lang + ">" + escapeHTML(code.join("\n")) + "</code></pre>");
      i = j;
      continue;
    }
    if (/^\s*>/.test(line)) {
      flushPara();
      flushList();
      quote.push(line.replace(/^\s*>\s?/, ""));
      continue;
    }
    flushQuote();
    if (line.trim() === "") {
      flushPara();
      flushList();
      continue;
    }
    const h = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      flush();
      const n = h[1].length;
      out.push("<h" + n + ">" + inline(h[2]) + "</h" + n + ">");
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      out.push("<hr>");
      continue;
    }
    const li = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (li) {
      flushPara();
      const tag = /\d/.test(li[1]) ? "ol" : "ul";
      if (list && list.tag !== tag) flushList();
      if (!list) list = { tag, items: [] };
      list.items.push(inline(li[2]));
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) {
      const items = list.items;
      items[items.length - 1] += "<br>" + inline(line.trim());
      continue;
    }
    flushList();
    para.push(line);
  }
  flush();
  return out.join("\n");
}

// src/store.ts
var defaultSettings = { temperature: 0, maxTokens: 256, seed: "", stop: "" };
var convItem = "tandem.conversations";
var currentItem = "tandem.current";
var settingsItem = "tandem.settings";
function randomID() {
  const b = new Uint8Array(6);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
function newConversation(n) {
  const id = randomID();
  return { id, title: "Conversation " + n, sessionId: "chat-" + id, system: "", messages: [], updated: Date.now() };
}
function read(item, fallback) {
  try {
    const v = localStorage.getItem(item);
    return v ? JSON.parse(v) : fallback;
  } catch {
    return fallback;
  }
}
function loadConversations() {
  const cs = read(convItem, []);
  return Array.isArray(cs) ? cs.filter((c) => c && typeof c.id === "string" && Array.isArray(c.messages)) : [];
}
function saveConversations(cs) {
  try {
    localStorage.setItem(convItem, JSON.stringify(cs));
  } catch {
  }
}
function loadCurrent() {
  return localStorage.getItem(currentItem) ?? "";
}
function saveCurrent(id) {
  localStorage.setItem(currentItem, id);
}
function loadSettings() {
  return { ...defaultSettings, ...read(settingsItem, {}) };
}
function saveSettings(s) {
  localStorage.setItem(settingsItem, JSON.stringify(s));
}

// src/chat.ts
var ui = {
  sidebar: byId("sidebar"),
  toggle: byId("toggle-list"),
  model: byId("model"),
  list: byId("conv-list"),
  newConv: byId("new-conv"),
  key: byId("api-key"),
  temperature: byId("temperature"),
  maxTokens: byId("max-tokens"),
  seed: byId("seed"),
  stop: byId("stop"),
  session: byId("session-id"),
  system: byId("system"),
  systemBox: byId("system-box"),
  alert: byId("alert"),
  messages: byId("messages"),
  composer: byId("composer"),
  prompt: byId("prompt"),
  send: byId("send"),
  stopBtn: byId("stop-btn")
};
var convs = loadConversations();
var settings = loadSettings();
var current;
var model = "";
var inflight = null;
function ensureCurrent() {
  if (convs.length === 0) convs.push(newConversation(1));
  current = convs.find((c) => c.id === loadCurrent()) ?? convs[0];
  saveCurrent(current.id);
}
function persist() {
  current.updated = Date.now();
  saveConversations(convs);
}
function showAlert(msg) {
  ui.alert.textContent = msg;
  ui.alert.hidden = msg === "";
}
function showError(e) {
  const msg = e instanceof Error ? e.message : String(e);
  showAlert(msg);
  if (e instanceof APIError && e.needsKey) {
    openSidebar(true);
    ui.key.focus();
  }
  return msg;
}
function renderList() {
  ui.list.replaceChildren(
    ...convs.map((c) => {
      const li = el("li", c.id === current.id ? { class: "active" } : {});
      const pick = el("button", { type: "button", class: "conv", "aria-label": "Open " + c.title }, c.title);
      if (c.id === current.id) pick.setAttribute("aria-current", "true");
      pick.addEventListener("click", () => select(c.id));
      const del = el("button", { type: "button", class: "icon del", "aria-label": "Delete " + c.title, title: "Delete" }, "×");
      del.addEventListener("click", () => remove(c.id));
      li.append(pick, del);
      return li;
    })
  );
}
function select(id) {
  if (inflight) inflight.abort();
  const c = convs.find((x) => x.id === id);
  if (!c) return;
  current = c;
  saveCurrent(id);
  renderAll();
  openSidebar(false);
  ui.prompt.focus();
}
function create() {
  let n = convs.length + 1;
  while (convs.some((c2) => c2.title === "Conversation " + n)) n++;
  const c = newConversation(n);
  convs.unshift(c);
  saveConversations(convs);
  select(c.id);
}
function remove(id) {
  convs = convs.filter((c) => c.id !== id);
  saveConversations(convs);
  if (current.id === id) {
    ensureCurrent();
  }
  renderAll();
}
function statsText(m) {
  const s = m.stats;
  if (!s) return "";
  const parts = [
    "TTFT " + Math.round(s.ttftMs) + " ms",
    s.tokensPerSecond.toFixed(1) + " tok/s",
    s.completionTokens + " tokens",
    "cached " + s.cachedTokens + " of " + s.promptTokens + " prompt tokens"
  ];
  if (s.finishReason) parts.push(s.finishReason);
  return parts.join(" · ");
}
function messageItem(m, i) {
  const li = el("li", { class: "msg " + m.role + (m.error ? " failed" : "") });
  li.append(el("div", { class: "who" }, m.role === "user" ? "You" : "Assistant"));
  const body = el("div", { class: "body" });
  if (m.role === "assistant") body.innerHTML = render(m.content);
  else body.textContent = m.content;
  li.append(body);
  if (m.error) li.append(el("div", { class: "error" }, m.error));
  if (m.role === "assistant") {
    const foot = el("div", { class: "foot" });
    foot.append(el("span", { class: "stats", "aria-label": "Reply statistics" }, statsText(m)));
    const copy = el("button", { type: "button", class: "small", "aria-label": "Copy reply" }, "Copy");
    copy.addEventListener("click", () => void copyText(m.content, copy));
    foot.append(copy);
    if (i === current.messages.length - 1) {
      const regen = el("button", { type: "button", class: "small", "aria-label": "Regenerate reply" }, "Regenerate");
      regen.disabled = inflight !== null;
      regen.addEventListener("click", () => void regenerate());
      foot.append(regen);
    }
    li.append(foot);
  }
  return li;
}
function renderMessages() {
  ui.messages.replaceChildren(...current.messages.map(messageItem));
  if (current.messages.length === 0) {
    ui.messages.append(el("li", { class: "empty" }, "Ask the model something. Enter sends, Shift+Enter adds a line, Esc stops."));
  }
  ui.messages.scrollTop = ui.messages.scrollHeight;
}
function renderAll() {
  renderList();
  ui.session.value = current.sessionId;
  ui.system.value = current.system;
  ui.systemBox.open = current.system !== "" || ui.systemBox.open;
  renderMessages();
}
async function copyText(text, btn) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const ta = el("textarea");
    ta.value = text;
    document.body.append(ta);
    ta.select();
    document.execCommand("copy");
    ta.remove();
  }
  btn.textContent = "Copied";
  setTimeout(() => btn.textContent = "Copy", 1200);
}
function setBusy(busy) {
  ui.send.disabled = busy;
  ui.stopBtn.hidden = !busy;
}
function requestBody(c) {
  const msgs = [];
  if (c.system.trim()) msgs.push({ role: "system", content: c.system });
  for (const m of c.messages.slice(0, -1)) {
    if (m.role === "assistant" && (m.error || m.content === "")) continue;
    msgs.push({ role: m.role, content: m.content });
  }
  const body = {
    messages: msgs,
    stream: true,
    stream_options: { include_usage: true },
    temperature: settings.temperature,
    max_tokens: settings.maxTokens
  };
  if (model) body.model = model;
  if (c.sessionId.trim()) body.session_id = c.sessionId.trim();
  if (settings.seed.trim() !== "") body.seed = Number(settings.seed);
  const stop = settings.stop.split("\n").filter((s) => s !== "");
  if (stop.length) body.stop = stop;
  return body;
}
async function complete(c) {
  const reply = { role: "assistant", content: "" };
  c.messages.push(reply);
  const ctrl = new AbortController();
  inflight = ctrl;
  setBusy(true);
  showAlert("");
  renderMessages();
  const t0 = performance.now();
  let tFirst = 0;
  let finish = "";
  let usage = null;
  let pending = false;
  const paint = () => {
    if (pending || c !== current) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const last = ui.messages.lastElementChild;
      const body = last?.querySelector(".body");
      if (body) body.innerHTML = render(reply.content);
      ui.messages.scrollTop = ui.messages.scrollHeight;
    });
  };
  try {
    const resp = await request("v1/chat/completions", {
      method: "POST",
      headers: headers(true),
      body: JSON.stringify(requestBody(c)),
      signal: ctrl.signal
    });
    await readEvents(resp, (ev) => {
      if (ev.data === "[DONE]") return;
      const j = JSON.parse(ev.data);
      if (j.error) throw new APIError(j.error.message ?? "the stream failed");
      const ch = j.choices?.[0];
      const d = ch?.delta?.content;
      if (d) {
        if (!tFirst) tFirst = performance.now();
        reply.content += d;
        paint();
      }
      if (ch?.finish_reason) finish = ch.finish_reason;
      if (j.usage) usage = j.usage;
    });
    const tEnd = performance.now();
    const n = usage?.completion_tokens ?? 0;
    const decode = (tEnd - (tFirst || tEnd)) / 1e3;
    reply.stats = {
      ttftMs: (tFirst || tEnd) - t0,
      tokensPerSecond: n > 1 && decode > 0 ? (n - 1) / decode : 0,
      promptTokens: usage?.prompt_tokens ?? 0,
      completionTokens: n,
      cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
      finishReason: finish
    };
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") {
      reply.error = "Stopped.";
    } else {
      reply.error = showError(e);
    }
  } finally {
    inflight = null;
    setBusy(false);
    persist();
    if (c === current) renderMessages();
  }
}
async function sendPrompt() {
  const text = ui.prompt.value.trim();
  if (!text || inflight) return;
  ui.prompt.value = "";
  if (current.messages.length === 0) current.title = text.length > 40 ? text.slice(0, 39) + "…" : text;
  current.messages.push({ role: "user", content: text });
  renderList();
  await complete(current);
}
async function regenerate() {
  const last = current.messages[current.messages.length - 1];
  if (inflight || !last || last.role !== "assistant") return;
  current.messages.pop();
  await complete(current);
}
function bindSettings() {
  bindKeyInput(ui.key, () => void loadModel());
  ui.temperature.value = String(settings.temperature);
  ui.maxTokens.value = String(settings.maxTokens);
  ui.seed.value = settings.seed;
  ui.stop.value = settings.stop;
  const save = () => {
    const t = Number(ui.temperature.value);
    const m = Math.floor(Number(ui.maxTokens.value));
    settings = {
      temperature: Number.isFinite(t) && t >= 0 ? t : 0,
      maxTokens: Number.isFinite(m) && m > 0 ? m : 256,
      seed: ui.seed.value.trim(),
      stop: ui.stop.value
    };
    saveSettings(settings);
  };
  for (const i of [ui.temperature, ui.maxTokens, ui.seed, ui.stop]) i.addEventListener("change", save);
  ui.session.addEventListener("change", () => {
    current.sessionId = ui.session.value.trim();
    persist();
  });
  ui.system.addEventListener("change", () => {
    current.system = ui.system.value;
    persist();
  });
}
function openSidebar(open) {
  ui.sidebar.classList.toggle("open", open);
  ui.toggle.setAttribute("aria-expanded", String(open));
}
async function loadModel() {
  try {
    const r = await getJSON("v1/models");
    model = r.data?.[0]?.id ?? "";
    ui.model.textContent = model;
    showAlert("");
  } catch (e) {
    showError(e);
  }
}
ui.composer.addEventListener("submit", (e) => {
  e.preventDefault();
  void sendPrompt();
});
ui.prompt.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    void sendPrompt();
  }
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && inflight) {
    e.preventDefault();
    inflight.abort();
  }
});
ui.stopBtn.addEventListener("click", () => inflight?.abort());
ui.newConv.addEventListener("click", create);
ui.toggle.addEventListener("click", () => openSidebar(!ui.sidebar.classList.contains("open")));
ensureCurrent();
bindSettings();
renderAll();
void loadModel();
ui.prompt.focus();
