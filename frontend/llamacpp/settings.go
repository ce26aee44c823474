package llamacpp

import (
	"github.com/tandem-llm/tandem/frontend/openai"
)

// Settings are a request's generation settings with llama.cpp's defaults
// applied: what the request runs with, and what generation_settings
// echoes.
type Settings struct {
	NPredict          int // -1 = until the context ends
	Temperature       float64
	TopK              int
	TopP              float64
	MinP              float64
	Seed              int64 // RandomSeed = random
	RepeatPenalty     float64
	RepeatLastN       int
	PresencePenalty   float64
	FrequencyPenalty  float64
	Stop              []string
	IgnoreEOS         bool
	NProbs            int
	PostSamplingProbs bool
	MinKeep           int
	Samplers          []string
	Stream            bool
	NCmpl             int
	CachePrompt       bool
	TimingsPerToken   bool
	ReturnTokens      bool
	ReturnProgress    bool
	Grammar           string
	JSONSchema        []byte
	IDSlot            int
	NKeep             int // context shift: prompt tokens kept (after BOS); -1 = all
	// Lora is the request's adapter list (by GET /lora-adapters id; the
	// others at scale 0); nil: the server's global scales.
	Lora []openai.LoRAScale
	// SpecNMax and SpecNMin are speculative.n_max and n_min, SpecPMin
	// speculative.p_min (nil: the server's; p_min is reported only, the
	// engine's draft model keeps its own).
	SpecNMax, SpecNMin *int
	SpecPMin           *float64
}

// DefaultSamplers is llama.cpp's sampler chain, reported in
// generation_settings; Tandem's sampler applies penalties, top_k, top_p,
// min_p and temperature in its own fixed order.
var DefaultSamplers = []string{"penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"}

// MaxNProbs bounds n_probs, as the engines bound logprobs.
const MaxNProbs = 20

// Resolve applies llama.cpp's defaults and refuses what Tandem cannot
// honour: a sampler it does not have, switched on (mirostat, typical_p,
// DRY, XTC, dynamic temperature, top-n-sigma), a LoRA, multimodal data. A
// sampler at its "off" value is accepted, since clients send every field.
func (r *CompletionRequest) Resolve() (Settings, *openai.Error) {
	s := Settings{NPredict: -1, Temperature: DefaultTemperature, TopK: DefaultTopK, TopP: DefaultTopP, MinP: DefaultMinP,
		Seed: RandomSeed, RepeatPenalty: 1, RepeatLastN: DefaultRepeatLastN, PresencePenalty: r.PresencePenalty,
		FrequencyPenalty: r.FrequencyPenalty, Stop: r.Stop, IgnoreEOS: r.IgnoreEOS, NProbs: r.NProbs,
		PostSamplingProbs: r.PostSamplingProbs, MinKeep: r.MinKeep, Samplers: r.Samplers, Stream: r.Stream, NCmpl: 1,
		CachePrompt: true, TimingsPerToken: r.TimingsPerToken, ReturnTokens: r.ReturnTokens,
		ReturnProgress: r.ReturnProgress, Grammar: r.Grammar, IDSlot: -1, NKeep: r.NKeep,
		SpecNMax: r.SpecNMax, SpecNMin: r.SpecNMin, SpecPMin: r.SpecPMin}
	for _, n := range []*int{r.MaxCompletionTokens, r.MaxTokens, r.NPredict} { // n_predict wins over its aliases
		if n != nil {
			s.NPredict = *n
		}
	}
	if s.NPredict < -1 {
		return s, openai.BadRequest("n_predict", "'n_predict' must be -1 (no limit) or at least 0, got %d.", s.NPredict)
	}
	if r.Temperature != nil {
		s.Temperature = *r.Temperature
	}
	if r.TopK != nil {
		s.TopK = *r.TopK
	}
	if r.TopP != nil {
		s.TopP = *r.TopP
	}
	if r.MinP != nil {
		s.MinP = *r.MinP
	}
	if r.Seed != nil && *r.Seed != -1 {
		s.Seed = *r.Seed
	}
	if r.RepeatPenalty != nil {
		s.RepeatPenalty = *r.RepeatPenalty
	}
	if r.RepeatLastN != nil {
		s.RepeatLastN = *r.RepeatLastN
	}
	if r.CachePrompt != nil {
		s.CachePrompt = *r.CachePrompt
	}
	if r.IDSlot != nil {
		s.IDSlot = *r.IDSlot
	}
	s.Lora = r.Lora
	for _, n := range []*int{r.N, r.NCmpl} {
		if n != nil {
			s.NCmpl = *n
		}
	}
	if s.Samplers == nil {
		s.Samplers = DefaultSamplers
	}
	if len(r.JSONSchema) > 0 && string(r.JSONSchema) != "null" {
		s.JSONSchema = r.JSONSchema
	}
	if len(r.Prompt) == 0 {
		return s, openai.BadRequest("prompt", `"prompt" must be provided`)
	}
	switch {
	case s.NCmpl < 1 || s.NCmpl > openai.MaxN:
		return s, openai.BadRequest("n_cmpl", "'n_cmpl' must be between 1 and %d, got %d.", openai.MaxN, s.NCmpl)
	case s.NProbs < 0 || s.NProbs > MaxNProbs:
		return s, openai.BadRequest("n_probs", "'n_probs' must be between 0 and %d, got %d.", MaxNProbs, s.NProbs)
	case !(s.TopP >= 0 && s.TopP <= 1):
		return s, openai.BadRequest("top_p", "'top_p' must be in [0, 1], got %g.", s.TopP)
	case !(s.MinP >= 0 && s.MinP <= 1):
		return s, openai.BadRequest("min_p", "'min_p' must be in [0, 1], got %g.", s.MinP)
	case s.RepeatLastN < -1:
		return s, openai.BadRequest("repeat_last_n", "'repeat_last_n' must be -1 (the whole context) or at least 0, got %d.", s.RepeatLastN)
	case s.Grammar != "" && s.JSONSchema != nil:
		return s, openai.BadRequest("grammar", "Either \"json_schema\" or \"grammar\" can be specified, but not both")
	}
	if e := r.unsupported(); e != nil {
		return s, e
	}
	for _, l := range r.Lora {
		if e := l.Validate(); e != nil {
			return s, e
		}
	}
	return s, nil
}

// unsupported refuses the samplers and features Tandem does not have
// when a request switches them on.
func (r *CompletionRequest) unsupported() *openai.Error {
	off := func(field string, on bool) *openai.Error {
		if on {
			return openai.BadRequest(field, "'%s' is not supported by Tandem's sampler; leave it at its default (off).", field)
		}
		return nil
	}
	for _, e := range []*openai.Error{
		off("mirostat", r.Mirostat != 0),
		off("typical_p", r.TypicalP != nil && *r.TypicalP != 1 && *r.TypicalP != 0),
		off("dynatemp_range", r.DynatempRange != 0),
		off("xtc_probability", r.XTCProbability != 0),
		off("dry_multiplier", r.DRYMultiplier != 0),
		off("top_n_sigma", r.TopNSigma != nil && *r.TopNSigma >= 0),
		off("n_indent", r.NIndent != 0),
		off("t_max_predict_ms", r.TMaxPredictMS > 0),
	} {
		if e != nil {
			return e
		}
	}
	return nil
}

// Params maps the settings onto the OpenAI/vLLM parameters the server
// runs: a temperature of 0 or below is greedy, top_k 0 is off, the seed
// is random unless set, repeat_penalty is vLLM's repetition_penalty (over
// the prompt and every generated token: Tandem has no repeat_last_n
// window), and cache_prompt false gives the request a cache salt of its
// own, so that no cached prefix serves it. logitBias is logit_bias with
// texts already tokenized (token id → bias).
func (s *Settings) Params(logitBias map[string]float64, sessionID, cacheSalt string) openai.Params {
	p := openai.Params{Stop: s.Stop, IgnoreEOS: s.IgnoreEOS, PresencePenalty: s.PresencePenalty,
		FrequencyPenalty: s.FrequencyPenalty, LogitBias: logitBias, SessionID: sessionID, CacheSalt: cacheSalt,
		GuidedGrammar: s.Grammar, GuidedJSON: s.JSONSchema, LoRA: s.Lora}
	t := max(s.Temperature, 0)
	p.Temperature = &t
	tp := s.TopP
	if tp <= 0 {
		tp = 1 // llama.cpp: top_p 0 keeps the top token alone, as greedy would; off here
	}
	p.TopP = &tp
	if s.TopK > 0 {
		p.TopK = s.TopK
	}
	p.MinP = s.MinP
	if s.Seed != RandomSeed {
		seed := s.Seed
		p.Seed = &seed
	}
	if s.RepeatPenalty != 1 && s.RepeatPenalty > 0 && s.RepeatLastN != 0 {
		rp := s.RepeatPenalty
		p.RepetitionPenalty = &rp
	}
	if s.NCmpl > 1 {
		n := s.NCmpl
		p.N = &n
	}
	return p
}
