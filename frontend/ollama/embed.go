package ollama

import (
	"encoding/json"
	"fmt"
)

// EmbedRequest is POST /api/embed's body.
type EmbedRequest struct {
	Model string `json:"model"`
	// Input is a string or an array of strings: one embedding each.
	Input json.RawMessage `json:"input"`
	// Truncate (default true) cuts an input longer than the context to
	// fit; false makes it an error.
	Truncate   *bool           `json:"truncate,omitempty"`
	Dimensions int             `json:"dimensions,omitempty"` // keep the first n values (0: all)
	Options    json.RawMessage `json:"options,omitempty"`    // accepted, not read
	KeepAlive  json.RawMessage `json:"keep_alive,omitempty"` // accepted, not read
}

// Inputs returns Input as a list: a string is one input. Missing or
// empty is an error, as Ollama's.
func (r *EmbedRequest) Inputs() ([]string, error) {
	if len(r.Input) == 0 || string(r.Input) == "null" {
		return nil, fmt.Errorf("invalid input: input is required")
	}
	var one string
	if err := json.Unmarshal(r.Input, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(r.Input, &many); err != nil {
		return nil, fmt.Errorf("invalid input type: want a string or an array of strings")
	}
	if len(many) == 0 {
		return nil, fmt.Errorf("invalid input: input is empty")
	}
	return many, nil
}

// EmbedResponse is /api/embed's answer: L2-normalized embeddings, in
// input order.
type EmbedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	TotalDuration   int64       `json:"total_duration"` // ns
	LoadDuration    int64       `json:"load_duration"`  // ns
	PromptEvalCount int         `json:"prompt_eval_count"`
}

// EmbeddingsRequest is the older POST /api/embeddings' body: one prompt.
type EmbeddingsRequest struct {
	Model     string          `json:"model"`
	Prompt    string          `json:"prompt"`
	Options   json.RawMessage `json:"options,omitempty"`
	KeepAlive json.RawMessage `json:"keep_alive,omitempty"`
}

// EmbeddingsResponse is /api/embeddings' answer: the embedding as the
// model computes it, not normalized (as Ollama's).
type EmbeddingsResponse struct {
	Embedding []float32 `json:"embedding"`
}
