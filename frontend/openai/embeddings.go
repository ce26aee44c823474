package openai

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
)

// ObjectEmbedding is each item of an embeddings response.
const ObjectEmbedding = "embedding"

// EmbeddingRequest is POST /v1/embeddings: OpenAI's fields (input,
// model, encoding_format, dimensions, user) and vLLM's (normalize,
// truncate_prompt_tokens, add_special_tokens, priority, request_id,
// cache_salt, session_id through Params).
type EmbeddingRequest struct {
	Params
	// Input is a string, an array of strings, an array of token ids or
	// an array of arrays of them, as a completion's prompt: one
	// embedding each, in order.
	Input Prompt `json:"input"`
	// EncodingFormat is "float" (the default: arrays of numbers) or
	// "base64" (the little-endian float32 bytes, base64: what the OpenAI
	// Python SDK asks for unless told otherwise, and decodes itself).
	EncodingFormat string `json:"encoding_format,omitempty"`
	// Dimensions keeps each embedding's first n values, normalized again
	// (Matryoshka: meaningful for models trained so, such as
	// Qwen3-Embedding); nil = all of them.
	Dimensions *int `json:"dimensions,omitempty"`
	// Normalize (vLLM's; default true) L2-normalizes each embedding.
	Normalize *bool `json:"normalize,omitempty"`
}

// Validate checks what needs no model: a non-empty input, an encoding
// format and positive dimensions.
func (r *EmbeddingRequest) Validate() *Error {
	p := r.Input
	if p.Kind == PromptNone || p.Len() == 0 {
		return BadRequest("input", "'input' must be a non-empty string, array of strings, or array of token ids.")
	}
	if n := p.Len(); n > MaxPrompts {
		return BadRequest("input", "'input' holds %d inputs; at most %d per request.", n, MaxPrompts)
	}
	for i, t := range p.Texts {
		if t == "" {
			return BadRequest("input", "input %d is an empty string.", i)
		}
	}
	for i, ids := range p.Tokens {
		if len(ids) == 0 {
			return BadRequest("input", "input %d is an empty array of token ids.", i)
		}
	}
	switch r.EncodingFormat {
	case "", "float", "base64":
	default:
		return BadRequest("encoding_format", "'encoding_format' must be 'float' or 'base64', got %q.", r.EncodingFormat)
	}
	if r.Dimensions != nil && *r.Dimensions < 1 {
		return BadRequest("dimensions", "'dimensions' must be at least 1, got %d.", *r.Dimensions)
	}
	return r.Params.validate()
}

// NormalizeOrDefault is normalize, default true.
func (r *EmbeddingRequest) NormalizeOrDefault() bool { return r.Normalize == nil || *r.Normalize }

// EmbeddingResponse is the embeddings endpoint's answer.
type EmbeddingResponse struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"` // "list"
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Data    []Embedding `json:"data"`
	Usage   Usage       `json:"usage"`
}

// Embedding is one input's embedding.
type Embedding struct {
	Index  int    `json:"index"`
	Object string `json:"object"` // "embedding"
	// Embedding is a JSON array of numbers, or with base64 encoding a
	// string of the little-endian float32 bytes.
	Embedding json.RawMessage `json:"embedding"`
}

// EncodeEmbedding writes v as encoding_format asks: a JSON array of
// float32s (each in its shortest form), or base64 of their bytes. A NaN
// or infinity, which JSON cannot hold, is an error.
func EncodeEmbedding(v []float32, format string) (json.RawMessage, error) {
	if format == "base64" {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return json.Marshal(base64.StdEncoding.EncodeToString(b))
	}
	if v == nil {
		v = []float32{}
	}
	return json.Marshal(v)
}
