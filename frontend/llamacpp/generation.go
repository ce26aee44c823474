package llamacpp

import "github.com/tandem-llm/tandem/frontend/openai"

// GenerationSettings is generation_settings: the settings a completion
// ran with, in llama.cpp's names. The samplers Tandem does not have are
// reported at their "off" values, which are the only ones it accepts.
type GenerationSettings struct {
	NCtx                int                `json:"n_ctx"`
	Model               string             `json:"model"`
	Seed                int64              `json:"seed"`
	Temperature         float64            `json:"temperature"`
	DynatempRange       float64            `json:"dynatemp_range"`
	DynatempExponent    float64            `json:"dynatemp_exponent"`
	TopK                int                `json:"top_k"`
	TopP                float64            `json:"top_p"`
	MinP                float64            `json:"min_p"`
	TopNSigma           float64            `json:"top_n_sigma"`
	XTCProbability      float64            `json:"xtc_probability"`
	XTCThreshold        float64            `json:"xtc_threshold"`
	TypicalP            float64            `json:"typical_p"`
	RepeatLastN         int                `json:"repeat_last_n"`
	RepeatPenalty       float64            `json:"repeat_penalty"`
	PresencePenalty     float64            `json:"presence_penalty"`
	FrequencyPenalty    float64            `json:"frequency_penalty"`
	DRYMultiplier       float64            `json:"dry_multiplier"`
	DRYBase             float64            `json:"dry_base"`
	DRYAllowedLength    int                `json:"dry_allowed_length"`
	DRYPenaltyLastN     int                `json:"dry_penalty_last_n"`
	DRYSequenceBreakers []string           `json:"dry_sequence_breakers"`
	Mirostat            int                `json:"mirostat"`
	MirostatTau         float64            `json:"mirostat_tau"`
	MirostatEta         float64            `json:"mirostat_eta"`
	AdaptiveTarget      float64            `json:"adaptive_target"`
	AdaptiveDecay       float64            `json:"adaptive_decay"`
	Stop                []string           `json:"stop"`
	MaxTokens           int                `json:"max_tokens"`
	NPredict            int                `json:"n_predict"`
	NKeep               int                `json:"n_keep"`
	NDiscard            int                `json:"n_discard"`
	IgnoreEOS           bool               `json:"ignore_eos"`
	Stream              bool               `json:"stream"`
	LogitBias           []BiasEntry        `json:"logit_bias"`
	NProbs              int                `json:"n_probs"`
	MinKeep             int                `json:"min_keep"`
	Grammar             string             `json:"grammar"`
	ReasoningInContent  bool               `json:"reasoning_in_content"`
	GenerationPrompt    string             `json:"generation_prompt"`
	Samplers            []string           `json:"samplers"`
	SpeculativeTypes    string             `json:"speculative.types"`
	TimingsPerToken     bool               `json:"timings_per_token"`
	PostSamplingProbs   bool               `json:"post_sampling_probs"`
	Lora                []openai.LoRAScale `json:"lora"`
	SpeculativeNMax     int                `json:"speculative.n_max"`
	SpeculativeNMin     int                `json:"speculative.n_min"`
	SpeculativePMin     float64            `json:"speculative.p_min"`
	ChatFormat          string             `json:"chat_format"`
	ReasoningFormat     string             `json:"reasoning_format"`
	GrammarTriggers     []struct{}         `json:"grammar_triggers"`
	PreservedTokens     []int32            `json:"preserved_tokens"`
	GrammarLazy         bool               `json:"grammar_lazy"`
	BackendSampling     bool               `json:"backend_sampling"`
	IDSlot              int                `json:"id_slot"`
	CachePrompt         bool               `json:"cache_prompt"`
	ReturnTokens        bool               `json:"return_tokens"`
	ReturnProgress      bool               `json:"return_progress"`
}

// BiasEntry is one logit_bias entry as generation_settings lists it:
// a nil bias is -Inf (a ban, or an end-of-generation token under
// ignore_eos), which llama.cpp writes as null.
type BiasEntry struct {
	Bias  *float64 `json:"bias"`
	Token int32    `json:"token"`
}

// SpecDefaults are the speculative.* values generation_settings reports
// for a request that sets none: the engine's (its READY) when it drafts,
// else DefaultSpec.
type SpecDefaults struct {
	Types      string // speculative.types: llama.cpp's method names, "none" when off
	NMax, NMin int
	PMin       float64
}

// DefaultSpec is llama-server's --spec-type, --spec-draft-n-max, -n-min
// and -p-min defaults (Tandem's too), reported with speculative decoding
// off.
var DefaultSpec = SpecDefaults{Types: "none", NMax: 3, NMin: 0, PMin: 0}

// Generation is the settings' generation_settings for a server of
// context nCtx serving model; bias is logit_bias by token, spec the
// server's speculative decoding defaults.
func (s *Settings) Generation(nCtx int, model string, bias []BiasEntry, spec SpecDefaults) GenerationSettings {
	if s.SpecNMax != nil {
		spec.NMax = *s.SpecNMax
	}
	if s.SpecNMin != nil {
		spec.NMin = *s.SpecNMin
	}
	if s.SpecPMin != nil {
		spec.PMin = *s.SpecPMin
	}
	if bias == nil {
		bias = []BiasEntry{}
	}
	stop := s.Stop
	if stop == nil {
		stop = []string{}
	}
	return GenerationSettings{
		NCtx: nCtx, Model: model, Seed: s.Seed, Temperature: s.Temperature, DynatempExponent: 1, TopK: s.TopK, TopP: s.TopP,
		MinP: s.MinP, TopNSigma: -1, XTCThreshold: 0.1, TypicalP: 1, RepeatLastN: s.RepeatLastN,
		RepeatPenalty: s.RepeatPenalty, PresencePenalty: s.PresencePenalty, FrequencyPenalty: s.FrequencyPenalty,
		DRYBase: 1.75, DRYAllowedLength: 2, DRYPenaltyLastN: -1, DRYSequenceBreakers: []string{"\n", ":", "\"", "*"},
		MirostatTau: 5, MirostatEta: 0.1, AdaptiveTarget: -1, AdaptiveDecay: 0.9, Stop: stop, MaxTokens: s.NPredict,
		NPredict: s.NPredict, NKeep: s.NKeep, IgnoreEOS: s.IgnoreEOS, Stream: s.Stream, LogitBias: bias, NProbs: s.NProbs,
		MinKeep: s.MinKeep, Grammar: s.Grammar, Samplers: s.Samplers, TimingsPerToken: s.TimingsPerToken,
		PostSamplingProbs: s.PostSamplingProbs, Lora: append([]openai.LoRAScale{}, s.Lora...), SpeculativeTypes: spec.Types, SpeculativeNMax: spec.NMax,
		SpeculativeNMin: spec.NMin, SpeculativePMin: spec.PMin,
		ChatFormat: "Content-only", ReasoningFormat: "none", GrammarTriggers: []struct{}{}, PreservedTokens: []int32{},
		IDSlot: s.IDSlot, CachePrompt: s.CachePrompt, ReturnTokens: s.ReturnTokens, ReturnProgress: s.ReturnProgress,
	}
}
