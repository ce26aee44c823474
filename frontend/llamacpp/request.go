package llamacpp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// llama.cpp's sampling defaults (common/common.h, common_params_sampling).
const (
	DefaultTemperature = 0.8
	DefaultTopK        = 40
	DefaultTopP        = 0.95
	DefaultMinP        = 0.05
	DefaultRepeatLastN = 64
	// RandomSeed is LLAMA_DEFAULT_SEED: "pick a random seed".
	RandomSeed = 0xFFFFFFFF
)

// CompletionRequest is the body of POST /completion (and /completions,
// /infill). Pointer fields are nil when the request leaves them out, so
// that llama.cpp's defaults (not OpenAI's) apply: Resolve fills them.
type CompletionRequest struct {
	Prompt   Prompts `json:"prompt"`
	NPredict *int    `json:"n_predict"` // -1 = until the context ends; 0 = evaluate the prompt only
	// MaxTokens and MaxCompletionTokens are n_predict's aliases.
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`

	Temperature       *float64 `json:"temperature"`
	TopK              *int     `json:"top_k"`
	TopP              *float64 `json:"top_p"`
	MinP              *float64 `json:"min_p"`
	Seed              *int64   `json:"seed"` // -1 or 4294967295 = random
	RepeatPenalty     *float64 `json:"repeat_penalty"`
	RepeatLastN       *int     `json:"repeat_last_n"`
	PresencePenalty   float64  `json:"presence_penalty"`
	FrequencyPenalty  float64  `json:"frequency_penalty"`
	Stop              []string `json:"stop"`
	IgnoreEOS         bool     `json:"ignore_eos"`
	LogitBias         Biases   `json:"logit_bias"`
	NProbs            int      `json:"n_probs"`
	PostSamplingProbs bool     `json:"post_sampling_probs"`
	MinKeep           int      `json:"min_keep"`
	Samplers          []string `json:"samplers"`

	// Samplers Tandem does not have; their "off" values are accepted.
	TypicalP         *float64           `json:"typical_p"`         // off: 1
	Mirostat         int                `json:"mirostat"`          // off: 0
	DynatempRange    float64            `json:"dynatemp_range"`    // off: 0
	XTCProbability   float64            `json:"xtc_probability"`   // off: 0
	DRYMultiplier    float64            `json:"dry_multiplier"`    // off: 0
	TopNSigma        *float64           `json:"top_n_sigma"`       // off: < 0
	NKeep            int                `json:"n_keep"`            // context shift (--context-shift): prompt tokens kept after BOS; -1 = all
	NIndent          int                `json:"n_indent"`          // off: 0
	TMaxPredictMS    int64              `json:"t_max_predict_ms"`  // off: 0
	Lora             []openai.LoRAScale `json:"lora"`              // adapters by GET /lora-adapters id, the others at 0; absent: the server's scales
	NCacheReuse      int                `json:"n_cache_reuse"`     // KV shifting: accepted, prefix caching applies instead
	MirostatTau      *float64           `json:"mirostat_tau"`      // only with mirostat
	MirostatEta      *float64           `json:"mirostat_eta"`      // only with mirostat
	DynatempExponent *float64           `json:"dynatemp_exponent"` // only with dynatemp_range

	// Speculative decoding, per request (the server's --speculative-config
	// or --spec-type turns it on): at most n_max draft tokens (0 = none),
	// drafts shorter than n_min dropped. p_min (a draft model's minimum
	// probability) is accepted; n-gram drafts have no probability.
	SpecNMax *int     `json:"speculative.n_max"`
	SpecNMin *int     `json:"speculative.n_min"`
	SpecPMin *float64 `json:"speculative.p_min"`

	Grammar    string          `json:"grammar"`     // GBNF
	JSONSchema json.RawMessage `json:"json_schema"` // a JSON Schema, compiled to a grammar

	Stream            bool     `json:"stream"`
	ReturnTokens      bool     `json:"return_tokens"`
	CachePrompt       *bool    `json:"cache_prompt"` // default true
	IDSlot            *int     `json:"id_slot"`      // -1 = any
	NCmpl             *int     `json:"n_cmpl"`       // completions per prompt
	N                 *int     `json:"n"`            // n_cmpl's alias
	ResponseFields    []string `json:"response_fields"`
	TimingsPerToken   bool     `json:"timings_per_token"`
	ReturnProgress    bool     `json:"return_progress"`
	SSEPingInterval   *int     `json:"sse_ping_interval"`
	Model             string   `json:"model"`
	SessionID         string   `json:"session_id"`
	CacheSalt         string   `json:"cache_salt"`
	InputPrefix       *string  `json:"input_prefix"` // /infill
	InputSuffix       *string  `json:"input_suffix"` // /infill
	InputExtra        []Chunk  `json:"input_extra"`  // /infill: files of the project
	SkipSpecialTokens *bool    `json:"skip_special_tokens"`
}

// Chunk is one extra context file of /infill: text is required.
type Chunk struct {
	Filename *string `json:"filename"`
	Text     *string `json:"text"`
}

// Bias is one logit_bias entry: a token id or a text (every token of its
// tokenization), and a bias or a ban (false).
type Bias struct {
	Token  int32
	Text   string
	IsText bool
	Value  float64
	Ban    bool
}

// Biases is logit_bias in either of llama.cpp's shapes: an array of
// [token or text, bias or false] pairs, or an object {"token or text":
// bias or false} (OpenAI's shape).
type Biases []Bias

// UnmarshalJSON reads both shapes.
func (bs *Biases) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch firstByte(b) {
	case 'n':
		*bs = nil
		return nil
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make(Biases, 0, len(m))
		for _, k := range keys {
			bias := Bias{Text: k, IsText: true}
			if id, err := strconv.ParseInt(k, 10, 32); err == nil {
				bias = Bias{Token: int32(id)}
			}
			if err := bias.setValue(m[k]); err != nil {
				return fmt.Errorf("logit_bias[%q]: %w", k, err)
			}
			out = append(out, bias)
		}
		*bs = out
		return nil
	case '[':
		var pairs []json.RawMessage
		if err := json.Unmarshal(b, &pairs); err != nil {
			return err
		}
		out := make(Biases, 0, len(pairs))
		for i, raw := range pairs {
			var pair []json.RawMessage
			if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
				return fmt.Errorf("logit_bias[%d] must be a [token, bias] pair", i)
			}
			var bias Bias
			if firstByte(pair[0]) == '"' {
				bias.IsText = true
				if err := json.Unmarshal(pair[0], &bias.Text); err != nil {
					return err
				}
			} else if err := json.Unmarshal(pair[0], &bias.Token); err != nil {
				return fmt.Errorf("logit_bias[%d][0] must be a token id or a string", i)
			}
			if err := bias.setValue(pair[1]); err != nil {
				return fmt.Errorf("logit_bias[%d][1]: %w", i, err)
			}
			out = append(out, bias)
		}
		*bs = out
		return nil
	}
	return fmt.Errorf("logit_bias must be an array of [token, bias] pairs or an object, got %s", b)
}

func (bias *Bias) setValue(raw json.RawMessage) error {
	switch string(bytes.TrimSpace(raw)) {
	case "false":
		bias.Ban = true
		return nil
	case "true":
		return fmt.Errorf("a bias is a number or false")
	}
	if err := json.Unmarshal(raw, &bias.Value); err != nil {
		return fmt.Errorf("a bias is a number or false")
	}
	return nil
}
