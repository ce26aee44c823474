package batch

import "github.com/tandem-llm/tandem/wire"

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
}

// Result is the runner's answer, one entry per Item (valid where Sample).
type Result struct {
	Sampled  []int32          // [len(Items)]
	Logprobs []*wire.Logprobs // [len(Items)], nil unless requested
	// PromptLogprobs ([len(Items)], nil unless some item has them) holds
	// an item's prompt logprobs on its first sample: [P-1] rows.
	PromptLogprobs []*wire.Logprobs
}
