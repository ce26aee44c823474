#!/usr/bin/env node
// Drives a Tandem server with the official OpenAI Node SDK (npm `openai`,
// installed into scripts/oracle/node_modules by `make oracle`).
//
// Usage: node test_openai.mjs BASE_URL [--api-key KEY] [--max-waiting N]
//                            [--max-body BYTES] [--expect-unavailable]
//                            [--only CHECK]...
//
// The same checks and options as test_openai.py (see there). Prints one
// PASS/FAIL line per check and "N passed, M failed"; exits 1 on failure.
// OPENAI_NODE_MODULES overrides where the SDK is loaded from.

import { setTimeout as sleep } from 'node:timers/promises';

const modules = process.env.OPENAI_NODE_MODULES
  ? new URL(`file://${process.env.OPENAI_NODE_MODULES.replace(/\/?$/, '/')}`)
  : new URL('../oracle/node_modules/', import.meta.url);
const { default: OpenAI } = await import(new URL('openai/index.mjs', modules).href);
const { VERSION } = await import(new URL('openai/version.mjs', modules).href);

const norm = (s) => s.replaceAll('_', '').toLowerCase();

function parseArgs(argv) {
  const a = { baseURL: '', apiKey: '', maxWaiting: 0, maxBody: 0, expectUnavailable: false, only: [] };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i];
    if (v === '--api-key') a.apiKey = argv[++i];
    else if (v === '--max-waiting') a.maxWaiting = Number(argv[++i]);
    else if (v === '--max-body') a.maxBody = Number(argv[++i]);
    else if (v === '--expect-unavailable') a.expectUnavailable = true;
    else if (v === '--only') a.only.push(norm(argv[++i]));
    else a.baseURL = v.replace(/\/$/, '');
  }
  if (!a.baseURL) throw new Error('usage: test_openai.mjs BASE_URL [options]');
  return a;
}

const ARGS = parseArgs(process.argv.slice(2));
const client = (key = ARGS.apiKey || 'unused') =>
  new OpenAI({ baseURL: `${ARGS.baseURL}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000 });

function expect(cond, msg) {
  if (!cond) throw new Error(typeof msg === 'string' ? msg : JSON.stringify(msg));
}

// logit_bias keeping the dummy model to printable ASCII (ids 32..126).
function asciiOnly() {
  const bias = {};
  for (let i = 0; i < 320; i++) if (i < 32 || i > 126) bias[i] = -100;
  return bias;
}

async function getJSON(path) {
  const headers = ARGS.apiKey ? { Authorization: `Bearer ${ARGS.apiKey}` } : {};
  const r = await fetch(ARGS.baseURL + path, { headers });
  return r.json();
}

const chat = (c, extra = {}, opts = {}) =>
  c.chat.completions.create({ model: 'dummy', messages: [{ role: 'user', content: extra.content ?? 'Hello' }], max_tokens: 8, ...extra, content: undefined }, opts);

async function expectError(fn, cls, check) {
  try {
    await fn();
  } catch (e) {
    expect(e instanceof cls, `got ${e?.constructor?.name}: ${e?.message}`);
    check?.(e);
    return;
  }
  throw new Error(`no ${cls.name}`);
}

const checks = {
  async embeddings() {
    // The Node SDK asks for base64 unless told otherwise and decodes it.
    const c = client();
    const texts = ['The quick brown fox', 'jumps over the lazy dog'];
    const b64 = await c.embeddings.create({ model: 'dummy', input: texts });
    const flt = await c.embeddings.create({ model: 'dummy', input: texts, encoding_format: 'float' });
    expect(b64.object === 'list' && b64.data.length === 2 && b64.data[1].index === 1, b64);
    for (const [i, d] of b64.data.entries()) {
      const f = flt.data[i].embedding;
      expect(Array.isArray(d.embedding) && d.embedding.length === f.length && f.length > 1, d);
      expect(d.embedding.every((x, j) => Math.abs(x - f[j]) < 1e-6), 'base64 and float differ');
      const norm = Math.sqrt(f.reduce((s, x) => s + x * x, 0));
      expect(Math.abs(norm - 1) < 1e-4, norm);
    }
    expect(b64.usage.prompt_tokens > 0 && b64.usage.total_tokens === b64.usage.prompt_tokens, b64.usage);
    const short = await c.embeddings.create({ model: 'dummy', input: texts[0], dimensions: 4, encoding_format: 'float' });
    expect(short.data[0].embedding.length === 4, short.data[0]);
    await expectError(() => c.embeddings.create({ model: 'dummy', input: [] }), OpenAI.BadRequestError);
  },

  async models() {
    const ids = [];
    for await (const m of client().models.list()) ids.push(m.id);
    expect(JSON.stringify(ids) === '["dummy"]', ids);
  },

  async chatCompletion() {
    const r = await chat(client(), { temperature: 0, ignore_eos: true });
    expect(r.id.startsWith('chatcmpl-') && r.object === 'chat.completion', r.id);
    expect(r.system_fingerprint?.startsWith('fp_'), r.system_fingerprint);
    expect(r.choices[0].message.role === 'assistant' && typeof r.choices[0].message.content === 'string', r.choices[0]);
    const u = r.usage;
    expect(u.completion_tokens === 8 && u.total_tokens === u.prompt_tokens + 8, u);
  },

  async chatStreamWithUsage() {
    const stream = await chat(client(), { stream: true, stream_options: { include_usage: true }, max_tokens: 6, ignore_eos: true, logit_bias: asciiOnly() });
    let text = '', usage = null, finish = null;
    for await (const chunk of stream) {
      if (chunk.usage) {
        usage = chunk.usage;
        expect(chunk.choices.length === 0, 'usage chunk has choices');
        continue;
      }
      text += chunk.choices[0].delta.content ?? '';
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    expect(usage?.completion_tokens === 6 && text.length === 6 && finish === 'length', { usage, text, finish });
  },

  async chatStreamHelper() {
    const s = client().chat.completions.stream({
      model: 'dummy', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8, min_tokens: 3, logit_bias: { ...asciiOnly(), 257: 100 },
    });
    let deltas = '';
    s.on('content', (d) => { deltas += d; });
    const final = await s.finalChatCompletion();
    const msg = final.choices[0].message.content;
    expect(msg.length === 3 && msg === deltas && final.choices[0].finish_reason === 'stop', final);
  },

  async chatN2() {
    const r = await chat(client(), { n: 2, max_tokens: 4, seed: 3 });
    expect(r.choices.map((c) => c.index).join() === '0,1', r.choices);
  },

  async chatLogprobs() {
    const r = await chat(client(), { logprobs: true, top_logprobs: 3, max_tokens: 5, ignore_eos: true });
    const content = r.choices[0].logprobs.content;
    expect(content.length === 5, content.length);
    for (const e of content) expect(e.top_logprobs.length === 3 && e.logprob <= 0, e);
  },

  async completion() {
    const r = await client().completions.create({ model: 'dummy', prompt: 'Once upon', max_tokens: 5, logprobs: 2, echo: true, ignore_eos: true });
    expect(r.id.startsWith('cmpl-') && r.object === 'text_completion', r.id);
    expect(r.choices[0].text.startsWith('Once upon'), r.choices[0].text);
    // echo covers the prompt's tokens too (vLLM: the first one has no logprob), offsets run on
    const lp = r.choices[0].logprobs;
    expect(lp.tokens.length === r.usage.prompt_tokens + 5 && r.usage.completion_tokens === 5, lp);
    expect(lp.token_logprobs[0] === null && lp.top_logprobs[0] === null, lp);
    expect(lp.text_offset.every((o, i) => i === 0 ? o === 0 : o === lp.text_offset[i - 1] + lp.tokens[i - 1].length), lp);
  },

  async completionBatchN2() {
    const r = await client().completions.create({ model: 'dummy', prompt: ['a', 'b'], n: 2, max_tokens: 3, ignore_eos: true });
    expect(r.choices.map((c) => c.index).sort().join() === '0,1,2,3' && r.usage.completion_tokens === 12, r);
  },

  async completionStreamUsage() {
    const s = await client().completions.create({ model: 'dummy', prompt: [72, 105], max_tokens: 4, stream: true, stream_options: { include_usage: true }, ignore_eos: true });
    let last;
    for await (const c of s) last = c;
    expect(last.usage?.completion_tokens === 4 && last.usage.prompt_tokens === 2, last);
  },

  async stopString() {
    const c = client();
    const params = { model: 'dummy', prompt: 'x', max_tokens: 24, temperature: 0, ignore_eos: true, logit_bias: asciiOnly() };
    const text = (await c.completions.create(params)).choices[0].text;
    expect(text.length === 24, text);
    const stop = text.slice(10, 12);
    const ch = (await c.completions.create({ ...params, stop: [stop] })).choices[0];
    expect(ch.text === text.slice(0, text.indexOf(stop)) && ch.finish_reason === 'stop' && ch.stop_reason === stop, { ch, text, stop });
  },

  async seedReproducible() {
    const c = client();
    const run = async (seed) => (await chat(c, { seed, temperature: 1, max_tokens: 12 })).choices[0].message.content;
    const [a, b, d] = [await run(1234), await run(1234), await run(99)];
    expect(a === b && a !== d, { a, b, d });
  },

  async sessionHeader() {
    const sid = `node-hdr-${crypto.randomUUID()}`;
    await chat(client(), { max_tokens: 2 }, { headers: { 'X-Session-ID': sid } });
    await chat(client(), { max_tokens: 2 }, { headers: { 'x-session-id': sid } });
    expect((await getJSON(`/v1/sessions/${sid}`)).num_requests === 2, 'session not seen twice');
  },

  async extraBodySessionAndTopK() {
    const c = client();
    const sid = `node-body-${crypto.randomUUID()}`;
    const greedy = (await chat(c, { temperature: 0, max_tokens: 10, ignore_eos: true })).choices[0].message.content;
    const top1 = (await chat(c, { temperature: 1, max_tokens: 10, ignore_eos: true, top_k: 1, session_id: sid })).choices[0].message.content;
    expect(top1 === greedy, { top1, greedy });
    expect((await getJSON(`/v1/sessions/${sid}`)).num_requests === 1, 'body session_id not seen');
  },

  async requestIdHeader() {
    const { data, response } = await chat(client(), { max_tokens: 2 }, { headers: { 'X-Request-Id': 'node-req-1' } }).withResponse();
    expect(response.headers.get('x-request-id') === 'node-req-1' && data.id === 'chatcmpl-node-req-1', data.id);
  },

  async beamSearch() {
    const r = await client().completions.create({ model: 'dummy', prompt: 'ab', max_tokens: 3, n: 2, use_beam_search: true, ignore_eos: true });
    expect(r.choices.length === 2 && r.choices[0].text !== r.choices[1].text, r.choices);
  },

  async responsesCreateAndFollowUp() {
    const c = client();
    const r1 = await c.responses.create({ model: 'dummy', input: 'Hello there', instructions: 'Be brief.', max_output_tokens: 6 });
    expect(r1.id.startsWith('resp_') && r1.object === 'response' && typeof r1.output_text === 'string', r1);
    expect(r1.usage.total_tokens === r1.usage.input_tokens + r1.usage.output_tokens, r1.usage);
    const r2 = await c.responses.create({ model: 'dummy', input: [{ role: 'user', content: 'And then?' }], previous_response_id: r1.id, max_output_tokens: 4 });
    expect(r2.previous_response_id === r1.id && r2.usage.input_tokens > r1.usage.input_tokens, r2.usage);
    const got = await c.responses.retrieve(r1.id);
    expect(got.id === r1.id && got.output_text === r1.output_text, got);
    await c.responses.delete(r1.id);
    await expectError(() => c.responses.retrieve(r1.id), OpenAI.NotFoundError);
  },

  async responsesStream() {
    const c = client();
    const types = [];
    let deltas = '';
    const s = c.responses.stream({ model: 'dummy', input: 'Hi', max_output_tokens: 5, logit_bias: asciiOnly() });
    s.on('event', (e) => types.push(e.type));
    s.on('response.output_text.delta', (e) => { deltas += e.delta; });
    const final = await s.finalResponse();
    const head = ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added'];
    expect(JSON.stringify(types.slice(0, 4)) === JSON.stringify(head), types);
    expect(types.at(-1) === 'response.completed', types);
    expect(final.output_text === deltas && final.usage, { text: final.output_text, deltas });
    const seq = [];
    for await (const e of await c.responses.create({ model: 'dummy', input: 'Hi', max_output_tokens: 3, stream: true })) seq.push(e.sequence_number);
    expect(seq.every((n, i) => n === i), seq);
  },

  async error400Param() {
    await expectError(() => chat(client(), { temperature: -1 }), OpenAI.BadRequestError, (e) => expect(e.status === 400 && e.param === 'temperature', e));
  },

  async error400ContextLength() {
    await expectError(() => chat(client(), { content: 'x'.repeat(5000) }), OpenAI.BadRequestError,
      (e) => expect(e.code === 'context_length_exceeded' && /maximum context length is \d+/.test(e.message), e.message));
  },

  async error404Model() {
    await expectError(() => client().chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
      OpenAI.NotFoundError, (e) => expect(e.status === 404 && e.code === 'model_not_found', e));
  },

  async error401() {
    if (!ARGS.apiKey) return 'skipped: server has no --api-key';
    await expectError(() => client('wrong-key').models.list(), OpenAI.AuthenticationError, (e) => expect(e.status === 401, e));
  },

  async error413() {
    if (!ARGS.maxBody) return 'skipped: --max-body not given';
    await expectError(() => client().completions.create({ model: 'dummy', prompt: 'x'.repeat(ARGS.maxBody + 1), max_tokens: 1 }),
      OpenAI.APIError, (e) => expect(e.status === 413, e.status));
  },

  async error429() {
    if (!ARGS.maxWaiting) return 'skipped: --max-waiting not given';
    const c = client();
    const long = await chat(c, { max_tokens: 4000, min_tokens: 4000, ignore_eos: true, stream: true });
    const it = long[Symbol.asyncIterator]();
    for (;;) {
      const { value } = await it.next();
      if (value?.choices?.[0]?.delta?.content) break;
    }
    const waiter = chat(client(), { max_tokens: 1 }).catch(() => {});
    await sleep(300);
    try {
      await expectError(() => chat(c, { max_tokens: 1 }), OpenAI.RateLimitError,
        (e) => expect(e.status === 429 && e.headers.get('retry-after') === '1', e.headers));
    } finally {
      long.controller.abort();
      await waiter;
    }
  },
};

async function unavailable() {
  await expectError(() => chat(client(), { max_tokens: 1 }), OpenAI.InternalServerError, (e) => expect(e.status === 503, e.status));
}

let passed = 0, failed = 0, skipped = 0;
const run = Object.entries(ARGS.expectUnavailable ? { unavailable } : checks)
  .filter(([name]) => ARGS.only.length === 0 || ARGS.only.includes(norm(name)));
for (const [name, fn] of run) {
  try {
    const note = await fn();
    if (typeof note === 'string') {
      skipped++;
      console.log(`SKIP ${name}: ${note}`);
    } else {
      passed++;
      console.log(`PASS ${name}`);
    }
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e?.stack ?? e}`);
  }
}
console.log(`node openai ${VERSION}: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed ? 1 : 0);
