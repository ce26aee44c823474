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
	// llama.cpp server's fields: content is the text (as prompt, but
	// without special tokens unless add_special), with_pieces answers
	// tokens as {"id", "piece"} objects.
	Content    *string `json:"content,omitempty"`
	AddSpecial *bool   `json:"add_special,omitempty"`
	WithPieces bool    `json:"with_pieces,omitempty"`
}

// Validate checks that exactly one of prompt (or llama.cpp's content)
// and messages is given.
func (r *TokenizeRequest) Validate() *Error {
	switch {
	case r.Content != nil && r.Prompt != nil:
		return BadRequest("content", "Give either 'prompt' or 'content', not both.")
	case r.Content != nil && r.Messages != nil:
		return BadRequest("messages", "Give either 'content' or 'messages', not both.")
	case r.Content != nil:
		return nil
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

// TokenPiece is one token of a with_pieces answer (llama.cpp's shape):
// Piece is the token's text, or its bytes as a list of numbers when they
// are not valid UTF-8 on their own.
type TokenPiece struct {
	ID    int32 `json:"id"`
	Piece any   `json:"piece"`
}

// TokenizePiecesResponse is POST /tokenize's answer with with_pieces.
type TokenizePiecesResponse struct {
	Count       int          `json:"count"`
	MaxModelLen int          `json:"max_model_len"`
	Tokens      []TokenPiece `json:"tokens"`
}

// DetokenizeRequest is the body of POST /detokenize.
type DetokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int32 `json:"tokens"`
}

// DetokenizeResponse is the answer of POST /detokenize: vLLM's prompt,
// and llama.cpp's content (the same text) when the request names no
// model, as llama.cpp's requests do not.
type DetokenizeResponse struct {
	Prompt  string  `json:"prompt"`
	Content *string `json:"content,omitempty"`
}
