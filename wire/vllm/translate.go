package vllm

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire"
)

// ErrUntranslatable is returned (wrapped) when a message sets a field the
// other protocol cannot express and dropping it would change what the
// engine computes.
var ErrUntranslatable = errors.New("vllm: no counterpart in Tandem's protocol")

func untranslatable(field string) error { return fmt.Errorf("%w: %s", ErrUntranslatable, field) }

func optS(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptrInt(p *int) *int64 {
	if p == nil {
		return nil
	}
	v := int64(*p)
	return &v
}

func ptrInt64ToInt(p *int64) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}

// FromTandemRequest translates a Tandem ADD for a vLLM engine. clientIndex
// is the frontend's index (which output socket the engine answers on),
// currentWave the DP wave the frontend believes current (0 without DP).
// FlowID has no counterpart and is dropped; SessionID goes to index 20;
// _all_stop_token_ids is filled as vLLM's frontend fills it (the EOS token,
// then stop_token_ids). SamplingParams' ConstraintPrefix, MaskedLogprobs
// and ReasoningBudgetMessage are Tandem's own: set, they are
// ErrUntranslatable (a thinking budget is vLLM's own). Think
// tags before a constraint (ReasoningEnd) are vLLM's reasoning_ended
// false: vLLM's engine finds the end with its own --reasoning-parser.
func FromTandemRequest(r *wire.EngineCoreRequest, clientIndex, currentWave int64) (*EngineCoreRequest, error) {
	if r.Pooling != nil { // vLLM pools with its own PoolingParams struct and a pooling runner
		return nil, untranslatable("pooling_params")
	}
	lora, err := loraToVLLM(r.LoRA)
	if err != nil {
		return nil, err
	}
	sp, err := FromTandemSamplingParams(&r.SamplingParams)
	if err != nil {
		return nil, err
	}
	var reasoningEnded *bool
	if r.SamplingParams.ReasoningEnd != "" && r.SamplingParams.StructuredOutputs != nil {
		reasoningEnded = new(bool)
	}
	return &EngineCoreRequest{
		ReasoningEnded:   reasoningEnded,
		RequestID:        r.RequestID,
		PromptTokenIDs:   slices.Clone(r.PromptTokenIDs),
		SamplingParams:   sp,
		ArrivalTime:      r.ArrivalTime,
		CacheSalt:        optS(r.CacheSalt),
		DataParallelRank: ptrInt(r.DataParallelRank),
		ClientIndex:      clientIndex,
		CurrentWave:      currentWave,
		Priority:         int64(r.Priority),
		ExternalReqID:    optS(r.ExternalReqID),
		SessionID:        optS(r.SessionID),
		LoRARequest:      lora,
	}, nil
}

// FromTandemSamplingParams translates Tandem's sampling parameters.
func FromTandemSamplingParams(t *wire.SamplingParams) (*SamplingParams, error) {
	if t.ConstraintPrefix != 0 {
		return nil, untranslatable("SamplingParams._tandem_constraint_prefix")
	}
	if t.MaskedLogprobs {
		return nil, untranslatable("SamplingParams._tandem_masked_logprobs")
	}
	if t.ReasoningBudgetMessage != "" {
		return nil, untranslatable("SamplingParams._tandem_reasoning_budget_message")
	}
	p := DefaultSamplingParams()
	if b := t.ThinkingTokenBudget; b != nil {
		n := int64(*b)
		p.ThinkingTokenBudget = &n
	}
	p.N = int64(t.N)
	p.PresencePenalty, p.FrequencyPenalty, p.RepetitionPenalty = t.PresencePenalty, t.FrequencyPenalty, t.RepetitionPenalty
	p.Temperature, p.TopP, p.TopK, p.MinP = t.Temperature, t.TopP, int64(t.TopK), t.MinP
	p.Seed = t.Seed
	p.StopTokenIDs = slices.Clone(t.StopTokenIDs)
	p.IgnoreEOS = t.IgnoreEOS
	maxTokens := int64(t.MaxTokens)
	p.MaxTokens = &maxTokens
	p.MinTokens = int64(t.MinTokens)
	p.Logprobs, p.PromptLogprobs = ptrInt(t.Logprobs), ptrInt(t.PromptLogprobs)
	p.AllowedTokenIDs = slices.Clone(t.AllowedTokenIDs)
	p.LogprobTokenIDs = slices.Clone(t.LogprobTokenIDs)
	if t.EOSTokenID != nil {
		eos := int64(*t.EOSTokenID)
		p.EOSTokenID = &eos
		p.AllStopTokenIDs = append(p.AllStopTokenIDs, *t.EOSTokenID)
	}
	for _, id := range t.StopTokenIDs {
		if !slices.Contains(p.AllStopTokenIDs, id) {
			p.AllStopTokenIDs = append(p.AllStopTokenIDs, id)
		}
	}
	if t.LogitBias != nil {
		p.LogitBias = make([]LogitBias, 0, len(t.LogitBias))
		for id, b := range t.LogitBias {
			p.LogitBias = append(p.LogitBias, LogitBias{id, b})
		}
		slices.SortFunc(p.LogitBias, func(a, b LogitBias) int { return int(a.TokenID) - int(b.TokenID) })
	}
	if so := t.StructuredOutputs; so != nil {
		s := &StructuredOutputsParams{Regex: optS(so.Regex), Choice: slices.Clone(so.Choice),
			Grammar: optS(so.Grammar), DisableAnyWhitespace: so.DisableAnyWhitespace,
			DisableAdditionalProperties: so.DisableAdditionalProperties,
			WhitespacePattern:           optS(so.WhitespacePattern), StructuralTag: optS(so.StructuralTag)}
		if so.JSON != "" {
			e := newEnc()
			e.str(so.JSON)
			s.JSON = Raw(e.buf.Bytes())
		}
		if so.JSONObject {
			b := true
			s.JSONObject = &b
		}
		p.StructuredOutputs = s
	}
	if len(t.ExtraArgs) > 0 {
		var buf bytes.Buffer
		me := msgpack.NewEncoder(&buf)
		me.SetSortMapKeys(true)
		if err := me.Encode(t.ExtraArgs); err != nil {
			return nil, fmt.Errorf("vllm: extra_args: %w", err)
		}
		p.ExtraArgs = Raw(buf.Bytes())
	}
	return &p, nil
}

// ToTandemRequest translates a vLLM ADD for a Tandem engine. What only
// vLLM's frontend reads (client_index, current_wave, trace_headers,
// resumable, and in SamplingParams stop strings, detokenization,
// output_kind, flat_logprobs, stream_interval, skip_clone,
// output_text_buffer_length, bad_words strings) is dropped, and so are
// reasoning_ended and reasoning_parser_kwargs: Tandem's engine has no
// reasoning parser to find the end of the thinking with (a Tandem
// frontend names the tags in _tandem_reasoning_*), so a vLLM frontend's
// constrained request is constrained from its first token.
// lora_request becomes the request's one adapter at scale 1.
// Fields that change what the engine computes and that Tandem lacks
// (mm_features, pooling_params, prompt_embeds,
// prompt_is_token_ids, abort_immediately, kv_hints; in SamplingParams
// watermarking, prompt_logprob_token_ids/start, _bad_words_token_ids,
// thinking_token_budget, repetition_detection, routed_experts_prompt_start,
// trace_decode_token_ids, skip_reading_prefix_cache without
// prompt_logprobs) are ErrUntranslatable when set. skip_reading_prefix_cache
// with prompt_logprobs, as vLLM's frontend sets it, is what Tandem's engine
// does anyway: a request with prompt_logprobs never reads the prefix cache.
func ToTandemRequest(r *EngineCoreRequest) (*wire.EngineCoreRequest, error) {
	for _, f := range []struct {
		name string
		set  bool
	}{{"mm_features", !r.MMFeatures.IsNil()}, {"pooling_params", !r.PoolingParams.IsNil()},
		{"prompt_embeds", r.PromptEmbeds != nil},
		{"prompt_is_token_ids", r.PromptIsTokenIDs != nil}, {"abort_immediately", r.AbortImmediately},
		{"kv_hints", !r.KVHints.IsNil()}, {"sampling_params (None)", r.SamplingParams == nil}} {
		if f.set {
			return nil, untranslatable("EngineCoreRequest." + f.name)
		}
	}
	sp, err := ToTandemSamplingParams(r.SamplingParams)
	if err != nil {
		return nil, err
	}
	l, err := decodeLoRARequest(r.LoRARequest)
	if err != nil {
		return nil, err
	}
	var lora []wire.LoRARequest
	if l != nil {
		lora = []wire.LoRARequest{{Name: l.Name, ID: int(l.IntID), Path: l.Path, Scale: 1}}
	}
	var dpRank *int
	if r.DataParallelRank != nil {
		dpRank = ptrInt64ToInt(r.DataParallelRank)
	}
	return &wire.EngineCoreRequest{
		RequestID:        r.RequestID,
		PromptTokenIDs:   slices.Clone(r.PromptTokenIDs),
		SamplingParams:   sp,
		ArrivalTime:      r.ArrivalTime,
		CacheSalt:        deref(r.CacheSalt),
		DataParallelRank: dpRank,
		Priority:         int(r.Priority),
		ExternalReqID:    deref(r.ExternalReqID),
		SessionID:        deref(r.SessionID),
		LoRA:             lora,
	}, nil
}

// ToTandemSamplingParams translates vLLM's sampling parameters (see
// ToTandemRequest for what is dropped and what is refused).
// _all_stop_token_ids is dropped: Tandem's engine derives it from
// stop_token_ids and _eos_token_id.
func ToTandemSamplingParams(p *SamplingParams) (wire.SamplingParams, error) {
	for _, f := range []struct {
		name string
		set  bool
	}{{"watermarking", p.Watermarking != nil && *p.Watermarking},
		{"prompt_logprob_token_ids", p.PromptLogprobTokenIDs != nil},
		{"prompt_logprob_start", p.PromptLogprobStart != nil},
		{"_bad_words_token_ids", len(p.BadWordsTokenIDs) > 0},
		{"thinking_token_budget", p.ThinkingTokenBudget != nil},
		{"repetition_detection", p.RepetitionDetection != nil && p.RepetitionDetection.MaxPatternSize > 0},
		{"routed_experts_prompt_start", p.RoutedExpertsPromptStart != 0},
		{"trace_decode_token_ids", p.TraceDecodeTokenIDs != nil},
		{"skip_reading_prefix_cache", p.SkipReadingPrefixCache != nil && *p.SkipReadingPrefixCache && p.PromptLogprobs == nil},
		{"max_tokens (None)", p.MaxTokens == nil}} {
		if f.set {
			return wire.SamplingParams{}, untranslatable("SamplingParams." + f.name)
		}
	}
	t := wire.DefaultSamplingParams()
	t.N = int(p.N)
	t.PresencePenalty, t.FrequencyPenalty, t.RepetitionPenalty = p.PresencePenalty, p.FrequencyPenalty, p.RepetitionPenalty
	t.Temperature, t.TopP, t.TopK, t.MinP = p.Temperature, p.TopP, int(p.TopK), p.MinP
	t.Seed = p.Seed
	t.StopTokenIDs = slices.Clone(p.StopTokenIDs)
	t.IgnoreEOS = p.IgnoreEOS
	t.MaxTokens = int(*p.MaxTokens)
	t.MinTokens = int(p.MinTokens)
	t.Logprobs, t.PromptLogprobs = ptrInt64ToInt(p.Logprobs), ptrInt64ToInt(p.PromptLogprobs)
	t.AllowedTokenIDs = slices.Clone(p.AllowedTokenIDs)
	t.LogprobTokenIDs = slices.Clone(p.LogprobTokenIDs)
	if p.EOSTokenID != nil {
		eos := int32(*p.EOSTokenID)
		t.EOSTokenID = &eos
	}
	if p.LogitBias != nil {
		t.LogitBias = make(map[int32]float64, len(p.LogitBias))
		for _, b := range p.LogitBias {
			t.LogitBias[b.TokenID] = b.Bias
		}
	}
	if s := p.StructuredOutputs; s != nil {
		so := &wire.StructuredOutputs{Regex: deref(s.Regex), Choice: slices.Clone(s.Choice),
			Grammar: deref(s.Grammar), JSONObject: s.JSONObject != nil && *s.JSONObject,
			DisableAnyWhitespace: s.DisableAnyWhitespace, DisableAdditionalProperties: s.DisableAdditionalProperties,
			WhitespacePattern: deref(s.WhitespacePattern), StructuralTag: deref(s.StructuralTag)}
		if !s.JSON.IsNil() {
			if err := wire.Unmarshal(s.JSON, &so.JSON); err != nil {
				// A dict schema: Tandem's decoder turns a map into its JSON text.
				var sp wire.SamplingParams
				enc := append([]byte{0x81, 0xb2}, "structured_outputs"...)
				enc = append(append(enc, 0x81, 0xa4), "json"...)
				if err := wire.Unmarshal(append(enc, s.JSON...), &sp); err != nil || sp.StructuredOutputs == nil {
					return wire.SamplingParams{}, fmt.Errorf("vllm: structured_outputs.json: %v", err)
				}
				so.JSON = sp.StructuredOutputs.JSON
			}
		}
		t.StructuredOutputs = so
	}
	if !p.ExtraArgs.IsNil() {
		if err := msgpack.Unmarshal(p.ExtraArgs, &t.ExtraArgs); err != nil {
			return wire.SamplingParams{}, fmt.Errorf("vllm: extra_args: %w", err)
		}
	}
	return t, nil
}
