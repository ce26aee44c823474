package runner

import (
	"context"
	"github.com/tandem-llm/tandem/enginecore/model"

	"github.com/tandem-llm/tandem/enginecore/lora"
)

// Dimension glossary: T = tokens in one step (all requests together),
// S = sequences (requests) in the step, L = layers, V = vocab size,
// Hkv = KV heads, D = head dim, B = block size (tokens per KV block).

// Step is one batched forward pass: prefill chunks and decode tokens of
// many requests, laid out back to back.
type Step struct {
	TokenIDs    []int32 // [T] input token ids
	Positions   []int32 // [T] absolute position of each token in its sequence
	SlotMapping []int32 // [T] KV slot to write token t's K/V into: block*B + offset
	Seqs        []Seq   // [S] which tokens belong to which request
	// Hidden receives, for each Seq in order, the hidden states of its
	// HiddenRows after the model's final norm: [Σ rows][Dim], rows packed
	// in token order (embeddings). Only its first Σ rows·Dim values are
	// written; nil when no Seq asks.
	Hidden []float32
}

// HiddenRows says which tokens of a Seq's span get hidden-state rows.
type HiddenRows uint8

const (
	HiddenNone HiddenRows = iota // none
	HiddenLast                   // the span's last token
	HiddenAll                    // every token of the span, in order
)

// Seq is one request's span in a Step.
type Seq struct {
	Start      int     // first index into Step.TokenIDs
	Len        int     // number of tokens of this request in the step (≥ 1)
	ContextLen int     // tokens of this request in the KV cache after the step (positions 0..ContextLen-1)
	BlockTable []int32 // [ceil(ContextLen/B)] physical KV block ids, in position order
	Logits     bool    // whether the caller wants logits for this request's last token
	// AllLogits asks for logits at every token of the span, in order, not
	// only at the last (prompt logprobs); it implies Logits.
	AllLogits bool
	// LastRows, with Logits, asks for rows at the span's last LastRows
	// tokens rather than only the last (0 or 1: the last): a speculative
	// step verifying LastRows-1 draft tokens.
	LastRows  int
	PromptLen int // positions below this are the request's prompt (0: unknown; the CPU backend computes prompt tokens more precisely, see cpu.Precision)
	// Hidden asks for hidden-state rows (Step.Hidden) at its tokens, as
	// well as or instead of logits.
	Hidden HiddenRows
	// LoRA are the adapters applied to this request's tokens (none: the
	// base model). A backend that cannot apply them refuses the step.
	LoRA []lora.Use
}

// HiddenRowsOf returns which tokens of s get hidden-state rows: indices
// [first, first+n) into Step.TokenIDs.
func (s *Seq) HiddenRowsOf() (first, n int) {
	switch s.Hidden {
	case HiddenAll:
		return s.Start, s.Len
	case HiddenLast:
		return s.Start + s.Len - 1, 1
	}
	return 0, 0
}

// LogitRows returns which tokens of s get logits rows: the span's last n,
// indices [first, first+n) into Step.TokenIDs.
func (s *Seq) LogitRows() (first, n int) {
	switch {
	case s.AllLogits:
		return s.Start, s.Len
	case s.Logits:
		n := min(max(s.LastRows, 1), s.Len)
		return s.Start + s.Len - n, n
	}
	return 0, 0
}

// Backend computes forward passes over a paged KV cache it owns.
// A Backend is used by one goroutine at a time.
type Backend interface {
	// Model describes the loaded model.
	Model() ModelInfo
	// AllocateKV (re)allocates the KV cache: numBlocks blocks of blockSize
	// tokens for every layer. It must be called once before Forward.
	AllocateKV(numBlocks, blockSize int) error
	// KVBytesPerBlock is the memory one KV block takes, in bytes, so the
	// caller can size the pool from a memory budget.
	KVBytesPerBlock(blockSize int) int64
	// Forward runs the step, writing K/V of every token through
	// SlotMapping and reading context through BlockTable. For each Seq, in
	// order, it writes V logits per token of its LogitRows into logits
	// (rows packed, in token order). len(logits) must be at least rows*V.
	// A backend whose ModelInfo has Dim > 0 also writes the Seqs' hidden
	// rows into Step.Hidden; one with Dim 0 refuses a Step that asks.
	// Forward allocates nothing on the steady path.
	Forward(ctx context.Context, step *Step, logits []float32) error
	// Close releases the weights and the KV cache.
	Close() error
}

// ModelInfo is what the engine and the frontend need to know of a model.
type ModelInfo struct {
	Name          string  // model name (file base name or "dummy")
	Arch          string  // architecture, e.g. "llama"
	VocabSize     int     // V
	MaxContextLen int     // trained context length, tokens
	EOSTokenIDs   []int32 // tokens that end generation
	BOSTokenID    int32   // beginning-of-sequence token
	NumLayers     int     // L
	NumKVHeads    int     // Hkv
	HeadDim       int     // D
	// Dim is the hidden size, an embedding's length; 0 when the backend
	// computes no hidden states (it serves no embeddings).
	Dim int
	// Pooling is how the model file says its embeddings pool ("LAST",
	// "MEAN", "CLS"); "" when it does not say.
	Pooling string
	// Classifier is the model's classification head (a reranker's), which
	// RANK pooling applies to the last prompt token's hidden state; nil
	// when it has none. Read-only.
	Classifier *model.Classifier
}

// KVLayout describes a backend's KV block bytes (KV transfer: slot save
// and restore). Blocks move only between caches with equal layouts.
type KVLayout struct {
	Device        string // the backend kind, e.g. "cpu"
	Dtype         string // element type, e.g. "float32", "float16"
	NumLayers     int    // L
	NumKVHeads    int    // Hkv
	HeadDim       int    // D
	BlockSize     int    // B, tokens per block
	BytesPerBlock int    // bytes of one block, all layers, K and V
}
