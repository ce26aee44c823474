// The cluster view: a live feed of the engines, their sessions and the
// routing decisions (console/events, server-sent events read by fetch so
// that the API key can be sent).

import { APIError, bindKeyInput, byId, el, getJSON, headers, readEvents, request } from './api';
import { draw, fmt, palette, type Series } from './chart';

interface Engine {
  index: number;
  endpoint: string;
  state: string;
  error?: string;
  num_requests_running: number;
  num_requests_waiting: number;
  kv_cache_usage: number;
  num_free_blocks: number;
  num_total_blocks: number;
  num_sessions: number;
  prefix_cache_hit_rate: number;
}

interface Session {
  id: string;
  engine_index: number;
  engines: number[];
  detailed: boolean;
  ended?: boolean;
  num_requests: number;
  num_cached_tokens: number;
  last_active?: number;
}

interface Count {
  policy: string;
  outcome: string;
  n: number;
}

interface Snapshot {
  time: number;
  policy?: string;
  engines: Engine[];
  sessions: Session[];
  num_sessions: number;
  rates: { interval: number; tokens_per_second: number; ttft_seconds: number | null; routing: Count[] };
  routing: Count[];
}

interface SessionEngine {
  engine_index: number;
  num_requests: number;
  num_prompt_tokens: number;
  num_output_tokens: number;
  num_cached_tokens: number;
  num_running: number;
  last_active: number;
  recent_request_ids: string[] | null;
}

const capacity = 120; // ticks the charts span (one a second)

const ui = {
  status: byId<HTMLElement>('status'),
  alert: byId<HTMLElement>('alert'),
  key: byId<HTMLInputElement>('api-key'),
  policy: byId<HTMLElement>('policy'),
  engines: byId<HTMLTableElement>('engines').tBodies[0],
  sessions: byId<HTMLTableElement>('sessions').tBodies[0],
  numSessions: byId<HTMLElement>('num-sessions'),
  tps: byId('chart-tps') as unknown as SVGSVGElement,
  ttft: byId('chart-ttft') as unknown as SVGSVGElement,
  routing: byId('chart-routing') as unknown as SVGSVGElement,
  tpsNow: byId<HTMLElement>('tps-now'),
  ttftNow: byId<HTMLElement>('ttft-now'),
  legend: byId<HTMLUListElement>('routing-legend'),
  detail: byId<HTMLElement>('detail'),
  detailTitle: byId<HTMLElement>('detail-title'),
  detailBody: byId<HTMLElement>('detail-body'),
  end: byId<HTMLButtonElement>('end-session'),
  close: byId<HTMLButtonElement>('close-detail'),
};

const history = { tps: [] as (number | null)[], ttft: [] as (number | null)[], routing: new Map<string, (number | null)[]>() };
let selected = '';
let feed: AbortController | null = null;

function push<T>(a: T[], v: T): void {
  a.push(v);
  if (a.length > capacity) a.shift();
}

function setStatus(text: string, cls: string): void {
  ui.status.textContent = text;
  ui.status.className = 'status ' + cls;
}

function showAlert(msg: string): void {
  ui.alert.textContent = msg;
  ui.alert.hidden = msg === '';
}

function cell(text: string, attrs: Record<string, string> = {}): HTMLTableCellElement {
  return el('td', attrs, text);
}

function meter(frac: number, label: string): HTMLTableCellElement {
  const td = el('td');
  const m = el('meter', { min: '0', max: '1', 'aria-label': label });
  m.value = frac;
  td.append(m, ' ' + (frac * 100).toFixed(1) + '%');
  return td;
}

function ago(t?: number): string {
  if (!t) return '—';
  const s = Math.max(0, Date.now() / 1000 - t);
  if (s < 60) return Math.round(s) + ' s ago';
  if (s < 3600) return Math.round(s / 60) + ' min ago';
  return Math.round(s / 3600) + ' h ago';
}

function renderEngines(es: Engine[]): void {
  ui.engines.replaceChildren(
    ...es.map((e) => {
      const tr = el('tr', { 'data-engine': String(e.index) });
      tr.append(
        el('th', { scope: 'row' }, 'engine ' + e.index),
        cell(e.state, { class: 'state ' + e.state, title: e.error ?? '' }),
        cell(String(e.num_requests_running)),
        cell(String(e.num_requests_waiting)),
        meter(e.kv_cache_usage, 'KV cache usage of engine ' + e.index),
        cell(String(e.num_sessions)),
        cell((e.prefix_cache_hit_rate * 100).toFixed(1) + '%'),
        cell(e.endpoint, { class: 'endpoint' }),
      );
      return tr;
    }),
  );
}

function renderSessions(ss: Session[], total: number): void {
  ui.numSessions.textContent = total > ss.length ? '(' + ss.length + ' of ' + total + ')' : '(' + total + ')';
  if (ss.length === 0) {
    ui.sessions.replaceChildren(el('tr', {}, ''));
    ui.sessions.firstElementChild!.append(el('td', { colspan: '5', class: 'muted' }, 'No session holds cached blocks.'));
    return;
  }
  ui.sessions.replaceChildren(
    ...ss.map((s) => {
      const tr = el('tr', { 'data-session': s.id, 'data-engine': String(s.engine_index) });
      if (s.id === selected) tr.classList.add('selected');
      const th = el('th', { scope: 'row' });
      const b = el('button', { type: 'button', class: 'link', 'aria-label': 'Show session ' + s.id }, s.id);
      b.addEventListener('click', () => void openSession(s.id));
      th.append(b);
      const engines = s.engines.length > 1 ? 'engine ' + s.engine_index + ' (also ' + s.engines.filter((i) => i !== s.engine_index).join(', ') + ')' : 'engine ' + s.engine_index;
      tr.append(
        th,
        cell(engines, { class: 'holder' }),
        s.ended
          ? cell('ended', { class: 'cached ended', title: 'Its blocks stay cached until evicted, before any other' })
          : cell(s.detailed ? String(s.num_cached_tokens) : '…', { class: 'cached' }),
        cell(s.detailed ? String(s.num_requests) : s.ended ? '—' : '…'),
        cell(ago(s.last_active)),
      );
      return tr;
    }),
  );
}

function renderCharts(s: Snapshot): void {
  const r = s.rates;
  if (r.interval > 0) {
    push(history.tps, r.tokens_per_second);
    push(history.ttft, r.ttft_seconds === null ? null : r.ttft_seconds * 1000);
    const seen = new Set<string>();
    for (const c of r.routing) {
      const k = c.policy + ' · ' + c.outcome;
      seen.add(k);
      if (!history.routing.has(k)) history.routing.set(k, new Array(history.tps.length - 1).fill(0));
      push(history.routing.get(k)!, c.n / r.interval);
    }
    for (const [k, a] of history.routing) if (!seen.has(k)) push(a, 0);
  }
  ui.tpsNow.textContent = 'now ' + fmt(r.tokens_per_second) + ' tok/s';
  ui.ttftNow.textContent = r.ttft_seconds === null ? 'no first token in the last second' : 'now ' + Math.round(r.ttft_seconds * 1000) + ' ms';
  // The x axis grows with the history, to capacity ticks.
  const span = Math.min(capacity, Math.max(30, history.tps.length));
  draw(ui.tps, [{ name: 'tokens/s', color: palette[0], points: history.tps }], span);
  draw(ui.ttft, [{ name: 'TTFT ms', color: palette[1], points: history.ttft }], span);
  const keys = [...new Set([...history.routing.keys(), ...s.routing.map((c) => c.policy + ' · ' + c.outcome)])].sort();
  const series: Series[] = keys.map((k, i) => ({ name: k, color: palette[i % palette.length], points: history.routing.get(k) ?? [] }));
  draw(ui.routing, series, span);
  ui.legend.replaceChildren(
    ...keys.map((k, i) => {
      const total = s.routing.find((c) => c.policy + ' · ' + c.outcome === k)?.n ?? 0;
      const li = el('li');
      const sw = el('span', { class: 'swatch', 'aria-hidden': 'true' });
      sw.style.background = palette[i % palette.length];
      li.append(sw, k + ': ' + total);
      return li;
    }),
  );
}

function apply(s: Snapshot): void {
  ui.policy.textContent = s.policy ? 'routing: ' + s.policy : '';
  renderEngines(s.engines);
  renderSessions(s.sessions, s.num_sessions);
  renderCharts(s);
}

async function run(): Promise<void> {
  feed?.abort();
  const ctrl = new AbortController();
  feed = ctrl;
  let delay = 1000;
  while (!ctrl.signal.aborted) {
    try {
      setStatus('connecting…', 'wait');
      const resp = await request('console/events', { headers: headers(), signal: ctrl.signal });
      setStatus('live', 'ok');
      showAlert('');
      delay = 1000;
      await readEvents(resp, (ev) => {
        if (ev.event === 'snapshot') apply(JSON.parse(ev.data) as Snapshot);
      });
      throw new APIError('The server closed the feed.');
    } catch (e) {
      if (ctrl.signal.aborted) return;
      setStatus('disconnected', 'bad');
      showAlert((e as Error).message + ' Retrying…');
      if (e instanceof APIError && e.needsKey) {
        ui.key.focus();
        return; // until the key changes
      }
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 5000);
  }
}

// ---- one session

async function openSession(id: string): Promise<void> {
  selected = id;
  ui.detail.hidden = false;
  ui.detailTitle.textContent = 'Session ' + id;
  ui.detailBody.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
  ui.end.disabled = false;
  try {
    const r = await getJSON<{ engine_index: number; num_requests: number; num_cached_tokens: number; engines: SessionEngine[] }>(
      'v1/sessions/' + encodeURIComponent(id),
    );
    const parts: HTMLElement[] = [
      el('p', {}, 'Held by engine ' + r.engine_index + ' · ' + r.num_requests + ' requests · ' + r.num_cached_tokens + ' cached tokens'),
    ];
    for (const e of r.engines ?? []) {
      parts.push(
        el('h3', {}, 'engine ' + e.engine_index),
        el('p', {}, e.num_prompt_tokens + ' prompt tokens, ' + e.num_output_tokens + ' output tokens, ' + e.num_cached_tokens + ' cached, ' + e.num_running + ' running, last active ' + ago(e.last_active)),
      );
      const ul = el('ul', { class: 'requests', 'aria-label': 'Recent requests on engine ' + e.engine_index });
      for (const rid of e.recent_request_ids ?? []) ul.append(el('li', {}, rid));
      if (!ul.childElementCount) ul.append(el('li', { class: 'muted' }, 'no recent requests recorded'));
      parts.push(ul);
    }
    ui.detailBody.replaceChildren(...parts);
  } catch (e) {
    ui.detailBody.replaceChildren(el('p', { class: 'error' }, (e as Error).message));
  }
}

async function endSession(): Promise<void> {
  const id = selected;
  if (!id) return;
  ui.end.disabled = true;
  try {
    await request('v1/sessions/' + encodeURIComponent(id), { method: 'DELETE', headers: headers() });
    ui.detailBody.replaceChildren(el('p', { class: 'ended' }, 'Session ' + id + ' ended: its cached blocks are released first.'));
  } catch (e) {
    ui.end.disabled = false;
    ui.detailBody.append(el('p', { class: 'error' }, (e as Error).message));
  }
}

ui.end.addEventListener('click', () => void endSession());
ui.close.addEventListener('click', () => {
  selected = '';
  ui.detail.hidden = true;
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && !ui.detail.hidden) ui.close.click();
});
bindKeyInput(ui.key, () => void run());
void run();
