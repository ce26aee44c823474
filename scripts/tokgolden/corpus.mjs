// corpus.mjs: the texts gen.mjs tokenizes with every oracle. Each entry has a
// name (for people) and the text. Keep the texts valid UTF-16 (no lone
// surrogates): they travel through JSON and JavaScript strings.

const README = `# Tandem

Tandem is an OpenAI-compatible LLM server written in Go. It splits the HTTP
frontend from the engine core, like vLLM v1, and talks ZeroMQ + msgpack between
them.

## Quick start

\`\`\`sh
make build
./bin/tandem serve --model dummy --host 127.0.0.1 --port 8000
curl -s http://127.0.0.1:8000/v1/completions \\
  -H 'Content-Type: application/json' \\
  -d '{"model": "dummy", "prompt": "Hello", "max_tokens": 16}'
\`\`\`

## Features

- Continuous batching with chunked prefill (default budget: 2048 tokens/step).
- Paged KV cache: 16-token blocks, prefix caching, LRU eviction.
- Streaming (SSE) with \`stream_options.include_usage\`.
- Tokenizers: byte-level BPE (GPT-2, Llama-3, Qwen2/3) and SentencePiece.

| Model        | Params | Context | Notes              |
|--------------|-------:|--------:|--------------------|
| SmolLM2-135M |   135M |   8,192 | default, Q4_1      |
| Qwen3-0.6B   |   0.6B |  32,768 | thinking on/off    |

\`\`\`go
func (s *Server) handle(ctx context.Context, req *Request) error {
	if err := req.Validate(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	for i := 0; i < len(req.Messages); i++ {
		s.log.Debug("msg", "i", i, "role", req.Messages[i].Role)
	}
	return nil
}
\`\`\`

It's fast: we've measured ~1.2 ms per request on 2 cores, and you'll see
p99 < 5ms. Don't forget: I'm sure they'd rather we're done by 3:45pm!

Déjà vu — naïve café façade, Ångström, Größe, São Paulo, Kraków.
日本語のテキストも扱えます。中文也可以：你好，世界！한국어도 됩니다.
Emoji: 👋🏽 🧑‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇯🇵 — and math: ∑ x² ≤ ∞, π ≈ 3.14159.

## Configuration

Set \`TANDEM_MAX_BATCH_TOKENS=4096\` and \`TANDEM_KV_BLOCKS=1024\`; both default
to sensible values. Logs go to stderr as JSON lines:
{"level":"info","msg":"engine ready","blocks":1024,"elapsed_ms":412}

See https://github.com/tandem-llm/tandem/issues?q=is%3Aopen+label%3Abug#top
or email dev@example.com. Version 0.1.0-rc.2 (2026-11-30T10:14:00Z).
Licensed under Apache-2.0.
`;

export const CORPUS = [
  { name: "empty", text: "" },
  { name: "word", text: "Hello" },
  { name: "leading space", text: " Hello" },
  { name: "sentence", text: "Hello world! How are you today?" },
  { name: "contractions", text: "I'm sure they'd say it's what we've done, and you'll see they're right. DON'T SHOUT, IT'S RUDE." },
  { name: "contraction long s", text: "it'ſ 'Ss 'ſ" },
  { name: "numbers", text: "1 12 123 1234 12345 123456 3.14159 1,000,000 0x1F ²³ ½ ١٢٣" },
  { name: "whitespace runs", text: "a  b   c    d\t\te\n\nf \n g  \n\n  h   " },
  { name: "only spaces", text: "     " },
  { name: "tabs and newlines", text: "\t\n\t\t\n\n\r\n\r\r\n \t \n" },
  { name: "code fence", text: "latest\n```\n\n## Next" },
  { name: "code fence exact", text: "latest\n```\n\n##" },
  { name: "python", text: "def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\nprint([fib(i) for i in range(10)])  # 0, 1, 1, 2...\n" },
  { name: "javascript", text: "const x = {a: 1, 'b': [2, 3]};\nif (x?.a !== undefined && x.b.length >= 2) { console.log(`ok ${x.a}`); }\n" },
  { name: "json", text: '{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":null}' },
  { name: "cjk", text: "日本語のテキスト、中文文本和한국어 텍스트。東京都渋谷区" },
  { name: "emoji", text: "👋 🧑‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️‍🔥 🇯🇵🇺🇸 👍🏽👍🏿 😀😃😄" },
  { name: "accents composed", text: "Déjà vu, naïve café, São Paulo, Ångström, Größe, ñandú, İstanbul" },
  { name: "accents decomposed", text: "De\u0301ja\u0300 vu, nai\u0308ve cafe\u0301, A\u030Angstro\u0308m, n\u0303" },
  { name: "combining marks", text: "a\u0301\u0302\u0303 ḁ̴̵̶ Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇" },
  { name: "scripts", text: "Ελληνικά Русский עברית العربية हिन्दी தமிழ் ไทย ქართული Ꭰꮳ" },
  { name: "unicode spaces", text: "a\u00A0b\u2003c\u3000d\u200Be\u2028f\u0085g\u1680h\u202Fi" },
  { name: "url", text: "Visit https://example.com/path/to/page?query=1&x=%20y#frag or http://127.0.0.1:8000/v1/chat/completions." },
  { name: "punctuation", text: "Wait... what?! (Really) [yes] {no} <maybe> 'quoted' \"double\" «guillemets» — dash – en … ellipsis" },
  { name: "chatml", text: "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n" },
  { name: "llama3 header", text: "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n" },
  { name: "llama2 inst", text: "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello</s><s>[INST] More [/INST]" },
  { name: "specials glued", text: "x<|endoftext|>y</s>z<s><unk>w<|im_end|><|im_end|>" },
  { name: "special with spaces", text: "hello <|im_end|> world </s> end <s> start" },
  { name: "qwen added tokens", text: "<think>\nLet me think.\n</think>\n\n<tool_call>\n{\"name\": \"f\"}\n</tool_call>" },
  { name: "partial specials", text: "<|im_start <|im_end| |im_end|> <|> <||> <s <0x41> ▁hello" },
  { name: "sentencepiece chars", text: "▁▁a ▁ b▁" },
  { name: "repeated chars", text: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ==================== !!!!!!!!!!" },
  { name: "readme 2KB", text: README },
];
