package vllm

import "fmt"

// FinishReason is vLLM's FinishReason, an IntEnum.
type FinishReason uint8

const (
	FinishStop       FinishReason = 0 // stop string, stop token or EOS
	FinishLength     FinishReason = 1 // max_tokens or max_model_len
	FinishAbort      FinishReason = 2
	FinishError      FinishReason = 3 // retryable request-level error
	FinishRepetition FinishReason = 4 // repetitive pattern detected
)

// EngineCoreEventType is vLLM's EngineCoreEventType.
type EngineCoreEventType int64

const (
	EventQueued    EngineCoreEventType = 1
	EventScheduled EngineCoreEventType = 2
	EventPreempted EngineCoreEventType = 3
)

// EngineCoreEvent is a plain msgspec struct: the map {"type", "timestamp"}
// (monotonic seconds on the engine's clock).
type EngineCoreEvent struct {
	Type      EngineCoreEventType
	Timestamp float64
}

// LogprobsLists is the NamedTuple (an array of 4) of new_logprobs.
type LogprobsLists struct {
	LogprobTokenIDs      NDArray // [P, k+1] int ("<i8" / "<i4"), column 0 the sampled token
	Logprobs             NDArray // [P, k+1] "<f4"
	SampledTokenRanks    NDArray // [P] int
	CuNumGeneratedTokens []int64 // nil = None
}

// LogprobsTensors is the NamedTuple (an array of 5) of
// new_prompt_logprobs_tensors; its arrays are torch tensors.
type LogprobsTensors struct {
	LogprobTokenIDs            NDArray // [P-1, k+1] "int64"
	Logprobs                   NDArray // [P-1, k+1] "float32"
	SelectedTokenRanks         NDArray // [P-1] "int64"
	CuNumGeneratedTokens       []int64
	CuNumGeneratedTokensTensor *NDArray
}

// SamplingMaskLists is the NamedTuple (an array of 3) of new_sampling_mask.
type SamplingMaskLists struct {
	TokenIDs             NDArray
	Offsets              *NDArray
	CuNumGeneratedTokens []int64
}

// PrefillStats is a dataclass: a map of its six fields. vLLM's frontend
// reads the request's cached prompt tokens from it.
type PrefillStats struct {
	NumPromptTokens, NumComputedTokens, NumCachedTokens                   int64
	NumLocalCachedTokens, NumExternalCachedTokens, NumCacheCreationTokens int64
}

var prefillKeys = []string{"num_prompt_tokens", "num_computed_tokens", "num_cached_tokens",
	"num_local_cached_tokens", "num_external_cached_tokens", "num_cache_creation_tokens"}

func (s *PrefillStats) ptrs() []*int64 {
	return []*int64{&s.NumPromptTokens, &s.NumComputedTokens, &s.NumCachedTokens,
		&s.NumLocalCachedTokens, &s.NumExternalCachedTokens, &s.NumCacheCreationTokens}
}

// RequestError is a dataclass (vllm/outputs.py), sent with FinishError.
type RequestError struct {
	Code      string
	Message   string
	Retryable bool
}

// EngineCoreOutput is one request's output of a step: array_like, all 19
// elements always written.
type EngineCoreOutput struct {
	RequestID                string             // 0
	NewTokenIDs              []int32            // 1
	NewLogprobs              *LogprobsLists     // 2
	NewPromptLogprobsTensors *LogprobsTensors   // 3
	PoolingOutput            *NDArray           // 4 (torch)
	FinishReason             FinishReason       // 5, meaningful when Finished
	Finished                 bool               // 5 is not None
	StopReason               any                // 6: nil, int64 (a stop token) or string (a stop string)
	Events                   []EngineCoreEvent  // 7 (nil = None)
	KVTransferParams         Raw                // 8
	ECTransferParams         Raw                // 9
	TraceHeaders             Raw                // 10
	PrefillStats             *PrefillStats      // 11
	RoutedExperts            *NDArray           // 12 (numpy)
	NumNaNsInLogits          int64              // 13
	MMCacheMissHashes        []string           // 14
	NewSamplingMask          *SamplingMaskLists // 15
	SpecDecodeMetrics        Raw                // 16 (RequestSpecDecodeMetrics dataclass)
	PromptTokenIDLogprobs    *NDArray           // 17 (torch)
	Error                    *RequestError      // 18
}

var outputFields = []string{"request_id", "new_token_ids", "new_logprobs",
	"new_prompt_logprobs_tensors", "pooling_output", "finish_reason", "stop_reason", "events",
	"kv_transfer_params", "ec_transfer_params", "trace_headers", "prefill_stats",
	"routed_experts", "num_nans_in_logits", "mm_cache_miss_hashes", "new_sampling_mask",
	"spec_decode_metrics", "prompt_token_id_logprobs", "error"}

func (o *EngineCoreOutput) encode(e *enc) {
	e.arrayLen(len(outputFields))
	e.str(o.RequestID)
	e.int32s(o.NewTokenIDs)
	if l := o.NewLogprobs; l == nil {
		e.null()
	} else {
		e.arrayLen(4)
		e.ndarray(&l.LogprobTokenIDs)
		e.ndarray(&l.Logprobs)
		e.ndarray(&l.SampledTokenRanks)
		e.optInt64s(l.CuNumGeneratedTokens)
	}
	if t := o.NewPromptLogprobsTensors; t == nil {
		e.null()
	} else {
		e.arrayLen(5)
		e.ndarray(&t.LogprobTokenIDs)
		e.ndarray(&t.Logprobs)
		e.ndarray(&t.SelectedTokenRanks)
		e.optInt64s(t.CuNumGeneratedTokens)
		e.optNDArray(t.CuNumGeneratedTokensTensor)
	}
	e.optNDArray(o.PoolingOutput)
	if o.Finished {
		e.int(int64(o.FinishReason))
	} else {
		e.null()
	}
	switch s := o.StopReason.(type) {
	case int64:
		e.int(s)
	case string:
		e.str(s)
	default:
		e.null()
	}
	if o.Events == nil {
		e.null()
	} else {
		e.arrayLen(len(o.Events))
		for _, ev := range o.Events {
			e.mapLen(2)
			e.key("type")
			e.int(int64(ev.Type))
			e.key("timestamp")
			e.float(ev.Timestamp)
		}
	}
	e.raw(o.KVTransferParams)
	e.raw(o.ECTransferParams)
	e.raw(o.TraceHeaders)
	if s := o.PrefillStats; s == nil {
		e.null()
	} else {
		e.mapLen(len(prefillKeys))
		for i, p := range s.ptrs() {
			e.key(prefillKeys[i])
			e.int(*p)
		}
	}
	e.optNDArray(o.RoutedExperts)
	e.int(o.NumNaNsInLogits)
	e.optStrs(o.MMCacheMissHashes)
	if m := o.NewSamplingMask; m == nil {
		e.null()
	} else {
		e.arrayLen(3)
		e.ndarray(&m.TokenIDs)
		e.optNDArray(m.Offsets)
		e.optInt64s(m.CuNumGeneratedTokens)
	}
	e.raw(o.SpecDecodeMetrics)
	e.optNDArray(o.PromptTokenIDLogprobs)
	if r := o.Error; r == nil {
		e.null()
	} else {
		e.mapLen(3)
		e.key("code")
		e.str(r.Code)
		e.key("message")
		e.str(r.Message)
		e.key("retryable")
		e.bool(r.Retryable)
	}
}

func (e *enc) optInt64s(s []int64) {
	if s == nil {
		e.null()
		return
	}
	e.int64s(s)
}

func outputFrom(n node, aux [][]byte) (EngineCoreOutput, error) {
	var o EngineCoreOutput
	arr := func(v node) (NDArray, error) { return ndarrayFrom(v, aux) }
	err := n.fields(outputFields, func(i int, v node) (err error) {
		switch i {
		case 0:
			o.RequestID, err = v.asStr()
		case 1:
			if o.NewTokenIDs, err = listOf(v, node.asInt32); o.NewTokenIDs == nil {
				o.NewTokenIDs = []int32{}
			}
		case 2:
			o.NewLogprobs, err = optOf(v, func(v node) (l LogprobsLists, err error) {
				err = v.fields([]string{"logprob_token_ids", "logprobs", "sampled_token_ranks", "cu_num_generated_tokens"},
					func(i int, v node) (err error) {
						switch i {
						case 0:
							l.LogprobTokenIDs, err = arr(v)
						case 1:
							l.Logprobs, err = arr(v)
						case 2:
							l.SampledTokenRanks, err = arr(v)
						case 3:
							l.CuNumGeneratedTokens, err = listOf(v, node.asInt64)
						}
						return err
					})
				return l, err
			})
		case 3:
			o.NewPromptLogprobsTensors, err = optOf(v, func(v node) (t LogprobsTensors, err error) {
				err = v.fields([]string{"logprob_token_ids", "logprobs", "selected_token_ranks",
					"cu_num_generated_tokens", "cu_num_generated_tokens_tensor"},
					func(i int, v node) (err error) {
						switch i {
						case 0:
							t.LogprobTokenIDs, err = arr(v)
						case 1:
							t.Logprobs, err = arr(v)
						case 2:
							t.SelectedTokenRanks, err = arr(v)
						case 3:
							t.CuNumGeneratedTokens, err = listOf(v, node.asInt64)
						case 4:
							t.CuNumGeneratedTokensTensor, err = optNDArrayFrom(v, aux)
						}
						return err
					})
				return t, err
			})
		case 4:
			o.PoolingOutput, err = optNDArrayFrom(v, aux)
		case 5:
			if !v.isNil() {
				var f int64
				if f, err = v.asInt(); err == nil && (f < 0 || f > int64(FinishRepetition)) {
					err = fmt.Errorf("invalid enum value %d", f)
				}
				o.FinishReason, o.Finished = FinishReason(f), err == nil
			}
		case 6:
			switch v.kind {
			case kNil:
			case kInt:
				o.StopReason = v.i
			case kStr:
				o.StopReason = string(v.b)
			default:
				err = wantErr("int | str | nil", v)
			}
		case 7:
			o.Events, err = listOf(v, eventFrom)
		case 8:
			o.KVTransferParams = v.asRaw()
		case 9:
			o.ECTransferParams = v.asRaw()
		case 10:
			o.TraceHeaders = v.asRaw()
		case 11:
			o.PrefillStats, err = optOf(v, func(v node) (s PrefillStats, err error) {
				ptrs := s.ptrs()
				err = v.entries(func(key string, v node) (err error) {
					for i, k := range prefillKeys {
						if k == key {
							*ptrs[i], err = v.asInt()
						}
					}
					return err
				})
				return s, err
			})
		case 12:
			o.RoutedExperts, err = optNDArrayFrom(v, aux)
		case 13:
			o.NumNaNsInLogits, err = v.asInt()
		case 14:
			o.MMCacheMissHashes, err = listOf(v, node.asStr)
		case 15:
			o.NewSamplingMask, err = optOf(v, func(v node) (m SamplingMaskLists, err error) {
				err = v.fields([]string{"token_ids", "offsets", "cu_num_generated_tokens"}, func(i int, v node) (err error) {
					switch i {
					case 0:
						m.TokenIDs, err = arr(v)
					case 1:
						m.Offsets, err = optNDArrayFrom(v, aux)
					case 2:
						m.CuNumGeneratedTokens, err = listOf(v, node.asInt64)
					}
					return err
				})
				return m, err
			})
		case 16:
			o.SpecDecodeMetrics = v.asRaw()
		case 17:
			o.PromptTokenIDLogprobs, err = optNDArrayFrom(v, aux)
		case 18:
			o.Error, err = optOf(v, func(v node) (r RequestError, err error) {
				err = v.entries(func(key string, v node) (err error) {
					switch key {
					case "code":
						r.Code, err = v.asStr()
					case "message":
						r.Message, err = v.asStr()
					case "retryable":
						r.Retryable, err = v.asBool()
					}
					return err
				})
				return r, err
			})
		}
		return err
	})
	if err != nil {
		return EngineCoreOutput{}, fmt.Errorf("EngineCoreOutput.%w", err)
	}
	return o, nil
}

func eventFrom(n node) (EngineCoreEvent, error) {
	var ev EngineCoreEvent
	err := n.entries(func(key string, v node) (err error) {
		switch key {
		case "type":
			var t int64
			t, err = v.asInt()
			ev.Type = EngineCoreEventType(t)
		case "timestamp":
			ev.Timestamp, err = v.asFloat()
		}
		return err
	})
	return ev, err
}
