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
// (input is then a prompt). Each conversation must hold messages with a
// role and text content only.
func (c *ChatInput) Conversations(input json.RawMessage) (convs [][]ChatMessage, ok bool, e *Error) {
	param, raw := "messages", c.Messages
	if absent(raw) {
		param, raw = "input", input
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		if param == "messages" {
			return nil, false, BadRequest(param, "'messages' must be a non-empty array of messages, or of conversations (arrays of messages).")
		}
		return nil, false, nil
	}
	switch first := bytes.TrimSpace(items[0]); {
	case len(first) > 0 && first[0] == '{':
		if param == "input" && !hasRole(first) {
			return nil, false, nil // llama-server's prompt objects, not a message
		}
		items = []json.RawMessage{raw} // one conversation
	case len(first) > 0 && first[0] == '[':
		var inner []json.RawMessage
		if err := json.Unmarshal(first, &inner); err != nil || len(inner) == 0 || !hasRole(inner[0]) {
			if param == "messages" {
				return nil, false, BadRequest(param, "'messages' must be a non-empty array of messages, or of conversations (arrays of messages).")
			}
			return nil, false, nil // arrays of token ids or strings
		}
	default:
		if param == "messages" {
			return nil, false, BadRequest(param, "'messages' must be a non-empty array of messages, or of conversations (arrays of messages).")
		}
		return nil, false, nil
	}
	if len(items) > MaxPrompts {
		return nil, false, BadRequest(param, "'%s' holds %d conversations; at most %d per request.", param, len(items), MaxPrompts)
	}
	convs = make([][]ChatMessage, len(items))
	for i, item := range items {
		if err := json.Unmarshal(item, &convs[i]); err != nil {
			return nil, false, BadRequest(param, "Invalid conversation %d in '%s': %v", i, param, err)
		}
		if len(convs[i]) == 0 {
			return nil, false, BadRequest(param, "Conversation %d in '%s' has no message.", i, param)
		}
		for j, m := range convs[i] {
			if m.Role == "" {
				return nil, false, BadRequest(param, "Message %d of conversation %d in '%s' has no role.", j, i, param)
			}
			for _, p := range m.Content.Parts {
				if p.Type != "text" {
					return nil, false, BadRequest(param, "%s", fmt.Sprintf("Content part type %q is not supported; only \"text\" is.", p.Type))
				}
			}
		}
	}
	return convs, true, nil
}

// hasRole reports whether a JSON object has a "role" member.
func hasRole(obj json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return false
	}
	_, ok := m["role"]
	return ok
}
