#!/usr/bin/env node
// Drives a Tandem server with the Vercel AI SDK (npm `ai`, with its
// `@ai-sdk/openai-compatible` and `@ai-sdk/openai` providers and `zod`,
// installed into scripts/oracle/node_modules by `make oracle`).
//
// Usage: node test_aisdk.mjs BASE_URL MODEL
//
// Over three providers (openai-compatible's chat model, openai's chat
// model and openai's Responses model): generateText and streamText; a
// tool with toolChoice "required" whose input the SDK validates against
// its zod schema, executed, then a second step that answers in text;
// the same streamed, its parts in the SDK's order; generateObject and
// streamObject against a zod schema; and embedMany / embed. Prints one
// PASS/FAIL line per check and "N passed, M failed"; exits 1 on failure.
// cmd/tandem/e2e_structured_test.go runs it.

const modules = new URL('../oracle/node_modules/', import.meta.url);
const load = (p) => import(new URL(p, modules).href);
const { generateText, streamText, generateObject, streamObject, embed, embedMany, tool, stepCountIs } = await load('ai/dist/index.mjs');
const { createOpenAICompatible } = await load('@ai-sdk/openai-compatible/dist/index.mjs');
const { createOpenAI } = await load('@ai-sdk/openai/dist/index.mjs');
const { z } = await load('zod/index.js');

const [base, model] = process.argv.slice(2);
const compat = createOpenAICompatible({ name: 'tandem', baseURL: base + '/v1', apiKey: 'unused', supportsStructuredOutputs: true });
const oai = createOpenAI({ baseURL: base + '/v1', apiKey: 'unused' });
const providers = { 'openai-compatible': compat.chatModel(model), 'openai.chat': oai.chat(model), 'openai.responses': oai.responses(model) };
// Greedy, so that the runs repeat; no retries, so that a failure shows.
const common = { temperature: 0, maxRetries: 0 };

let calls = [];
const add = tool({
  description: 'Add two integers.',
  inputSchema: z.object({ a: z.number().int(), b: z.number().int() }),
  execute: async ({ a, b }) => { calls.push([a, b]); return a + b; },
});
const City = z.object({ city: z.string(), country: z.string() });

let passed = 0, failed = 0;
async function run(name, fn) {
  try {
    await fn();
    passed++;
    console.log('PASS', name);
  } catch (e) {
    failed++;
    console.log('FAIL', name);
    console.log(e?.stack ?? e);
  }
}
function assert(ok, what) {
  if (!ok) throw new Error('assertion failed: ' + JSON.stringify(what));
}

for (const [name, m] of Object.entries(providers)) {
  await run(`${name}: generateText`, async () => {
    const r = await generateText({ model: m, prompt: 'Say hi.', maxOutputTokens: 20, ...common });
    assert(r.text.trim() && r.usage.inputTokens > 0 && r.usage.outputTokens > 0, r.usage);
  });
  await run(`${name}: streamText`, async () => {
    const r = streamText({ model: m, prompt: 'Say hi.', maxOutputTokens: 20, ...common });
    let s = '';
    for await (const p of r.textStream) s += p;
    assert(s.trim() && ['stop', 'length'].includes(await r.finishReason), s);
  });
  await run(`${name}: a required tool, its result, the answer`, async () => {
    calls = [];
    const r = await generateText({
      model: m, prompt: 'Use the add tool to compute 20 plus 22.', tools: { add }, toolChoice: 'required',
      maxOutputTokens: 150, stopWhen: stepCountIs(3), ...common,
      prepareStep: ({ stepNumber }) => (stepNumber > 0 ? { toolChoice: 'none' } : {}),
    });
    const first = r.steps[0];
    console.log(`  step 1: ${first.toolCalls.length} calls, finish ${first.finishReason}`);
    assert(first.toolCalls.length > 0 && first.toolCalls.every((c) => !c.invalid), first.toolCalls);
    assert(first.toolResults.length === first.toolCalls.length && calls.length === first.toolCalls.length, first.toolResults);
    first.toolResults.forEach((res, i) => assert(res.output === calls[i][0] + calls[i][1], [res, calls[i]]));
    if (first.finishReason === 'tool-calls') {
      assert(r.steps.length === 2 && r.text.trim(), { steps: r.steps.length, text: r.text });
    } else { // max_tokens cut the list: the SDK stops; only whole calls came
      assert(first.finishReason === 'length', first.finishReason);
    }
  });
  await run(`${name}: a required tool, streamed`, async () => {
    calls = [];
    const r = streamText({ model: m, prompt: 'Use the add tool: 2 plus 3.', tools: { add }, toolChoice: 'required', maxOutputTokens: 150, ...common });
    const types = [];
    for await (const p of r.fullStream) {
      if (p.type === 'error' || p.type === 'tool-error') throw p.error;
      types.push(p.type);
    }
    const at = (t) => types.indexOf(t);
    assert(at('tool-input-start') >= 0 && at('tool-input-start') < at('tool-call') && at('tool-call') < at('tool-result'), types);
    assert(calls.length > 0 && types.at(-1) === 'finish', types);
  });
  await run(`${name}: generateObject`, async () => {
    const r = await generateObject({ model: m, schema: City, prompt: 'The capital of Japan and its country.', maxOutputTokens: 100, ...common });
    assert(City.safeParse(r.object).success, r.object);
  });
  await run(`${name}: streamObject`, async () => {
    const r = streamObject({ model: m, schema: City, prompt: 'The capital of Japan and its country.', maxOutputTokens: 100, ...common });
    let partials = 0;
    for await (const _ of r.partialObjectStream) partials++;
    assert(partials > 1 && City.safeParse(await r.object).success, partials);
  });
}
await run('openai-compatible: embedMany', async () => {
  const r = await embedMany({ model: compat.textEmbeddingModel(model), values: ['bread at dawn', 'a wide river'], maxRetries: 0 });
  assert(r.embeddings.length === 2 && r.embeddings[0].length > 1 && r.embeddings[0].some((x, i) => x !== r.embeddings[1][i]), r.embeddings.length);
});
await run('openai: embed', async () => {
  const r = await embed({ model: oai.embedding(model), value: 'bread at dawn', maxRetries: 0 });
  const norm = Math.sqrt(r.embedding.reduce((s, x) => s + x * x, 0));
  assert(Math.abs(norm - 1) < 1e-4, norm);
});
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
