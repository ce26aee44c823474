// Package chattemplate renders Jinja chat templates, the chat_template of a
// tokenizer_config.json or the tokenizer.chat_template of a GGUF, the way
// transformers' apply_chat_template does, so that a prompt matches what the
// model was trained on.
//
// The engine is github.com/nikolalohinski/gonja/v2, set up like
// transformers: trim_blocks and lstrip_blocks (applied to the source as
// @huggingface/jinja applies them), a single trailing newline dropped,
// raise_exception, strftime_now, a tojson that is Python's json.dumps (keys
// in insertion order, ", " and ": ", no HTML escaping, indent, separators,
// sort_keys, ensure_ascii), Python's str methods, insertion-ordered dict
// methods and |items and |dictsort, and Python list indexing. Conditional
// expressions nested in brackets, and method calls on parenthesized
// expressions, which gonja cannot parse, are rewritten in the source into
// equivalents it can. Templates cannot read files (include, import, extends
// are not available). As llama.cpp does, date_string and datetime hold
// today's date (UTC) unless kwargs set them, and a template that fails on
// an assistant turn's null content is rendered again with "" for it.
//
// Objects keep their key order only as Object (or json.RawMessage, decoded
// in order); Go maps are sorted by key.
//
// Known differences from transformers, all cases where this package renders
// and Python raises: "+" joins a string with any value (a list of content
// parts becomes its repr), None iterates as an empty list, an undefined
// value in "+" is an empty string, and None and undefined are the same
// (x is defined is false for a None value; None prints as "").
//
// Tests: golden files in testdata/ are written by scripts/jinjagolden/gen.mjs
// from @huggingface/jinja and Python jinja2 renders; see golden_test.go for
// TANDEM_LLAMA_CPP_SRC and TANDEM_ORACLE_NODE_MODULES.
//
// It imports frontend/tokenizer for Message and Template only, and nothing
// else from this repository; frontend/tokenizer must not import it.
//
// Usage:
//
//	tpl, err := chattemplate.New(source, chattemplate.Options{BOSToken: "<s>", EOSToken: "</s>"})
//	if err != nil { ... } // errors.Is(err, chattemplate.ErrParse)
//	prompt, err := tpl.Render(msgs, true, map[string]any{"enable_thinking": false})
//	var re *chattemplate.RaiseError
//	if errors.As(err, &re) { ... } // the template rejected the conversation: re.Message
package chattemplate
