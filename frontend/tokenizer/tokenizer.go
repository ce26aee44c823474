package tokenizer

// Tokenizer converts between text and token ids. Implementations are
// immutable after construction and safe for concurrent use. Slices passed in
// are not retained; returned slices belong to the caller.
type Tokenizer interface {
	// Encode returns the ids of text. Special-token strings in text (such as
	// "<|im_start|>") become their ids, as Hugging Face tokenizers do for a
	// rendered chat prompt. addSpecial prepends BOS when the model has one.
	Encode(text string, addSpecial bool) []int32
	// Decode returns the text of ids, byte for byte: it does not repair
	// invalid UTF-8 (use package detok for display text). skipSpecial drops
	// special tokens. Ids outside the vocabulary are skipped.
	Decode(ids []int32, skipSpecial bool) string
	// TokenBytes returns the raw bytes a token stands for (for special
	// tokens, their text) and whether id is in the vocabulary. The caller
	// must not modify the returned slice.
	TokenBytes(id int32) ([]byte, bool)
	// IsSpecial reports whether id is a special (control) token.
	IsSpecial(id int32) bool
	// VocabSize returns the number of token ids, [0, VocabSize).
	VocabSize() int
	// BOS returns the beginning-of-sequence id, if the model has one.
	BOS() (int32, bool)
	// EOS returns the ids that end generation (at least one).
	EOS() []int32
	// ChatTemplate returns the template that renders chat messages.
	ChatTemplate() Template
}

// Message is one chat message as the template sees it.
type Message struct {
	Role    string
	Content string
}

// Template renders chat messages to a prompt string, which is then encoded
// with Encode(prompt, addSpecial).
type Template interface {
	// Render renders msgs. addGenerationPrompt appends the header of an
	// assistant turn. kwargs are template variables (chat_template_kwargs);
	// templates ignore keys they do not use. It returns an error for an
	// empty msgs or a message the template cannot render.
	Render(msgs []Message, addGenerationPrompt bool, kwargs map[string]any) (string, error)
}
