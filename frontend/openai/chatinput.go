package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ChatInput is the chat form of the pooling routes' input, vLLM's
// EmbeddingChatRequest (and its batch), ClassificationChatRequest and
// PoolingChatRequest: messages, one conversation or a list of them, each
// rendered by the chat template into one prompt (no generation prompt by
// default, as vLLM's pooling requests; no special tokens added on top of
// the template's). vLLM also takes the conversations in input itself.
type ChatInput struct {
	Messages             json.RawMessage `json:"messages,omitempty"`
	AddGenerationPrompt  bool            `json:"add_generation_prompt,omitempty"`
	ContinueFinalMessage bool            `json:"continue_final_message,omitempty"`
	ChatTemplateKwargs   map[string]any  `json:"chat_template_kwargs,omitempty"`
	// ChatTemplate is a per-request template: refused, as for chat.
	ChatTemplate *string `json:"chat_template,omitempty"`
}

// validate checks the options that need no conversation.
func (c *ChatInput) validate() *Error {
	if c.ChatTemplate != nil {
		return BadRequest("chat_template", "A per-request 'chat_template' is not accepted; the server's template is used (start it with --chat-template to change it).")
	}
	if c.AddGenerationPrompt && c.ContinueFinalMessage {
		return BadRequest("continue_final_message", "Cannot set both 'continue_final_message' and 'add_generation_prompt' to true.")
	}
	return nil
}

// Conversations returns the conversations of messages or, without it,
// of input when input is in the chat form (an array of messages, objects
// with a role, or an array of such arrays); ok is false when neither is
// (input is then a prompt, and is not parsed here). Each conversation
// must hold messages with a role and text content only.
func (c *ChatInput) Conversations(input json.RawMessage) (convs [][]ChatMessage, ok bool, e *Error) {
	param, raw := "messages", c.Messages
	if absent(raw) {
		param, raw = "input", input
	}
	bad := func() ([][]ChatMessage, bool, *Error) {
		if param == "input" {
			return nil, false, nil // a prompt
		}
		return nil, false, BadRequest(param, "'messages' must be a non-empty array of messages, or of conversations (arrays of messages).")
	}
	batch, shaped := chatShape(raw)
	if !shaped {
		return bad()
	}
	var items []json.RawMessage
	if batch {
		if err := json.Unmarshal(raw, &items); err != nil {
			return bad()
		}
	} else {
		items = []json.RawMessage{raw}
	}
	if len(items) > MaxPrompts {
		return nil, false, BadRequest(param, "'%s' holds %d conversations; at most %d per request.", param, len(items), MaxPrompts)
	}
	convs = make([][]ChatMessage, len(items))
	for i, item := range items {
		if err := json.Unmarshal(item, &convs[i]); err != nil {
			if param == "input" && i == 0 && !batch {
				return nil, false, nil // llama-server's prompt objects, not messages
			}
			return nil, false, BadRequest(param, "Invalid conversation %d in '%s': %v", i, param, err)
		}
		if param == "input" && i == 0 && !hasRoles(convs[0]) {
			return nil, false, nil // objects without a role: llama-server's prompts
		}
		if len(convs[i]) == 0 {
			return nil, false, BadRequest(param, "Conversation %d in '%s' has no message.", i, param)
		}
		for j, m := range convs[i] {
			if e := checkMessage(m, fmt.Sprintf("%s[%d][%d]", param, i, j)); e != nil {
				return nil, false, e
			}
		}
	}
	return convs, true, nil
}

// chatShape reads the start of raw: an array whose first element is an
// object is one conversation; one whose first element is an array whose
// first element is an object, several (batch). Prompts (strings, token
// ids) have neither shape, and are told apart without parsing them.
func chatShape(raw json.RawMessage) (batch, shaped bool) {
	rest, ok := after(raw, '[')
	if !ok {
		return false, false
	}
	if _, ok := after(rest, '{'); ok {
		return false, true
	}
	if rest, ok = after(rest, '['); !ok {
		return false, false
	}
	_, ok = after(rest, '{')
	return ok, ok
}

// after returns what follows b in s once leading white space is skipped;
// ok is false when s does not start with b.
func after(s []byte, b byte) ([]byte, bool) {
	s = bytes.TrimLeft(s, " \t\r\n")
	if len(s) == 0 || s[0] != b {
		return nil, false
	}
	return s[1:], true
}

// hasRoles reports whether the first message names a role: objects
// without one are not messages.
func hasRoles(msgs []ChatMessage) bool {
	return len(msgs) > 0 && msgs[0].Role != ""
}
