// Package toolparse reads tool calls out of a model's free text, as vLLM's
// --tool-call-parser does for tool_choice "auto": the model writes calls in
// its own syntax (Hermes/Qwen <tool_call> JSON, Llama 3 JSON, Mistral
// [TOOL_CALLS], pythonic lists, Granite's <|tool_call|> and Phi-4-mini's
// functools lists, gpt-oss's harmony messages to functions (openai),
// Qwen3-Coder's XML with values typed by
// the tools' schemas: ParamTypes, Format.NewTyped) and the server
// returns them as OpenAI tool_calls.
//
// It is a pure core: no I/O, no clock, no randomness (the server names the
// calls). It imports nothing from this repository, and the server is its
// only consumer.
//
// A Parser reads one choice's text as it arrives and returns, for each
// piece, the text outside calls (content) and the calls' deltas in the
// shape OpenAI streams them: a call's first delta carries its name, the
// later ones fragments of its arguments. Extract runs a Parser over a whole
// text, so streamed and whole answers agree by construction, wherever the
// text is split (FuzzSplit checks it).
//
// The rules every format follows:
//
//   - Only a call of a declared tool counts; a call of another name, or
//     text that does not parse as a call, stays content (nothing the model
//     wrote is lost).
//   - A call counts from the moment its tool's name is read and accepted
//     (for JSON formats, before its arguments are complete, so they stream).
//     If the text then stops being a call (a syntax error, or the end of the
//     text: max_tokens), the call keeps the arguments read so far and the
//     rest is content again.
//   - Arguments are JSON objects in compact form: the model's JSON with the
//     whitespace outside strings removed, strings byte for byte as written
//     (json.Compact); a pythonic call's arguments are its literals as JSON.
//     A call without arguments gets "{}".
//   - Whitespace that only separates calls from content or from each other
//     is not content: "Sure.\n<tool_call>…" has content "Sure.".
//
// Usage:
//
//	f, err := toolparse.Lookup("hermes") // or toolparse.Detect(templateSource)
//	p := f.New([]string{"get_weather"})
//	for piece := range pieces {
//		d := p.Push(piece) // d.Content, d.Calls: send them
//	}
//	d := p.Finish() // what was held back
//
// or, for a whole answer, content, calls, ok := f.Extract(text, tools).
//
// Named and Required are the Parsers of forced answers (tool_choice a
// named function or "required"), JSON that a constraint shapes rather
// than a model's syntax; they stream calls the same way, so forced calls
// stream as they are generated too.
package toolparse
