// Package tokenizer turns text into token ids and back, and renders chat
// messages into a prompt string.
//
// [Tokenizer] is the interface the server consumes; [Template] renders chat
// messages. This package provides the byte-level tokenizer of the `dummy` model
// ([NewByte]) and its ChatML template. Later additions (byte-level BPE,
// SentencePiece BPE, Jinja templates) implement the same two interfaces.
//
// The dummy vocabulary matches the engine's dummy model exactly:
//
//	0..255    the raw bytes 0x00..0xFF
//	256       <|begin_of_text|>   BOS, prepended when addSpecial
//	257       <|end_of_text|>     EOS
//	258       <|im_start|>
//	259       <|im_end|>          also EOS
//	260..319  <|reserved_N|>      N = id-260
//	          vocabulary size 320
//
// The package is pure: it imports neither echo nor anything from enginecore,
// gpu or wire.
//
// Usage:
//
//	tok := tokenizer.NewByte()
//	prompt, err := tok.ChatTemplate().Render(msgs, true, nil)
//	if err != nil { … }
//	ids := tok.Encode(prompt, true) // [BOS, <|im_start|>, 'u', 's', …]
//	text := tok.Decode(ids, true)   // prompt without special tokens
package tokenizer
