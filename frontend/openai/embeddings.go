package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
)

// ObjectEmbedding is each item of an embeddings response.
const ObjectEmbedding = "embedding"

// EmbeddingRequest is POST /v1/embeddings: OpenAI's fields (input,
// model, encoding_format, dimensions, user), vLLM's (normalize,
// truncate_prompt_tokens, add_special_tokens, priority, request_id,
// cache_salt, session_id through Params) and llama-server's (content,
// embd_normalize).
type EmbeddingRequest struct {
	Params
	// Input is a string, an array of strings, an array of token ids or
	// an array of arrays of them, as a completion's prompt: one
	// embedding each, in order. llama-server's forms read too: an array
	// mixing token ids and strings is one input, and an array of such
	// arrays several (the server parses it, frontend/llamacpp.Prompts).
	Input json.RawMessage `json:"input"`
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
	// EmbdNormalize (llama-server's; it wins over Normalize) is the norm
	// each embedding is divided by: -1 none, 0 the largest magnitude
	// over 32760 (an int16 range), p > 0 the p-norm (2: euclidean).
	EmbdNormalize *int `json:"embd_normalize,omitempty"`
	// Content is llama-server's name for Input, read when Input is
	// absent.
	Content json.RawMessage `json:"content"`
	// ChatInput is vLLM's chat form: messages (or input) holding
	// conversations, one embedding each.
	ChatInput
}

// Validate checks what needs no model: an input (or content), an
// encoding format and positive dimensions.
func (r *EmbeddingRequest) Validate() *Error {
	if absent(r.Input) {
		r.Input, r.Content = r.Content, nil
	}
	if absent(r.Input) && absent(r.Messages) {
		return BadRequest("input", "'input' (or 'content', or 'messages') must be a string, an array of strings, an array of token ids, or conversations.")
	}
	if e := r.ChatInput.validate(); e != nil {
		return e
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

// absent reports whether a JSON value is missing or null.
func absent(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// EngineNormalizes reports whether the engine L2-normalizes the
// embeddings: normalize (default true), unless embd_normalize asks for
// another norm, which NormalizeEmbedding applies here.
func (r *EmbeddingRequest) EngineNormalizes() bool {
	if r.EmbdNormalize != nil {
		return *r.EmbdNormalize == 2
	}
	return r.Normalize == nil || *r.Normalize
}

// NormalizeEmbedding divides v, in place, by llama-server's embd_normalize
// norm p: -1 none, 0 the largest magnitude over 32760, p > 0 the p-norm.
// A zero norm leaves zeros. Sums are float64, as llama.cpp's.
func NormalizeEmbedding(v []float32, p int) {
	var sum float64
	switch {
	case p < 0:
		return
	case p == 0:
		for _, x := range v {
			sum = max(sum, math.Abs(float64(x)))
		}
		sum /= 32760
	default:
		for _, x := range v {
			sum += math.Pow(math.Abs(float64(x)), float64(p))
		}
		sum = math.Pow(sum, 1/float64(p))
	}
	inv := 0.0
	if sum > 0 {
		inv = 1 / sum
	}
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}

// List is the answer of the pooling routes (embeddings, /score,
// /classify, /pooling): one item per input or pair, in order, and the
// prompt tokens computed.
type List[T any] struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "list"
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Data    []T    `json:"data"`
	Usage   Usage  `json:"usage"`
}

// NewList is a List of n items for model, created at created (unix
// seconds).
func NewList[T any](id, model string, created int64, n int) List[T] {
	return List[T]{ID: id, Object: ObjectList, Created: created, Model: model, Data: make([]T, n)}
}

// EmbeddingResponse is the embeddings endpoint's answer.
type EmbeddingResponse = List[Embedding]

// Embedding is one input's embedding.
type Embedding struct {
	Index  int    `json:"index"`
	Object string `json:"object"` // "embedding"
	// Embedding is a JSON array of numbers, or with base64 encoding a
	// string of the little-endian float32 bytes.
	Embedding json.RawMessage `json:"embedding"`
}

// Base64Embedding is v's little-endian float32 bytes in base64, as the
// OpenAI SDKs (encoding_format base64) and Cohere's (embedding type
// base64) decode them.
func Base64Embedding(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// EncodeEmbedding writes v as encoding_format asks: a JSON array of
// float32s (each in its shortest form), or base64 of their bytes. A NaN
// or infinity, which JSON cannot hold, is an error.
func EncodeEmbedding(v []float32, format string) (json.RawMessage, error) {
	if format == "base64" {
		return json.Marshal(Base64Embedding(v))
	}
	if v == nil {
		v = []float32{}
	}
	return json.Marshal(v)
}
