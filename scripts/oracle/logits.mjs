// logits.mjs — llama.cpp logits oracle for Tandem's conformance tests
// (enginecore/conformance). Test tooling only, never part of the product.
//
// It runs llama.cpp's prebuilt CPU libraries through node-llama-cpp in its
// most exact configuration: no GPU, 1 thread, flash attention off, F32 KV
// cache. Token ids go in and out; nothing is tokenized unless asked.
//
// Usage: node scripts/oracle/logits.mjs < request.json > response.json
// node-llama-cpp is imported from $TANDEM_ORACLE_NODE_MODULES when set,
// else from the node_modules next to this script.
//
// Request: one JSON object on stdin, or an array of them (answered by an
// array, in order; llama.cpp starts once for all). Every field but model
// is optional; each model is loaded once per request.
//   {
//     "model":    "/path/model.gguf",
//     "prompts":  [[id, ...], ...],  // teacher-forced: next-token log-probs at every position
//     "from":     [i, ...],          // per prompt: log-probs only from position i on (default 0)
//     "topk":     20,                // how many of the oracle's top tokens to return per position
//     "probe":    [id, ...],         // ids whose log-probs are returned at every position
//     "tokenize": ["text", ...],     // tokenized with special tokens parsed, no BOS added
//     "greedy":   [{"prompt": [id, ...], "n": 32}, ...], // temperature-0 continuations
//     "embed":    [[id, ...], ...],  // llama.cpp's embedding of each (its own BOS/EOS added as it would)
//     "lora":     [{"path": "/a.gguf", "scale": 0.5}, ...], // LoRA adapters applied to every evaluation (llama_set_adapter_lora)
//     "rank":     [[id, ...], ...]   // a reranker's score of each, the tokens as given (rank pooling)
//   }
// Response (JSON on stdout):
//   {
//     "vocab":  V|null,              // entries in a next-token distribution (null without prompts)
//     "bos": id|null, "eos": id|null,
//     "prompts": [                   // one per request prompt
//       [                            // one per position i ≥ from: distribution of the token after prompt[0..i]
//         {"argmax":   id,
//          "topIds":   [id, ...],            // the topk most probable ids, most probable first
//          "topLogps": [logp|null, ...],     // their log-probs
//          "probe":    [logp|null, ...]}     // aligned with request.probe
//       ], ...
//     ],
//     "tokens": [[id, ...], ...],    // one per request.tokenize entry
//     "greedy": [                    // one per request.greedy entry
//       {"tokens": [id, ...],        // up to n ids (fewer when an end-of-generation token came)
//        "margins": [m, ...]}        // per generated token: logp(top-1) − logp(top-2), nats
//     ],
//     "embeddings": [                // one per request.embed entry (node-llama-cpp's getEmbeddingFor:
//       {"tokens": [id, ...],        //  the model's pooling_type, or the last token's hidden state
//        "vector": [x, ...]}         //  after the output norm when it has none; not normalized)
//     ],
//     "ranks": [s, ...]              // one per request.rank entry: llama.cpp's rank pooling output 0 (its
//                                    //  classification head over the pooled token; for qwen3, softmaxed over
//                                    //  the classes in the graph), sigmoid-ed by node-llama-cpp for other archs
//   }
// log-probs are natural logs of node-llama-cpp's probabilities, which are
// the float32 softmax of llama.cpp's raw logits over the whole vocabulary.
// A log-prob is null when its probability is below float32's smallest
// normal number (1.2e-38), where that softmax has lost its precision.
// Errors go to stderr with a non-zero exit status.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.TANDEM_ORACLE_NODE_MODULES || path.join(here, "node_modules");
const entry = path.join(modules, "node-llama-cpp", "dist", "index.js");
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(entry).href);

const FLT_MIN = 1.1754943508222875e-38;
const logp = (p) => (p >= FLT_MIN ? Math.log(p) : null);

// stdin read as a stream: readFileSync(0) throws EAGAIN when the pipe is
// non-blocking and the request has not all arrived yet (large requests).
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const llama = await getLlama({
    gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
    maxThreads: 1, logLevel: LlamaLogLevel.error, progressLogs: false,
});
const answers = [];
for (const req of Array.isArray(input) ? input : [input]) answers.push(await answer(req));
process.stdout.write(JSON.stringify(Array.isArray(input) ? answers : answers[0]));
await llama.dispose();

async function answer(req) {
    if (typeof req.model !== "string") throw new Error("logits.mjs: request has no model path");
    const prompts = req.prompts ?? [], probe = req.probe ?? [], greedy = req.greedy ?? [];
    const topk = Math.max(req.topk ?? 20, 1);
    const model = await llama.loadModel({ modelPath: req.model, gpuLayers: 0 });
    const longest = Math.max(16, ...prompts.map((p) => p.length), ...greedy.map((g) => g.prompt.length + g.n + 1));
    const context = await model.createContext({
        contextSize: longest, batchSize: longest, sequences: 1, threads: 1,
        flashAttention: false, experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
        ...(req.lora?.length ? { lora: { adapters: req.lora.map((a) => ({ filePath: a.path, scale: a.scale ?? 1 })) } } : {}),
    });
    const seq = context.getSequence();
    const out = { vocab: null, bos: model.tokens.bos ?? null, eos: model.tokens.eos ?? null, prompts: [], tokens: [], greedy: [] };

    for (const [k, prompt] of prompts.entries()) {
        await seq.clearHistory();
        const from = req.from?.[k] ?? 0;
        const res = await seq.controlledEvaluate(prompt.map((t, i) => (i < from ? t : [t, { generateNext: { probabilities: true } }])));
        out.prompts.push(res.slice(from).map((r, i) => {
            const probs = r?.next?.probabilities;
            if (!probs) throw new Error(`logits.mjs: ${req.model}: no probabilities at position ${i}`);
            out.vocab = probs.size;
            const topIds = [], topLogps = [];
            for (const [id, p] of probs) { // sorted, most probable first
                if (topIds.length >= topk) break;
                topIds.push(id);
                topLogps.push(logp(p));
            }
            return { argmax: topIds[0], topIds, topLogps, probe: probe.map((id) => logp(probs.get(id) ?? 0)) };
        }));
    }

    for (const text of req.tokenize ?? []) out.tokens.push(Array.from(model.tokenize(text, true)));

    for (const g of greedy) {
        await seq.clearHistory();
        const tokens = [], margins = [];
        for await (const r of seq.evaluateWithMetadata(g.prompt, { probabilities: true }, { temperature: 0 })) {
            const it = r.probabilities.values();
            const p1 = it.next().value, p2 = it.next().value ?? 0;
            tokens.push(r.token);
            margins.push(p2 > 0 ? Math.log(p1) - Math.log(p2) : 1e9);
            if (tokens.length >= g.n) break;
        }
        out.greedy.push({ tokens, margins });
    }

    await context.dispose();
    if (req.embed?.length) {
        const longestEmbed = Math.max(16, ...req.embed.map((p) => p.length + 2));
        const ectx = await model.createEmbeddingContext({ contextSize: longestEmbed, batchSize: longestEmbed, threads: 1 });
        out.embeddings = [];
        for (const prompt of req.embed) {
            const tokens = [...prompt];
            ectx._prepareInput(tokens); // the tokens llama.cpp evaluates: BOS and EOS as its tokenizer would add them
            const e = await ectx.getEmbeddingFor(prompt);
            out.embeddings.push({ tokens, vector: Array.from(e.vector) });
        }
        await ectx.dispose();
    }
    if (req.rank?.length) {
        const longestRank = Math.max(16, ...req.rank.map((p) => p.length + 1));
        const rctx = await model.createRankingContext({ contextSize: longestRank, batchSize: longestRank, threads: 1 });
        out.ranks = [];
        for (const prompt of req.rank) {
            out.ranks.push(await rctx._evaluateRankingForInput(prompt)); // exactly these tokens, no template
        }
        await rctx.dispose();
    }
    await model.dispose();
    return out;
}
