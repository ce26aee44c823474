package tokenizer

import (
	"fmt"
	"strings"
)

// ChatML is the ChatML chat template, written in Go:
//
//	<|im_start|>{role}\n{content}<|im_end|>\n   for each message
//	<|im_start|>assistant\n                     when addGenerationPrompt
//
// Roles must be system, user, assistant, tool or developer. kwargs are
// ignored.
type ChatML struct{}

var _ Template = ChatML{}

// chatRoles are the roles ChatML accepts.
var chatRoles = map[string]bool{
	"system": true, "user": true, "assistant": true, "tool": true, "developer": true,
}

// Render implements Template.
func (ChatML) Render(msgs []Message, addGenerationPrompt bool, _ map[string]any) (string, error) {
	if len(msgs) == 0 {
		return "", fmt.Errorf("%w: messages must not be empty", ErrTemplate)
	}
	var b strings.Builder
	for i, m := range msgs {
		if !chatRoles[m.Role] {
			return "", fmt.Errorf("%w: messages[%d] has unknown role %q (want system, user, assistant, tool or developer)", ErrTemplate, i, m.Role)
		}
		b.WriteString("<|im_start|>")
		b.WriteString(m.Role)
		b.WriteByte('\n')
		b.WriteString(m.Content)
		b.WriteString("<|im_end|>\n")
	}
	if addGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String(), nil
}
