package vllm

import (
	"fmt"
	"slices"
)

// SamplingParams is vLLM's SamplingParams, a msgspec omit_defaults struct:
// a map of the keys whose value differs from the default, in declaration
// order (the order below). Start from DefaultSamplingParams. Pointers and
// nil slices are None; a non-nil empty slice is [] (not the default).
type SamplingParams struct {
	N                          int64                      // "n", 1
	PresencePenalty            float64                    // "presence_penalty", 0
	FrequencyPenalty           float64                    // "frequency_penalty", 0
	RepetitionPenalty          float64                    // "repetition_penalty", 1
	Temperature                float64                    // "temperature", 1
	Watermarking               *bool                      // "watermarking"
	TopP                       float64                    // "top_p", 1
	TopK                       int64                      // "top_k", 0
	MinP                       float64                    // "min_p", 0
	Seed                       *int64                     // "seed"
	Stop                       Raw                        // "stop": str | [str]
	StopTokenIDs               []int32                    // "stop_token_ids"
	IgnoreEOS                  bool                       // "ignore_eos"
	MaxTokens                  *int64                     // "max_tokens", 16 (nil = None: no limit)
	MinTokens                  int64                      // "min_tokens", 0
	Logprobs                   *int64                     // "logprobs"
	PromptLogprobs             *int64                     // "prompt_logprobs"
	PromptLogprobTokenIDs      *NDArray                   // "prompt_logprob_token_ids"
	PromptLogprobStart         *int64                     // "prompt_logprob_start"
	LogprobTokenIDs            []int32                    // "logprob_token_ids"
	FlatLogprobs               bool                       // "flat_logprobs"
	Detokenize                 bool                       // "detokenize", true
	SkipSpecialTokens          bool                       // "skip_special_tokens", true
	SpacesBetweenSpecialTokens bool                       // "spaces_between_special_tokens", true
	IncludeStopStrInOutput     bool                       // "include_stop_str_in_output"
	OutputKind                 int64                      // "output_kind": 0 CUMULATIVE, 1 DELTA, 2 FINAL_ONLY
	StreamInterval             *int64                     // "stream_interval"
	SkipClone                  bool                       // "skip_clone"
	OutputTextBufferLength     int64                      // "output_text_buffer_length", 0
	EOSTokenID                 *int64                     // "_eos_token_id"
	AllStopTokenIDs            []int32                    // "_all_stop_token_ids": a set, in the order given (Python's set order when decoded)
	WatermarkingSkipped        bool                       // "_watermarking_skipped"
	StructuredOutputs          *StructuredOutputsParams   // "structured_outputs"
	LogitBias                  []LogitBias                // "logit_bias": dict[int, float], in order
	AllowedTokenIDs            []int32                    // "allowed_token_ids"
	ExtraArgs                  Raw                        // "extra_args": dict
	BadWords                   []string                   // "bad_words"
	BadWordsTokenIDs           [][]int32                  // "_bad_words_token_ids"
	SkipReadingPrefixCache     *bool                      // "skip_reading_prefix_cache"
	ThinkingTokenBudget        *int64                     // "thinking_token_budget"
	RepetitionDetection        *RepetitionDetectionParams // "repetition_detection"
	RoutedExpertsPromptStart   int64                      // "routed_experts_prompt_start", 0
	TraceDecodeTokenIDs        []int32                    // "trace_decode_token_ids"
}

// LogitBias is one logit_bias entry.
type LogitBias struct {
	TokenID int32
	Bias    float64
}

// StructuredOutputsParams is a dataclass, so a map of every field in
// order; Backend and BackendWasAuto are written only when set (vLLM's
// frontend sets them: they are init=False fields).
type StructuredOutputsParams struct {
	JSON                        Raw // "json": str | dict
	Regex                       *string
	Choice                      []string
	Grammar                     *string
	JSONObject                  *bool
	DisableAnyWhitespace        bool
	DisableAdditionalProperties bool
	WhitespacePattern           *string
	StructuralTag               *string
	Backend                     *string // "_backend"
	BackendWasAuto              *bool   // "_backend_was_auto"
}

// RepetitionDetectionParams is a dataclass: a map of its three fields.
type RepetitionDetectionParams struct {
	MaxPatternSize, MinPatternSize, MinCount int64
}

// DefaultSamplingParams returns what every omitted key stands for.
func DefaultSamplingParams() SamplingParams {
	maxTokens := int64(16)
	return SamplingParams{N: 1, RepetitionPenalty: 1, Temperature: 1, TopP: 1, MaxTokens: &maxTokens,
		Detokenize: true, SkipSpecialTokens: true, SpacesBetweenSpecialTokens: true}
}

type spField struct {
	key    string
	isDef  func(p *SamplingParams) bool
	encode func(e *enc, p *SamplingParams)
	decode func(p *SamplingParams, v node, aux [][]byte) error
}

func intF(key string, def int64, get func(*SamplingParams) *int64) spField {
	return spField{key, func(p *SamplingParams) bool { return *get(p) == def },
		func(e *enc, p *SamplingParams) { e.int(*get(p)) },
		func(p *SamplingParams, v node, _ [][]byte) (err error) { *get(p), err = v.asInt(); return }}
}

func floatF(key string, def float64, get func(*SamplingParams) *float64) spField {
	return spField{key, func(p *SamplingParams) bool { return *get(p) == def },
		func(e *enc, p *SamplingParams) { e.float(*get(p)) },
		func(p *SamplingParams, v node, _ [][]byte) (err error) { *get(p), err = v.asFloat(); return }}
}

func boolF(key string, def bool, get func(*SamplingParams) *bool) spField {
	return spField{key, func(p *SamplingParams) bool { return *get(p) == def },
		func(e *enc, p *SamplingParams) { e.bool(*get(p)) },
		func(p *SamplingParams, v node, _ [][]byte) (err error) { *get(p), err = v.asBool(); return }}
}

func optIntF(key string, get func(*SamplingParams) **int64) spField {
	return spField{key, func(p *SamplingParams) bool { return *get(p) == nil },
		func(e *enc, p *SamplingParams) { e.optInt(*get(p)) },
		func(p *SamplingParams, v node, _ [][]byte) (err error) { *get(p), err = optOf(v, node.asInt); return }}
}

func optBoolF(key string, get func(*SamplingParams) **bool) spField {
	return spField{key, func(p *SamplingParams) bool { return *get(p) == nil },
		func(e *enc, p *SamplingParams) { e.optBool(*get(p)) },
		func(p *SamplingParams, v node, _ [][]byte) (err error) { *get(p), err = optOf(v, node.asBool); return }}
}

func idsF(key string, get func(*SamplingParams) *[]int32) spField {
	return spField{key, func(p *SamplingParams) bool { return *get(p) == nil },
		func(e *enc, p *SamplingParams) { e.int32s(*get(p)) },
		func(p *SamplingParams, v node, _ [][]byte) (err error) {
			*get(p), err = listOf(v, node.asInt32)
			return
		}}
}

func rawF(key string, get func(*SamplingParams) *Raw) spField {
	return spField{key, func(p *SamplingParams) bool { return get(p).IsNil() },
		func(e *enc, p *SamplingParams) { e.raw(*get(p)) },
		func(p *SamplingParams, v node, _ [][]byte) error { *get(p) = v.asRaw(); return nil }}
}

var spFields = []spField{
	intF("n", 1, func(p *SamplingParams) *int64 { return &p.N }),
	floatF("presence_penalty", 0, func(p *SamplingParams) *float64 { return &p.PresencePenalty }),
	floatF("frequency_penalty", 0, func(p *SamplingParams) *float64 { return &p.FrequencyPenalty }),
	floatF("repetition_penalty", 1, func(p *SamplingParams) *float64 { return &p.RepetitionPenalty }),
	floatF("temperature", 1, func(p *SamplingParams) *float64 { return &p.Temperature }),
	optBoolF("watermarking", func(p *SamplingParams) **bool { return &p.Watermarking }),
	floatF("top_p", 1, func(p *SamplingParams) *float64 { return &p.TopP }),
	intF("top_k", 0, func(p *SamplingParams) *int64 { return &p.TopK }),
	floatF("min_p", 0, func(p *SamplingParams) *float64 { return &p.MinP }),
	optIntF("seed", func(p *SamplingParams) **int64 { return &p.Seed }),
	rawF("stop", func(p *SamplingParams) *Raw { return &p.Stop }),
	idsF("stop_token_ids", func(p *SamplingParams) *[]int32 { return &p.StopTokenIDs }),
	boolF("ignore_eos", false, func(p *SamplingParams) *bool { return &p.IgnoreEOS }),
	{"max_tokens", func(p *SamplingParams) bool { return p.MaxTokens != nil && *p.MaxTokens == 16 },
		func(e *enc, p *SamplingParams) { e.optInt(p.MaxTokens) },
		func(p *SamplingParams, v node, _ [][]byte) (err error) {
			p.MaxTokens, err = optOf(v, node.asInt)
			return
		}},
	intF("min_tokens", 0, func(p *SamplingParams) *int64 { return &p.MinTokens }),
	optIntF("logprobs", func(p *SamplingParams) **int64 { return &p.Logprobs }),
	optIntF("prompt_logprobs", func(p *SamplingParams) **int64 { return &p.PromptLogprobs }),
	{"prompt_logprob_token_ids", func(p *SamplingParams) bool { return p.PromptLogprobTokenIDs == nil },
		func(e *enc, p *SamplingParams) { e.optNDArray(p.PromptLogprobTokenIDs) },
		func(p *SamplingParams, v node, aux [][]byte) (err error) {
			p.PromptLogprobTokenIDs, err = optNDArrayFrom(v, aux)
			return
		}},
	optIntF("prompt_logprob_start", func(p *SamplingParams) **int64 { return &p.PromptLogprobStart }),
	idsF("logprob_token_ids", func(p *SamplingParams) *[]int32 { return &p.LogprobTokenIDs }),
	boolF("flat_logprobs", false, func(p *SamplingParams) *bool { return &p.FlatLogprobs }),
	boolF("detokenize", true, func(p *SamplingParams) *bool { return &p.Detokenize }),
	boolF("skip_special_tokens", true, func(p *SamplingParams) *bool { return &p.SkipSpecialTokens }),
	boolF("spaces_between_special_tokens", true, func(p *SamplingParams) *bool { return &p.SpacesBetweenSpecialTokens }),
	boolF("include_stop_str_in_output", false, func(p *SamplingParams) *bool { return &p.IncludeStopStrInOutput }),
	intF("output_kind", 0, func(p *SamplingParams) *int64 { return &p.OutputKind }),
	optIntF("stream_interval", func(p *SamplingParams) **int64 { return &p.StreamInterval }),
	boolF("skip_clone", false, func(p *SamplingParams) *bool { return &p.SkipClone }),
	intF("output_text_buffer_length", 0, func(p *SamplingParams) *int64 { return &p.OutputTextBufferLength }),
	optIntF("_eos_token_id", func(p *SamplingParams) **int64 { return &p.EOSTokenID }),
	{"_all_stop_token_ids", func(p *SamplingParams) bool { return len(p.AllStopTokenIDs) == 0 },
		func(e *enc, p *SamplingParams) { e.int32s(p.AllStopTokenIDs) },
		func(p *SamplingParams, v node, _ [][]byte) (err error) {
			ids, err := listOf(v, node.asInt32)
			if len(ids) > 0 { // the default is the empty set: nil
				p.AllStopTokenIDs = ids
			}
			return err
		}},
	boolF("_watermarking_skipped", false, func(p *SamplingParams) *bool { return &p.WatermarkingSkipped }),
	{"structured_outputs", func(p *SamplingParams) bool { return p.StructuredOutputs == nil },
		func(e *enc, p *SamplingParams) { p.StructuredOutputs.encode(e) },
		func(p *SamplingParams, v node, _ [][]byte) (err error) {
			p.StructuredOutputs, err = optOf(v, structuredFrom)
			return
		}},
	{"logit_bias", func(p *SamplingParams) bool { return p.LogitBias == nil },
		func(e *enc, p *SamplingParams) {
			e.mapLen(len(p.LogitBias))
			for _, b := range p.LogitBias {
				e.int(int64(b.TokenID))
				e.float(b.Bias)
			}
		},
		func(p *SamplingParams, v node, _ [][]byte) (err error) { p.LogitBias, err = logitBiasFrom(v); return }},
	idsF("allowed_token_ids", func(p *SamplingParams) *[]int32 { return &p.AllowedTokenIDs }),
	rawF("extra_args", func(p *SamplingParams) *Raw { return &p.ExtraArgs }),
	{"bad_words", func(p *SamplingParams) bool { return p.BadWords == nil },
		func(e *enc, p *SamplingParams) { e.strs(p.BadWords) },
		func(p *SamplingParams, v node, _ [][]byte) (err error) {
			p.BadWords, err = listOf(v, node.asStr)
			return
		}},
	{"_bad_words_token_ids", func(p *SamplingParams) bool { return p.BadWordsTokenIDs == nil },
		func(e *enc, p *SamplingParams) {
			e.arrayLen(len(p.BadWordsTokenIDs))
			forEach(p.BadWordsTokenIDs, e.int32s)
		},
		func(p *SamplingParams, v node, _ [][]byte) (err error) {
			p.BadWordsTokenIDs, err = listOf(v, func(n node) ([]int32, error) {
				ids, err := listOf(n, node.asInt32)
				if ids == nil && err == nil {
					ids = []int32{}
				}
				return ids, err
			})
			return
		}},
	optBoolF("skip_reading_prefix_cache", func(p *SamplingParams) **bool { return &p.SkipReadingPrefixCache }),
	optIntF("thinking_token_budget", func(p *SamplingParams) **int64 { return &p.ThinkingTokenBudget }),
	{"repetition_detection", func(p *SamplingParams) bool { return p.RepetitionDetection == nil },
		func(e *enc, p *SamplingParams) {
			r := p.RepetitionDetection
			e.mapLen(3)
			e.key("max_pattern_size")
			e.int(r.MaxPatternSize)
			e.key("min_pattern_size")
			e.int(r.MinPatternSize)
			e.key("min_count")
			e.int(r.MinCount)
		},
		func(p *SamplingParams, v node, _ [][]byte) (err error) {
			p.RepetitionDetection, err = optOf(v, repetitionFrom)
			return
		}},
	intF("routed_experts_prompt_start", 0, func(p *SamplingParams) *int64 { return &p.RoutedExpertsPromptStart }),
	idsF("trace_decode_token_ids", func(p *SamplingParams) *[]int32 { return &p.TraceDecodeTokenIDs }),
}

var spIndex = func() map[string]int {
	m := make(map[string]int, len(spFields))
	for i, f := range spFields {
		m[f.key] = i
	}
	return m
}()

func (p *SamplingParams) encode(e *enc) {
	n := 0
	for _, f := range spFields {
		if !f.isDef(p) {
			n++
		}
	}
	// msgspec sizes a struct's map header by its field count (43), so
	// SamplingParams always has a map16 header.
	e.buf.Write([]byte{0xde, byte(n >> 8), byte(n)})
	for _, f := range spFields {
		if !f.isDef(p) {
			e.key(f.key)
			f.encode(e, p)
		}
	}
}

func samplingParamsFrom(n node, aux [][]byte) (SamplingParams, error) {
	p := DefaultSamplingParams()
	err := n.entries(func(key string, v node) error {
		i, ok := spIndex[key]
		if !ok {
			return nil // unknown keys are ignored, as msgspec does
		}
		return spFields[i].decode(&p, v, aux)
	})
	if err != nil {
		return SamplingParams{}, fmt.Errorf("SamplingParams.%w", err)
	}
	return p, nil
}

func logitBiasFrom(n node) ([]LogitBias, error) {
	if n.isNil() {
		return nil, nil
	}
	if n.kind != kMap {
		return nil, wantErr("map", n)
	}
	out := make([]LogitBias, 0, len(n.kids)/2)
	for i := 0; i+1 < len(n.kids); i += 2 {
		id, err := n.kids[i].asInt32()
		if err != nil {
			return nil, err
		}
		bias, err := n.kids[i+1].asFloat()
		if err != nil {
			return nil, err
		}
		// A repeated key keeps its first place and its last value, as a dict.
		if j := slices.IndexFunc(out, func(b LogitBias) bool { return b.TokenID == id }); j >= 0 {
			out[j].Bias = bias
			continue
		}
		out = append(out, LogitBias{id, bias})
	}
	return out, nil
}

func (s *StructuredOutputsParams) encode(e *enc) {
	n := 9
	if s.Backend != nil {
		n++
	}
	if s.BackendWasAuto != nil {
		n++
	}
	e.mapLen(n)
	e.key("json")
	e.raw(s.JSON)
	e.key("regex")
	e.optStr(s.Regex)
	e.key("choice")
	e.optStrs(s.Choice)
	e.key("grammar")
	e.optStr(s.Grammar)
	e.key("json_object")
	e.optBool(s.JSONObject)
	e.key("disable_any_whitespace")
	e.bool(s.DisableAnyWhitespace)
	e.key("disable_additional_properties")
	e.bool(s.DisableAdditionalProperties)
	e.key("whitespace_pattern")
	e.optStr(s.WhitespacePattern)
	e.key("structural_tag")
	e.optStr(s.StructuralTag)
	if s.Backend != nil {
		e.key("_backend")
		e.str(*s.Backend)
	}
	if s.BackendWasAuto != nil {
		e.key("_backend_was_auto")
		e.bool(*s.BackendWasAuto)
	}
}

func structuredFrom(n node) (StructuredOutputsParams, error) {
	var s StructuredOutputsParams
	err := n.entries(func(key string, v node) (err error) {
		switch key {
		case "json":
			s.JSON = v.asRaw()
		case "regex":
			s.Regex, err = optOf(v, node.asStr)
		case "choice":
			s.Choice, err = listOf(v, node.asStr)
		case "grammar":
			s.Grammar, err = optOf(v, node.asStr)
		case "json_object":
			s.JSONObject, err = optOf(v, node.asBool)
		case "disable_any_whitespace":
			s.DisableAnyWhitespace, err = v.asBool()
		case "disable_additional_properties":
			s.DisableAdditionalProperties, err = v.asBool()
		case "whitespace_pattern":
			s.WhitespacePattern, err = optOf(v, node.asStr)
		case "structural_tag":
			s.StructuralTag, err = optOf(v, node.asStr)
		case "_backend":
			s.Backend, err = optOf(v, node.asStr)
		case "_backend_was_auto":
			s.BackendWasAuto, err = optOf(v, node.asBool)
		}
		return err
	})
	return s, err
}

func repetitionFrom(n node) (RepetitionDetectionParams, error) {
	var r RepetitionDetectionParams
	err := n.entries(func(key string, v node) (err error) {
		switch key {
		case "max_pattern_size":
			r.MaxPatternSize, err = v.asInt()
		case "min_pattern_size":
			r.MinPatternSize, err = v.asInt()
		case "min_count":
			r.MinCount, err = v.asInt()
		}
		return err
	})
	return r, err
}
