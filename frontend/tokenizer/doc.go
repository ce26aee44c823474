// Package tokenizer turns text into token ids and back, and renders chat
// messages into a prompt string.
//
// [Tokenizer] is the interface the server consumes; [Template] renders chat
// messages. Two implementations:
//
//   - [NewByte]: the byte-level tokenizer of the `dummy` model, with ChatML.
//   - [BPE]: the tokenizers of real models, built by [FromGGUF] (the
//     tokenizer.* keys of a GGUF file, through the [Metadata] interface) or
//     [FromHFDir] / [Load] (tokenizer.json, tokenizer_config.json,
//     generation_config.json). Byte-level BPE (GPT-2, Llama-3, Qwen2/3,
//     SmolLM, …) and SentencePiece BPE with byte fallback (Llama-2, Mistral,
//     Phi-3).
//
// # How BPE encodes
//
//  1. Added tokens are split out first (leftmost, longest): special tokens
//     only with EncodeOptions.ParseSpecial (Encode sets it, as HF encode
//     does; llama.cpp's parse_special=false leaves it unset), user-defined
//     ones always.
//  2. Each piece of text between them is normalized (NFC, Prepend ▁,
//     Replace " " → ▁, …) and cut into words by the pre-tokenizer: the split
//     regex named by tokenizer.ggml.pre or given in tokenizer.json. The
//     GPT-2, Llama-3, Qwen2 and Qwen3.5 regexes run as hand-written scanners
//     (checked against regexp2 by FuzzScannersMatchRegex); others run on
//     github.com/dlclark/regexp2, which has the lookahead they need.
//  3. Each word is merged: by merge rank with a priority queue (HF BPE,
//     llama.cpp gpt2), or by token score (llama.cpp SentencePiece, "llama").
//     Results are cached per word.
//
// Decode is byte-exact: byte-level tokens map back to their bytes, <0xNN>
// tokens to their byte, ▁ to a space, and a SentencePiece tokenizer that
// prefixes text with a space drops one leading space (HF Strip/Metaspace).
// TokenBytes gives the same bytes per token for incremental detokenization
// (package detok); there ▁ stays a space, so the first token of a
// SentencePiece continuation keeps its leading space.
//
// Tested against llama.cpp's vocab GGUFs and test vectors and against HF
// tokenizers: see golden_test.go and scripts/tokgolden/gen.mjs.
//
// Known differences: overlapping added tokens are matched leftmost-longest
// (HF) where llama.cpp matches the longest anywhere first; llama.cpp's
// per-model attribute hacks are reproduced only for Phi-3 (rstrip) and the
// control-token promotions by text; HF added tokens marked normalized are
// matched on the raw text.
//
// The package is pure: it imports neither echo nor anything from enginecore
// or gpu; of this repository it imports only wire/gguf (the file format) to
// read a GGUF file's tokenizer metadata in Load.
//
// Usage:
//
//	tok, err := tokenizer.FromHFDir("/models/Qwen3-0.6B") // or FromGGUF(ggufFile)
//	if err != nil { … }
//	tok.SetChatTemplate(compiled) // the Jinja template of tok.ChatTemplateSource()
//	prompt, err := tok.ChatTemplate().Render(msgs, true, nil)
//	ids := tok.Encode(prompt, false)  // special-token text becomes special ids
//	text := tok.Decode(ids, true)     // without special tokens
package tokenizer
