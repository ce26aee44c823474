// Package structured is the engine core's constrained decoding: a
// request's structured-output constraint (a JSON Schema, any JSON object,
// a regular expression, a choice of strings, a Lark grammar) compiled
// against the model's vocabulary into a token matcher, which says before
// every sampling step which tokens may come next (a bitmask over the
// vocabulary) and advances with the token sampled.
//
// The matcher is LLGuidance (github.com/guidance-ai/llguidance, MIT), the
// engine behind vLLM's "guidance" backend, SGLang's and llama.cpp's
// structured outputs, linked through cgo as a static library that
// scripts/llguidance.sh builds with cargo from crates.io (the crate in
// llg/ only re-exports it; nothing is vendored). See docs/wire.md for the
// constraint on the wire and docs/api.md for the API fields.
//
// A [Vocab] is built once per model from each token's bytes (special
// tokens are marked so that no constraint can produce their text); a
// [Matcher] is one request's state, used by one goroutine at a time.
//
// Usage:
//
//	v, err := structured.NewVocab(tokens, special, eos)
//	m, err := v.Compile(structured.Constraint{Kind: structured.JSONSchema, Data: schema})
//	mask := make([]uint32, v.MaskWords())
//	for !m.Done() {
//		err = m.FillMask(mask) // bit t of mask: token t allowed
//		tok := sample(logits, mask)
//		err = m.Accept(tok)
//	}
package structured
