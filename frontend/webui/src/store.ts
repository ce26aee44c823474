// Conversations and settings, kept in the browser's localStorage.

export interface Stats {
  ttftMs: number;
  tokensPerSecond: number;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  finishReason: string;
}

export interface Message {
  role: 'user' | 'assistant';
  content: string;
  stats?: Stats;
  error?: string;
}

export interface Conversation {
  id: string;
  title: string;
  sessionId: string;
  system: string;
  messages: Message[];
  updated: number;
}

export interface Settings {
  temperature: number;
  maxTokens: number;
  seed: string; // "" = none
  stop: string; // one stop string per line
}

export const defaultSettings: Settings = { temperature: 0, maxTokens: 256, seed: '', stop: '' };

const convItem = 'tandem.conversations';
const currentItem = 'tandem.current';
const settingsItem = 'tandem.settings';

function randomID(): string {
  const b = new Uint8Array(6);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

export function newConversation(n: number): Conversation {
  const id = randomID();
  return { id, title: 'Conversation ' + n, sessionId: 'chat-' + id, system: '', messages: [], updated: Date.now() };
}

function read<T>(item: string, fallback: T): T {
  try {
    const v = localStorage.getItem(item);
    return v ? (JSON.parse(v) as T) : fallback;
  } catch {
    return fallback;
  }
}

export function loadConversations(): Conversation[] {
  const cs = read<Conversation[]>(convItem, []);
  return Array.isArray(cs) ? cs.filter((c) => c && typeof c.id === 'string' && Array.isArray(c.messages)) : [];
}

export function saveConversations(cs: Conversation[]): void {
  try {
    localStorage.setItem(convItem, JSON.stringify(cs));
  } catch {
    // storage full or disabled: the page still works, without history
  }
}

export function loadCurrent(): string {
  return localStorage.getItem(currentItem) ?? '';
}

export function saveCurrent(id: string): void {
  localStorage.setItem(currentItem, id);
}

export function loadSettings(): Settings {
  return { ...defaultSettings, ...read<Partial<Settings>>(settingsItem, {}) };
}

export function saveSettings(s: Settings): void {
  localStorage.setItem(settingsItem, JSON.stringify(s));
}
