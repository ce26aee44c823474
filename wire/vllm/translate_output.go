package vllm

import (
	"fmt"
	"slices"

	"github.com/tandem-llm/tandem/wire"
)

// FromTandemOutputs translates a Tandem OUTPUTS for a vLLM frontend.
// Timestamp is copied (Tandem's is unix time, vLLM's monotonic: a frontend
// only subtracts timestamps of one engine). firsts holds, for each request
// whose first output is in o, its number of prompt tokens: that output
// gets prefill_stats as vLLM's engine fills it (num_prompt_tokens,
// num_computed_tokens = prompt - cached, num_cached_tokens and
// num_local_cached_tokens from NumCachedTokens); an output not in firsts
// gets prefill_stats only when NumCachedTokens is non-zero. Logprobs
// become vLLM's LogprobsLists ("<i4" token ids, "<f4" logprobs, "<i8"
// ranks), prompt logprobs LogprobsTensors (int32, float32, int64);
// FinishError with CodeInvalidRequest carries a RequestError
// ("validation_error", the stop reason's text). Dropped: ErrorCode
// otherwise, SpecDecode (vLLM's spec_decode_metrics is the request's
// histogram so far, built in its engine), SchedulerStats' cumulative
// prefix-cache and speculative decoding counters (SchedulerStats.SetStep
// turns two reports into vLLM's per-step ones), NumFreeBlocks,
// NumTotalBlocks, NumPreemptions and NumSessions (vLLM's are per step
// or absent).
func FromTandemOutputs(o *wire.EngineCoreOutputs, firsts map[string]int) (*EngineCoreOutputs, error) {
	v := &EngineCoreOutputs{EngineIndex: int64(o.EngineIndex), Timestamp: o.Timestamp,
		FinishedRequests: slices.Clone(o.FinishedRequests)}
	for i := range o.Outputs {
		out, err := fromTandemOutput(&o.Outputs[i])
		if err != nil {
			return nil, err
		}
		if n, first := firsts[out.RequestID]; first {
			cached := int64(o.Outputs[i].NumCachedTokens)
			out.PrefillStats = &PrefillStats{NumPromptTokens: int64(n), NumComputedTokens: int64(n) - cached,
				NumCachedTokens: cached, NumLocalCachedTokens: cached}
		}
		v.Outputs = append(v.Outputs, out)
	}
	if s := o.SchedulerStats; s != nil {
		v.SchedulerStats = &SchedulerStats{NumRunningReqs: int64(s.NumRunningReqs), NumWaitingReqs: int64(s.NumWaitingReqs),
			NumSkippedWaitingReqs: int64(s.NumSkippedWaitingReqs), StepCounter: s.StepCounter, KVCacheUsage: s.KVCacheUsage}
	}
	return v, nil
}

func fromTandemOutput(t *wire.EngineCoreOutput) (EngineCoreOutput, error) {
	o := EngineCoreOutput{RequestID: t.RequestID, NewTokenIDs: slices.Clone(t.NewTokenIDs), StopReason: t.StopReason}
	if o.NewTokenIDs == nil {
		o.NewTokenIDs = []int32{}
	}
	if t.NewLogprobs != nil {
		ids, lps, ranks := logprobArrays(t.NewLogprobs, "<i4", "<f4", "<i8")
		o.NewLogprobs = &LogprobsLists{LogprobTokenIDs: ids, Logprobs: lps, SampledTokenRanks: ranks}
	}
	if t.NewPromptLogprobs != nil {
		ids, lps, ranks := logprobArrays(t.NewPromptLogprobs, "int32", "float32", "int64")
		o.NewPromptLogprobsTensors = &LogprobsTensors{LogprobTokenIDs: ids, Logprobs: lps, SelectedTokenRanks: ranks}
	}
	if t.FinishReason != wire.FinishNone {
		o.Finished = true
		o.FinishReason = FinishReason(t.FinishReason - 1) // Tandem's wire values are vLLM's 0..3
	}
	if t.NumCachedTokens > 0 {
		n := int64(t.NumCachedTokens)
		o.PrefillStats = &PrefillStats{NumCachedTokens: n, NumLocalCachedTokens: n}
	}
	if t.FinishReason == wire.FinishError && t.ErrorCode == wire.CodeInvalidRequest {
		msg, _ := t.StopReason.(string)
		o.Error = &RequestError{Code: "validation_error", Message: msg}
	}
	for _, ev := range t.Events {
		o.Events = append(o.Events, EngineCoreEvent{EngineCoreEventType(ev.Type), ev.Timestamp})
	}
	return o, nil
}

// logprobArrays lays l out as vLLM does: token ids [P, k] of idType (32
// bits), logprobs [P, k] of floatType, ranks [P] of rankType (64 bits).
func logprobArrays(l *wire.Logprobs, idType, floatType, rankType string) (ids, lps, ranks NDArray) {
	p := int64(len(l.TokenIDs))
	k := int64(0)
	if p > 0 {
		k = int64(len(l.TokenIDs[0]))
	}
	var iv []int64
	var fv []float64
	for i := range l.TokenIDs {
		for j := range k {
			var id int64
			var lp float64
			if j < int64(len(l.TokenIDs[i])) {
				id = int64(l.TokenIDs[i][j])
			}
			if i < len(l.Logprobs) && j < int64(len(l.Logprobs[i])) {
				lp = l.Logprobs[i][j]
			}
			iv, fv = append(iv, id), append(fv, lp)
		}
	}
	rv := make([]int64, len(l.Ranks))
	for i, r := range l.Ranks {
		rv[i] = int64(r)
	}
	return Int32Array(idType, []int64{p, k}, iv), Float32Array(floatType, []int64{p, k}, fv),
		Int64Array(rankType, []int64{int64(len(rv))}, rv)
}

// ToTandemOutputs translates a vLLM engine's outputs for a Tandem
// frontend. UtilityOutput, WaveComplete, StartWave and WeightVersion have
// no place in Tandem's OUTPUTS: the caller reads them from o. Per output,
// FinishRepetition becomes FinishStop (Tandem has no such reason),
// prefill_stats.num_cached_tokens becomes NumCachedTokens, a RequestError
// with code "validation_error" CodeInvalidRequest (its message the stop
// reason when none is set). Dropped: pooling_output, kv/ec transfer params,
// trace_headers, routed_experts, num_nans_in_logits, mm_cache_miss_hashes,
// new_sampling_mask, spec_decode_metrics, prompt_token_id_logprobs, and
// SchedulerStats beyond running, waiting, skipped, kv_cache_usage and
// step_counter.
func ToTandemOutputs(o *EngineCoreOutputs) (*wire.EngineCoreOutputs, error) {
	t := &wire.EngineCoreOutputs{EngineIndex: int(o.EngineIndex), Timestamp: o.Timestamp,
		FinishedRequests: slices.Clone(o.FinishedRequests)}
	for i := range o.Outputs {
		out, err := toTandemOutput(&o.Outputs[i])
		if err != nil {
			return nil, err
		}
		t.Outputs = append(t.Outputs, out)
	}
	if s := o.SchedulerStats; s != nil {
		t.SchedulerStats = &wire.SchedulerStats{NumRunningReqs: int(s.NumRunningReqs), NumWaitingReqs: int(s.NumWaitingReqs),
			NumSkippedWaitingReqs: int(s.NumSkippedWaitingReqs), KVCacheUsage: s.KVCacheUsage, StepCounter: s.StepCounter}
	}
	return t, nil
}

func toTandemOutput(o *EngineCoreOutput) (wire.EngineCoreOutput, error) {
	t := wire.EngineCoreOutput{RequestID: o.RequestID, NewTokenIDs: slices.Clone(o.NewTokenIDs), StopReason: o.StopReason}
	var err error
	if o.NewLogprobs != nil {
		l := o.NewLogprobs
		if t.NewLogprobs, err = tandemLogprobs(&l.LogprobTokenIDs, &l.Logprobs, &l.SampledTokenRanks); err != nil {
			return t, fmt.Errorf("vllm: %s new_logprobs: %w", o.RequestID, err)
		}
	}
	if o.NewPromptLogprobsTensors != nil {
		l := o.NewPromptLogprobsTensors
		if t.NewPromptLogprobs, err = tandemLogprobs(&l.LogprobTokenIDs, &l.Logprobs, &l.SelectedTokenRanks); err != nil {
			return t, fmt.Errorf("vllm: %s new_prompt_logprobs_tensors: %w", o.RequestID, err)
		}
	}
	if o.Finished {
		t.FinishReason = wire.FinishReason(min(o.FinishReason, FinishError) + 1)
		if o.FinishReason == FinishRepetition {
			t.FinishReason = wire.FinishStop
		}
	}
	if o.PrefillStats != nil {
		t.NumCachedTokens = int(o.PrefillStats.NumCachedTokens)
	}
	if o.Error != nil && o.Error.Code == "validation_error" {
		t.ErrorCode = wire.CodeInvalidRequest
		if t.StopReason == nil {
			t.StopReason = o.Error.Message
		}
	}
	for _, ev := range o.Events {
		t.Events = append(t.Events, wire.EngineCoreEvent{Type: wire.EngineCoreEventType(ev.Type), Timestamp: ev.Timestamp})
	}
	return t, nil
}

func tandemLogprobs(ids, lps, ranks *NDArray) (*wire.Logprobs, error) {
	iv, err := ids.Ints()
	if err != nil {
		return nil, err
	}
	fv, err := lps.Floats()
	if err != nil {
		return nil, err
	}
	rv, err := ranks.Ints()
	if err != nil {
		return nil, err
	}
	if len(ids.Shape) != 2 || len(lps.Shape) != 2 || !slices.Equal(ids.Shape, lps.Shape) || int64(len(rv)) != ids.Shape[0] {
		return nil, fmt.Errorf("logprob shapes %v %v %v", ids.Shape, lps.Shape, ranks.Shape)
	}
	p, k := int(ids.Shape[0]), int(ids.Shape[1])
	l := &wire.Logprobs{TokenIDs: make([][]int32, p), Logprobs: make([][]float64, p), Ranks: make([]int32, p)}
	for i := range p {
		l.TokenIDs[i] = make([]int32, k)
		l.Logprobs[i] = fv[i*k : (i+1)*k : (i+1)*k]
		for j := range k {
			l.TokenIDs[i][j] = int32(iv[i*k+j])
		}
		l.Ranks[i] = int32(rv[i])
	}
	return l, nil
}
