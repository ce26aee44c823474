package tokenizer

import (
	"errors"
	"fmt"
)

// ErrNoTemplate is wrapped (with ErrTemplate) by the template a BPE returns
// when the model has a chat template source that was never compiled with
// SetChatTemplate: rendering ChatML in its place would silently build the
// wrong prompt.
var ErrNoTemplate = errors.New("tokenizer: the model's chat template was not set (SetChatTemplate)")

// tmplBox holds a Template for atomic.Pointer.
type tmplBox struct{ t Template }

// ChatTemplateSource returns the model's Jinja chat template
// (tokenizer.chat_template, or chat_template of tokenizer_config.json), or ""
// when it has none.
func (t *BPE) ChatTemplateSource() string { return t.chatSource }

// SetChatTemplate sets the template ChatTemplate returns, normally the
// compiled ChatTemplateSource. It is safe to call concurrently with use.
func (t *BPE) SetChatTemplate(tmpl Template) { t.tmpl.Store(&tmplBox{t: tmpl}) }

// ChatTemplate implements Tokenizer. It returns the template given to
// SetChatTemplate; before that, ChatML when the model has no template source,
// and otherwise a template whose Render fails with ErrNoTemplate.
func (t *BPE) ChatTemplate() Template {
	if b := t.tmpl.Load(); b != nil {
		return b.t
	}
	if t.chatSource == "" {
		return ChatML{}
	}
	return missingTemplate{}
}

// missingTemplate stands in for a template source that was not compiled.
type missingTemplate struct{}

func (missingTemplate) Render([]Message, bool, map[string]any) (string, error) {
	return "", fmt.Errorf("%w: %w", ErrTemplate, ErrNoTemplate)
}
