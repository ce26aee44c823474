package batch

import (
	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/wire"
)

// Batch is one engine step.
type Batch struct {
	Items        []Item
	NumTokens    int // Σ Items[i].Len, tokens computed this step
	NumPreempted int // requests preempted while building this batch
	StepCounter  int64
}

// Item is one request's share of a step: tokens[Start:Start+Len] are fed
// to the model at positions Start..Start+Len-1.
type Item struct {
	RequestID  string
	Tokens     []int32 // [N] all tokens of the request so far (prompt, then outputs); read-only
	NumPrompt  int     // the first NumPrompt of Tokens are the prompt
	Start      int     // num computed tokens before this step
	Len        int     // tokens to compute this step (≥ 1)
	BlockTable []int32 // physical KV blocks covering Tokens[:Start+Len]
	// Sample is true when this step reaches the end of Tokens, so a new
	// token is sampled from the last position's logits.
	Sample bool
	Params *wire.SamplingParams
	// MaskStop is true while the request is below min_tokens: the runner
	// forbids StopTokenIDs (EOS and stop_token_ids) when sampling.
	MaskStop     bool
	StopTokenIDs []int32
	// Allowed, when set, is a structured-output constraint's mask: the
	// runner samples only tokens t with bit t%32 of Allowed[t/32] set.
	Allowed []uint32
	// Draft (speculative decoding) is how many of Tokens' last are draft
	// tokens, not yet the request's: the step computes them with the
	// request's last token (Sample is set, Start+Len == len(Tokens)) and
	// samples at each of the last Draft+1 positions, keeping drafts while
	// they equal what is sampled. Never set with MaskStop or Allowed.
	Draft int
	// Pooling, set on an embedding request (its PoolingType resolved to
	// the engine's when the request left it empty), makes the runner pool
	// hidden states instead of sampling: when Sample is set, the Result
	// holds the request's embedding in Pooled, and no token.
	Pooling *wire.PoolingParams
	// LoRA are the adapters the request applies (none: the base model).
	LoRA []lora.Use
}

// Result is the runner's answer, one entry per Item (valid where Sample).
type Result struct {
	Sampled  []int32          // [len(Items)]
	Logprobs []*wire.Logprobs // [len(Items)], nil unless requested
	// PromptLogprobs ([len(Items)], nil unless some item has them) holds
	// an item's prompt logprobs on its first sample: [P-1] rows.
	PromptLogprobs []*wire.Logprobs
	// Tokens ([len(Items)], nil unless some item has a Draft) holds a
	// drafted item's new tokens: the drafts it kept, then the token
	// sampled after them (Sampled[i] is the last); nil for other items.
	// Logprobs[i] then has a row per new token.
	Tokens [][]int32
	// Pooled ([len(Items)], nil unless some item has Pooling and Sample)
	// holds an embedding request's embedding, on the step that computes
	// its last prompt token: [Dim] or [Dimensions] float32s.
	Pooled [][]float32
}

// NewTokens are item i's new tokens: Tokens[i] for a drafted item, else
// the one sampled (none when it did not sample).
func (r *Result) NewTokens(b *Batch, i int) []int32 {
	if r.Tokens != nil && r.Tokens[i] != nil {
		return r.Tokens[i]
	}
	if !b.Items[i].Sample {
		return nil
	}
	return r.Sampled[i : i+1 : i+1]
}
