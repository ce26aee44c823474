// The chat page: streaming chat completions, one session_id per
// conversation, conversations kept in localStorage.

import { APIError, bindKeyInput, byId, el, getJSON, headers, readEvents, request } from './api';
import { render } from './markdown';
import {
  type Conversation,
  type Message,
  type Settings,
  loadConversations,
  loadCurrent,
  loadSettings,
  newConversation,
  saveConversations,
  saveCurrent,
  saveSettings,
} from './store';

const ui = {
  sidebar: byId<HTMLElement>('sidebar'),
  toggle: byId<HTMLButtonElement>('toggle-list'),
  model: byId<HTMLElement>('model'),
  list: byId<HTMLUListElement>('conv-list'),
  newConv: byId<HTMLButtonElement>('new-conv'),
  key: byId<HTMLInputElement>('api-key'),
  temperature: byId<HTMLInputElement>('temperature'),
  maxTokens: byId<HTMLInputElement>('max-tokens'),
  seed: byId<HTMLInputElement>('seed'),
  stop: byId<HTMLTextAreaElement>('stop'),
  session: byId<HTMLInputElement>('session-id'),
  system: byId<HTMLTextAreaElement>('system'),
  systemBox: byId<HTMLDetailsElement>('system-box'),
  alert: byId<HTMLElement>('alert'),
  messages: byId<HTMLOListElement>('messages'),
  composer: byId<HTMLFormElement>('composer'),
  prompt: byId<HTMLTextAreaElement>('prompt'),
  send: byId<HTMLButtonElement>('send'),
  stopBtn: byId<HTMLButtonElement>('stop-btn'),
};

let convs = loadConversations();
let settings: Settings = loadSettings();
let current: Conversation;
let model = '';
let inflight: AbortController | null = null;

function ensureCurrent(): void {
  if (convs.length === 0) convs.push(newConversation(1));
  current = convs.find((c) => c.id === loadCurrent()) ?? convs[0];
  saveCurrent(current.id);
}

function persist(): void {
  current.updated = Date.now();
  saveConversations(convs);
}

function showAlert(msg: string): void {
  ui.alert.textContent = msg;
  ui.alert.hidden = msg === '';
}

function showError(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  showAlert(msg);
  if (e instanceof APIError && e.needsKey) {
    openSidebar(true);
    ui.key.focus();
  }
  return msg;
}

// ---- conversations

function renderList(): void {
  ui.list.replaceChildren(
    ...convs.map((c) => {
      const li = el('li', c.id === current.id ? { class: 'active' } : {});
      const pick = el('button', { type: 'button', class: 'conv', 'aria-label': 'Open ' + c.title }, c.title);
      if (c.id === current.id) pick.setAttribute('aria-current', 'true');
      pick.addEventListener('click', () => select(c.id));
      const del = el('button', { type: 'button', class: 'icon del', 'aria-label': 'Delete ' + c.title, title: 'Delete' }, '×');
      del.addEventListener('click', () => remove(c.id));
      li.append(pick, del);
      return li;
    }),
  );
}

function select(id: string): void {
  if (inflight) inflight.abort();
  const c = convs.find((x) => x.id === id);
  if (!c) return;
  current = c;
  saveCurrent(id);
  renderAll();
  openSidebar(false);
  ui.prompt.focus();
}

function create(): void {
  let n = convs.length + 1;
  while (convs.some((c) => c.title === 'Conversation ' + n)) n++;
  const c = newConversation(n);
  convs.unshift(c);
  saveConversations(convs);
  select(c.id);
}

function remove(id: string): void {
  convs = convs.filter((c) => c.id !== id);
  saveConversations(convs);
  if (current.id === id) {
    ensureCurrent();
  }
  renderAll();
}

// ---- messages

function statsText(m: Message): string {
  const s = m.stats;
  if (!s) return '';
  const parts = [
    'TTFT ' + Math.round(s.ttftMs) + ' ms',
    s.tokensPerSecond.toFixed(1) + ' tok/s',
    s.completionTokens + ' tokens',
    'cached ' + s.cachedTokens + ' of ' + s.promptTokens + ' prompt tokens',
  ];
  if (s.finishReason) parts.push(s.finishReason);
  return parts.join(' · ');
}

function messageItem(m: Message, i: number): HTMLLIElement {
  const li = el('li', { class: 'msg ' + m.role + (m.error ? ' failed' : '') });
  li.append(el('div', { class: 'who' }, m.role === 'user' ? 'You' : 'Assistant'));
  const body = el('div', { class: 'body' });
  if (m.role === 'assistant') body.innerHTML = render(m.content);
  else body.textContent = m.content;
  li.append(body);
  if (m.error) li.append(el('div', { class: 'error' }, m.error));
  if (m.role === 'assistant') {
    const foot = el('div', { class: 'foot' });
    foot.append(el('span', { class: 'stats', 'aria-label': 'Reply statistics' }, statsText(m)));
    const copy = el('button', { type: 'button', class: 'small', 'aria-label': 'Copy reply' }, 'Copy');
    copy.addEventListener('click', () => void copyText(m.content, copy));
    foot.append(copy);
    if (i === current.messages.length - 1) {
      const regen = el('button', { type: 'button', class: 'small', 'aria-label': 'Regenerate reply' }, 'Regenerate');
      regen.disabled = inflight !== null;
      regen.addEventListener('click', () => void regenerate());
      foot.append(regen);
    }
    li.append(foot);
  }
  return li;
}

function renderMessages(): void {
  ui.messages.replaceChildren(...current.messages.map(messageItem));
  if (current.messages.length === 0) {
    ui.messages.append(el('li', { class: 'empty' }, 'Ask the model something. Enter sends, Shift+Enter adds a line, Esc stops.'));
  }
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

function renderAll(): void {
  renderList();
  ui.session.value = current.sessionId;
  ui.system.value = current.system;
  ui.systemBox.open = current.system !== '' || ui.systemBox.open;
  renderMessages();
}

async function copyText(text: string, btn: HTMLButtonElement): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const ta = el('textarea');
    ta.value = text;
    document.body.append(ta);
    ta.select();
    document.execCommand('copy');
    ta.remove();
  }
  btn.textContent = 'Copied';
  setTimeout(() => (btn.textContent = 'Copy'), 1200);
}

// ---- sending

function setBusy(busy: boolean): void {
  ui.send.disabled = busy;
  ui.stopBtn.hidden = !busy;
}

function requestBody(c: Conversation): Record<string, unknown> {
  const msgs: { role: string; content: string }[] = [];
  if (c.system.trim()) msgs.push({ role: 'system', content: c.system });
  for (const m of c.messages.slice(0, -1)) {
    if (m.role === 'assistant' && (m.error || m.content === '')) continue;
    msgs.push({ role: m.role, content: m.content });
  }
  const body: Record<string, unknown> = {
    messages: msgs,
    stream: true,
    stream_options: { include_usage: true },
    temperature: settings.temperature,
    max_tokens: settings.maxTokens,
  };
  if (model) body.model = model;
  if (c.sessionId.trim()) body.session_id = c.sessionId.trim();
  if (settings.seed.trim() !== '') body.seed = Number(settings.seed);
  const stop = settings.stop.split('\n').filter((s) => s !== '');
  if (stop.length) body.stop = stop;
  return body;
}

interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number };
}

async function complete(c: Conversation): Promise<void> {
  const reply: Message = { role: 'assistant', content: '' };
  c.messages.push(reply);
  const ctrl = new AbortController();
  inflight = ctrl;
  setBusy(true);
  showAlert('');
  renderMessages();
  const t0 = performance.now();
  let tFirst = 0;
  let finish = '';
  let usage = null as Usage | null;
  let pending = false;
  const paint = () => {
    if (pending || c !== current) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const last = ui.messages.lastElementChild;
      const body = last?.querySelector('.body');
      if (body) body.innerHTML = render(reply.content);
      ui.messages.scrollTop = ui.messages.scrollHeight;
    });
  };
  try {
    const resp = await request('v1/chat/completions', {
      method: 'POST',
      headers: headers(true),
      body: JSON.stringify(requestBody(c)),
      signal: ctrl.signal,
    });
    await readEvents(resp, (ev) => {
      if (ev.data === '[DONE]') return;
      const j = JSON.parse(ev.data);
      if (j.error) throw new APIError(j.error.message ?? 'the stream failed');
      const ch = j.choices?.[0];
      const d: string | undefined = ch?.delta?.content;
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
    const decode = (tEnd - (tFirst || tEnd)) / 1000;
    reply.stats = {
      ttftMs: (tFirst || tEnd) - t0,
      tokensPerSecond: n > 1 && decode > 0 ? (n - 1) / decode : 0,
      promptTokens: usage?.prompt_tokens ?? 0,
      completionTokens: n,
      cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
      finishReason: finish,
    };
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') {
      reply.error = 'Stopped.';
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

async function sendPrompt(): Promise<void> {
  const text = ui.prompt.value.trim();
  if (!text || inflight) return;
  ui.prompt.value = '';
  if (current.messages.length === 0) current.title = text.length > 40 ? text.slice(0, 39) + '…' : text;
  current.messages.push({ role: 'user', content: text });
  renderList();
  await complete(current);
}

async function regenerate(): Promise<void> {
  const last = current.messages[current.messages.length - 1];
  if (inflight || !last || last.role !== 'assistant') return;
  current.messages.pop();
  await complete(current);
}

// ---- settings

function bindSettings(): void {
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
      stop: ui.stop.value,
    };
    saveSettings(settings);
  };
  for (const i of [ui.temperature, ui.maxTokens, ui.seed, ui.stop]) i.addEventListener('change', save);
  ui.session.addEventListener('change', () => {
    current.sessionId = ui.session.value.trim();
    persist();
  });
  ui.system.addEventListener('change', () => {
    current.system = ui.system.value;
    persist();
  });
}

function openSidebar(open: boolean): void {
  ui.sidebar.classList.toggle('open', open);
  ui.toggle.setAttribute('aria-expanded', String(open));
}

async function loadModel(): Promise<void> {
  try {
    const r = await getJSON<{ data: { id: string }[] }>('v1/models');
    model = r.data?.[0]?.id ?? '';
    ui.model.textContent = model;
    showAlert('');
  } catch (e) {
    showError(e);
  }
}

// ---- keys

ui.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  void sendPrompt();
});
ui.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    void sendPrompt();
  }
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && inflight) {
    e.preventDefault();
    inflight.abort();
  }
});
ui.stopBtn.addEventListener('click', () => inflight?.abort());
ui.newConv.addEventListener('click', create);
ui.toggle.addEventListener('click', () => openSidebar(!ui.sidebar.classList.contains('open')));

ensureCurrent();
bindSettings();
renderAll();
void loadModel();
ui.prompt.focus();
