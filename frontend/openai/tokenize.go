package openai

import "encoding/json"

// TokenizeRequest is the body of POST /tokenize, in either of vLLM's two
// forms: a prompt (completions style) or messages (chat style, rendered
// with the chat template first).
type TokenizeRequest struct {
	Model                string          `json:"model"`
	Prompt               *string         `json:"prompt,omitempty"`
	Messages             []ChatMessage   `json:"messages,omitempty"`
	AddSpecialTokens     *bool           `json:"add_special_tokens,omitempty"`    // nil = true for prompt, false for messages
	AddGenerationPrompt  *bool           `json:"add_generation_prompt,omitempty"` // messages only; nil = true unless continue_final_message
	ContinueFinalMessage bool            `json:"continue_final_message,omitempty"`
	ChatTemplateKwargs   map[string]any  `json:"chat_template_kwargs,omitempty"`
	Tools                json.RawMessage `json:"tools,omitempty"`
	ReturnTokenStrs      bool            `json:"return_token_strs,omitempty"`
}

// Validate checks that exactly one of prompt and messages is given.
func (r *TokenizeRequest) Validate() *Error {
	switch {
	case r.Prompt == nil && r.Messages == nil:
		return BadRequest("prompt", "Either 'prompt' or 'messages' is required.")
	case r.Prompt != nil && r.Messages != nil:
		return BadRequest("messages", "Give either 'prompt' or 'messages', not both.")
	case r.Messages != nil:
		chat := ChatCompletionRequest{Messages: r.Messages, AddGenerationPrompt: r.AddGenerationPrompt, ContinueFinalMessage: r.ContinueFinalMessage}
		return chat.Validate()
	}
	return nil
}

// ChatRequest returns the chat request whose prompt a messages form
// tokenizes.
func (r *TokenizeRequest) ChatRequest() *ChatCompletionRequest {
	return &ChatCompletionRequest{
		Params:   Params{Model: r.Model, AddSpecialTokens: r.AddSpecialTokens},
		Messages: r.Messages, AddGenerationPrompt: r.AddGenerationPrompt,
		ContinueFinalMessage: r.ContinueFinalMessage, ChatTemplateKwargs: r.ChatTemplateKwargs, Tools: r.Tools,
	}
}

// TokenizeResponse is the answer of POST /tokenize.
type TokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int32  `json:"tokens"`
	TokenStrs   []string `json:"token_strs"` // null unless return_token_strs
}

// DetokenizeRequest is the body of POST /detokenize.
type DetokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int32 `json:"tokens"`
}

// DetokenizeResponse is the answer of POST /detokenize.
type DetokenizeResponse struct {
	Prompt string `json:"prompt"`
}
