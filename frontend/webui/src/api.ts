// What both pages share: the API key, requests, server-sent events read
// from fetch (so the Authorization header can be sent) and error text.

const keyItem = 'tandem.apiKey';

export function apiKey(): string {
  return localStorage.getItem(keyItem) ?? '';
}

export function setAPIKey(key: string): void {
  if (key) localStorage.setItem(keyItem, key);
  else localStorage.removeItem(keyItem);
}

export function headers(json = false): Record<string, string> {
  const h: Record<string, string> = {};
  const key = apiKey();
  if (key) h['Authorization'] = 'Bearer ' + key;
  if (json) h['Content-Type'] = 'application/json';
  return h;
}

/** An error the page shows: unreachable server, HTTP error, or a bad stream. */
export class APIError extends Error {
  constructor(message: string, readonly status = 0) {
    super(message);
  }
  get needsKey(): boolean {
    return this.status === 401;
  }
}

/** Sends a request relative to the page (so --root-path works). */
export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  let resp: Response;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new APIError('Cannot reach the server: is tandem running? (' + String((e as Error).message ?? e) + ')');
  }
  if (!resp.ok) throw await errorOf(resp);
  return resp;
}

async function errorOf(resp: Response): Promise<APIError> {
  let msg = '';
  try {
    const body = await resp.json();
    msg = body?.error?.message ?? '';
  } catch {
    // not JSON
  }
  if (resp.status === 401) {
    msg = 'This server needs an API key: enter it in the API key field.' + (msg ? ' (' + msg + ')' : '');
  }
  return new APIError(msg || 'HTTP ' + resp.status + ' ' + resp.statusText, resp.status);
}

export async function getJSON<T>(path: string, signal?: AbortSignal): Promise<T> {
  const resp = await request(path, { headers: headers(), signal });
  return (await resp.json()) as T;
}

export interface SSEvent {
  event: string;
  data: string;
}

/** Reads a text/event-stream body, calling onEvent for each event. */
export async function readEvents(resp: Response, onEvent: (e: SSEvent) => void): Promise<void> {
  if (!resp.body) throw new APIError('the response has no body');
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let event = '';
  let data: string[] = [];
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch (e) {
      if (e instanceof DOMException && e.name === 'AbortError') throw e;
      throw new APIError('The connection to the server was lost (' + String((e as Error).message ?? e) + ')');
    }
    if (chunk.done) break;
    buf += dec.decode(chunk.value, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      if (line === '') {
        if (data.length) onEvent({ event: event || 'message', data: data.join('\n') });
        event = '';
        data = [];
      } else if (line.startsWith('data:')) {
        data.push(line.slice(5).replace(/^ /, ''));
      } else if (line.startsWith('event:')) {
        event = line.slice(6).trim();
      }
    }
  }
  if (data.length) onEvent({ event: event || 'message', data: data.join('\n') });
}

/** Shorthand for document.getElementById with a type. */
export function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error('missing #' + id);
  return el as T;
}

/** Creates an element with attributes and text. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Wires an API key input to the stored key. */
export function bindKeyInput(input: HTMLInputElement, onChange: () => void): void {
  input.value = apiKey();
  input.addEventListener('change', () => {
    setAPIKey(input.value.trim());
    onChange();
  });
}
