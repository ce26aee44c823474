// Drives the web console in headless chromium (cmd/tandem/e2e_webui_test.go
// runs it against a real `tandem serve`). Usage:
//   node browser.mjs MODE BASE_URL SCREENSHOT_DIR
// MODE main: the default model on 2 engines: chat, sessions in the
//   console, ending a session, 375 px, then the server going down (the
//   script prints KILL and waits for a line on stdin).
// MODE key: a server with --api-key: the key prompt, then chat and feed
//   with the key, and Esc stopping a reply.
// Set CHROMIUM to the browser binary. Prints "step …" lines, "OK" at the end.
import { chromium } from 'playwright-core';
import { createInterface } from 'node:readline';

const [mode, base, shots] = process.argv.slice(2);
const origin = new URL(base).origin;
const stdin = createInterface({ input: process.stdin });
const lines = stdin[Symbol.asyncIterator]();
const step = (s) => console.log('step ' + s);
const fail = (s) => {
  throw new Error(s);
};

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
const external = [];
const errors = [];

async function newPage(viewport = { width: 1280, height: 860 }) {
  const ctx = await browser.newContext({ viewport });
  // No network: anything not from the server fails and is recorded.
  await ctx.route('**/*', (route) => {
    const u = route.request().url();
    if (u.startsWith(origin) || u.startsWith('data:')) return route.continue();
    external.push(u);
    return route.abort();
  });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && !/Failed to load resource|ERR_CONNECTION_REFUSED|401/.test(m.text()) && errors.push(m.text()));
  return page;
}

// Sends text in the chat page and waits for the reply to finish; returns
// the reply's text, stats and how many times its body changed while it
// streamed.
async function ask(page, text, timeout = 180_000) {
  const n = await page.locator('#messages .msg.assistant').count();
  await page.evaluate(() => {
    window.__paints = 0;
    new MutationObserver(() => window.__paints++).observe(document.getElementById('messages'), { subtree: true, childList: true, characterData: true });
  });
  await page.fill('#prompt', text);
  await page.press('#prompt', 'Enter');
  const reply = page.locator('#messages .msg.assistant').nth(n);
  await reply.locator('.stats:has-text("TTFT"), .error').first().waitFor({ timeout });
  const err = await reply.locator('.error').count();
  if (err) fail('reply failed: ' + (await reply.locator('.error').textContent()));
  return {
    text: await reply.locator('.body').innerText(),
    stats: await reply.locator('.stats').innerText(),
    paints: await page.evaluate(() => window.__paints),
  };
}

async function sessionID(page) {
  return page.inputValue('#session-id');
}

// Every control has an accessible name.
async function checkLabels(page, what) {
  const unnamed = await page.evaluate(() =>
    [...document.querySelectorAll('button, input, textarea, select')]
      .filter((e) => !(e.getAttribute('aria-label') || (e.labels && e.labels.length) || e.textContent.trim()))
      .map((e) => e.outerHTML.slice(0, 80)),
  );
  if (unnamed.length) fail(what + ': controls without a label: ' + unnamed.join(', '));
}

async function checkNarrow(path) {
  const page = await newPage({ width: 375, height: 740 });
  await page.goto(base + path);
  await page.waitForLoadState('networkidle').catch(() => {});
  const w = await page.evaluate(() => document.documentElement.scrollWidth);
  if (w > 375) fail(path + ' at 375 px is ' + w + ' px wide');
  await checkLabels(page, path);
  if (path === '/') {
    await page.locator('#prompt').waitFor({ state: 'visible' });
    await page.click('#toggle-list');
    await page.locator('#api-key').waitFor({ state: 'visible' });
    if (!(await page.locator('#send').isVisible())) fail('send button hidden at 375 px');
  } else {
    await page.locator('#engines tbody tr[data-engine]').first().waitFor();
  }
  await page.close();
}

// ---- main: the default model on two engines

async function main() {
  const chat = await newPage();
  await chat.goto(base + '/');
  await chat.locator('#model:not(:empty)').waitFor();
  await checkLabels(chat, '/');
  step('chat page loaded, model ' + (await chat.textContent('#model')));

  // The console watches from the start, so its charts hold every turn.
  const con = await newPage();
  await con.goto(base + '/console');
  await con.locator('#status:has-text("live")').waitFor();
  const a = await ask(chat, 'What is the capital of France?');
  step('answer: ' + JSON.stringify(a.text) + ' [' + a.stats + '] paints ' + a.paints);
  if (!a.text.includes('Paris')) fail('the answer does not name Paris: ' + a.text);
  if (!/TTFT \d+ ms/.test(a.stats) || !/cached \d+ of \d+ prompt tokens/.test(a.stats)) fail('stats: ' + a.stats);
  if (a.paints < 3) fail('the answer did not stream (' + a.paints + ' updates)');
  const s1 = await sessionID(chat);

  await chat.click('#new-conv');
  const s2 = await sessionID(chat);
  await ask(chat, 'Name a primary color.');
  await chat.click('#new-conv');
  const s3 = await sessionID(chat);
  await ask(chat, 'What is 2 + 2?');
  if (new Set([s1, s2, s3]).size !== 3) fail('sessions not distinct: ' + [s1, s2, s3]);
  step('three conversations: ' + [s1, s2, s3].join(' '));

  await con.waitForFunction(() => document.querySelectorAll('#engines tbody tr[data-engine]').length === 2);
  const states = await con.locator('#engines td.state').allInnerTexts();
  if (states.join() !== 'ready,ready') fail('engine states ' + states);
  await checkLabels(con, '/console');
  const row = (id) => con.locator(`#sessions tr[data-session="${id}"]`);
  for (const s of [s1, s2, s3]) await row(s).locator('td.cached:not(:has-text("…"))').waitFor({ timeout: 10_000 });
  const holder = {};
  for (const s of [s1, s2, s3]) holder[s] = await row(s).getAttribute('data-engine');
  step('holders ' + JSON.stringify(holder));

  // A new turn of conversation 1: it sticks to its engine, and the console
  // shows it within 2 s.
  const before = Number(await row(s1).locator('td').nth(2).innerText());
  await chat.click('#conv-list button.conv:has-text("What is the capital of France")');
  if ((await sessionID(chat)) !== s1) fail('switching back did not restore session ' + s1);
  const b = await ask(chat, 'And what is the capital of Germany?');
  const t0 = Date.now();
  step('second turn: ' + JSON.stringify(b.text) + ' [' + b.stats + ']');
  if (!/cached [1-9]\d* of/.test(b.stats)) fail('second turn hit no cache: ' + b.stats);
  await con.waitForFunction(
    ([id, n]) => {
      const r = document.querySelector(`#sessions tr[data-session="${id}"]`);
      return r && Number(r.querySelectorAll('td')[2].textContent) > n;
    },
    [s1, before],
    { timeout: 2000 },
  );
  step('console updated ' + (Date.now() - t0) + ' ms after the turn');
  if ((await row(s1).getAttribute('data-engine')) !== holder[s1]) fail('session ' + s1 + ' moved engines');
  await chat.screenshot({ path: shots + '/webui-chat.png' });
  await con.screenshot({ path: shots + '/webui-console.png', fullPage: true });

  // A session's recent requests, then ending it.
  await row(s2).locator('button').click();
  await con.locator('#detail ul.requests li').first().waitFor();
  const reqs = await con.locator('#detail ul.requests li').allInnerTexts();
  if (!reqs.some((r) => r && !r.includes('no recent'))) fail('no recent requests for ' + s2);
  await con.click('#end-session');
  await con.locator('#detail .ended').waitFor();
  // Its blocks stay cached (evicted first), so the engine may list it a while.
  await con.locator(`#sessions tr[data-session="${s2}"] td.cached:has-text("ended"), #sessions:not(:has(tr[data-session="${s2}"]))`).first().waitFor({ timeout: 10_000 });
  step('ended ' + s2 + ' (' + reqs.length + ' recent requests shown)');

  await checkNarrow('/');
  await checkNarrow('/console');
  step('375 px layouts fit');

  console.log('KILL');
  await lines.next();
  await chat.fill('#prompt', 'Are you there?');
  await chat.press('#prompt', 'Enter');
  await chat.locator('#alert:has-text("Cannot reach the server")').waitFor({ timeout: 10_000 });
  await con.locator('#status:has-text("disconnected")').waitFor({ timeout: 10_000 });
  step('server down: ' + (await chat.textContent('#alert')));
}

// ---- key: a server with --api-key

async function key() {
  const chat = await newPage();
  await chat.goto(base + '/');
  await chat.locator('#alert:has-text("API key")').waitFor();
  step('asked for the key: ' + (await chat.textContent('#alert')));
  await chat.fill('#api-key', 'sk-webui');
  await chat.press('#api-key', 'Tab');
  await chat.locator('#model:not(:empty)').waitFor();
  await chat.fill('#max-tokens', '8');
  await chat.press('#max-tokens', 'Tab');
  const r = await ask(chat, 'hello', 60_000);
  if (!r.stats.includes('TTFT')) fail('no stats with the key');
  step('answered with the key');
  // Esc stops a long reply (the dummy model writes thousands of tokens a second).
  await chat.click('#new-conv');
  await chat.fill('#max-tokens', '15000');
  await chat.press('#max-tokens', 'Tab');
  await chat.fill('#prompt', 'a long one');
  await chat.press('#prompt', 'Enter');
  await chat.locator('#stop-btn').waitFor({ state: 'visible' });
  await chat.waitForFunction(() => document.querySelector('#messages .msg.assistant:last-child .body').textContent.length > 0);
  await chat.keyboard.press('Escape');
  await chat.locator('#messages .msg.assistant:last-child .error:has-text("Stopped")').waitFor({ timeout: 5000 });
  step('Esc stopped the reply');

  const con = await newPage();
  await con.goto(base + '/console');
  await con.locator('#status:has-text("disconnected")').waitFor();
  await con.fill('#api-key', 'sk-webui'); // the key is kept per browser profile: each context starts empty
  await con.press('#api-key', 'Tab');
  await con.locator('#status:has-text("live")').waitFor();
  await con.locator('#engines tbody tr[data-engine]').first().waitFor();
  step('console live with the key');
}

try {
  if (mode === 'main') await main();
  else if (mode === 'key') await key();
  else fail('unknown mode ' + mode);
  if (external.length) fail('requests left the server: ' + external.join(', '));
  if (errors.length) fail('page errors: ' + errors.join(' | '));
  console.log('OK');
} catch (e) {
  console.log('FAIL ' + (e && e.stack ? e.stack : e));
  process.exitCode = 1;
} finally {
  await browser.close();
  stdin.close();
}
