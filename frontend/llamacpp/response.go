package llamacpp

import (
	"encoding/json"
	"math"
	"strings"
)

// Stop types (stop_type).
const (
	StopNone  = "none"  // still generating
	StopEOS   = "eos"   // an end-of-generation token
	StopLimit = "limit" // n_predict or the context reached
	StopWord  = "word"  // a stop string
)

// Timings is llama.cpp's timings object: prompt processing and generation
// counts, durations (milliseconds) and rates.
type Timings struct {
	CacheN              int     `json:"cache_n"`  // prompt tokens served from the cache
	PromptN             int     `json:"prompt_n"` // prompt tokens computed
	PromptMS            float64 `json:"prompt_ms"`
	PromptPerTokenMS    float64 `json:"prompt_per_token_ms"`
	PromptPerSecond     float64 `json:"prompt_per_second"`
	PredictedN          int     `json:"predicted_n"`
	PredictedMS         float64 `json:"predicted_ms"`
	PredictedPerTokenMS float64 `json:"predicted_per_token_ms"`
	PredictedPerSecond  float64 `json:"predicted_per_second"`
	// DraftN and DraftNAccepted are the tokens speculative decoding
	// drafted for the request and how many it kept; absent without any,
	// as llama-server.
	DraftN         int  `json:"draft_n,omitempty"`
	DraftNAccepted *int `json:"draft_n_accepted,omitempty"` // set with DraftN, 0 included
}

// NewTimings derives the rates from counts and durations (ms); a rate
// over no time or no tokens is 0, never NaN or Inf (JSON has neither).
// predictedMS runs from the first generated token to the last, so the
// generation rate is over predicted-1 decode steps: the first token comes
// from the prompt's last step, as llama.cpp counts it.
func NewTimings(cached, prompt int, promptMS float64, predicted int, predictedMS float64) Timings {
	t := Timings{CacheN: cached, PromptN: prompt, PromptMS: promptMS, PredictedN: predicted, PredictedMS: predictedMS}
	t.PromptPerTokenMS, t.PromptPerSecond = rates(prompt, promptMS)
	t.PredictedPerTokenMS, t.PredictedPerSecond = rates(max(predicted-1, 0), predictedMS)
	return t
}

// WithDraft is t with the speculative decoding counts drafted and
// accepted (llama-server writes them only when something was drafted).
func (t Timings) WithDraft(drafted, accepted int) Timings {
	if drafted > 0 {
		t.DraftN, t.DraftNAccepted = drafted, &accepted
	}
	return t
}

func rates(n int, ms float64) (perTokenMS, perSecond float64) {
	if n > 0 {
		perTokenMS = ms / float64(n)
	}
	if ms > 0 {
		perSecond = 1e3 * float64(n) / ms
	}
	return perTokenMS, perSecond
}

// TokenProb is one token of completion_probabilities (or one of its
// alternatives): its id, text (valid UTF-8 only), bytes and logprob, or
// prob with post_sampling_probs.
type TokenProb struct {
	ID      int32
	Token   string
	Bytes   []int
	Logprob float64
	Top     []TokenProb // alternatives, best first; nil for an alternative
	// Post writes prob (e^logprob) and top_probs instead of logprob and
	// top_logprobs (post_sampling_probs).
	Post bool
}

// MarshalJSON writes llama.cpp's shape; a logprob of -Inf is the lowest
// float, as llama.cpp writes it (JSON has no -Inf).
func (t TokenProb) MarshalJSON() ([]byte, error) {
	b := []byte(`{"id":`)
	b, _ = appendJSON(b, t.ID)
	b = append(b, `,"token":`...)
	b, _ = appendJSON(b, strings.ToValidUTF8(t.Token, ""))
	b = append(b, `,"bytes":`...)
	bytes := t.Bytes
	if bytes == nil {
		bytes = []int{}
	}
	b, _ = appendJSON(b, bytes)
	if t.Post {
		b = append(b, `,"prob":`...)
		b, _ = appendJSON(b, math.Exp(t.Logprob))
	} else {
		lp := t.Logprob
		if math.IsInf(lp, -1) || math.IsNaN(lp) {
			lp = -math.MaxFloat32
		}
		b = append(b, `,"logprob":`...)
		b, _ = appendJSON(b, lp)
	}
	if t.Top != nil {
		key := `,"top_logprobs":`
		if t.Post {
			key = `,"top_probs":`
		}
		b = append(b, key...)
		top := make([]TokenProb, len(t.Top))
		for i, a := range t.Top {
			a.Post, a.Top = t.Post, nil
			top[i] = a
		}
		var err error
		if b, err = appendJSON(b, top); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendJSON(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	return append(b, j...), err
}

// Partial is one streamed event of /completion: the new text and its
// tokens, stop false.
type Partial struct {
	Index           int         `json:"index"`
	Content         string      `json:"content"`
	Tokens          []int32     `json:"tokens"`
	Stop            bool        `json:"stop"`
	IDSlot          int         `json:"id_slot"`
	TokensPredicted int         `json:"tokens_predicted"`
	TokensEvaluated int         `json:"tokens_evaluated"`
	Timings         *Timings    `json:"timings,omitempty"` // timings_per_token
	Probs           []TokenProb `json:"completion_probabilities,omitempty"`
	Progress        *Progress   `json:"prompt_progress,omitempty"` // return_progress
}

// Progress is prompt_progress: of total prompt tokens, cache came from
// the cache and processed are done, after time_ms.
type Progress struct {
	Total     int     `json:"total"`
	Cache     int     `json:"cache"`
	Processed int     `json:"processed"`
	TimeMS    float64 `json:"time_ms"`
}

// Result is a finished completion: the whole answer (or, at the end of a
// stream, an empty content with the totals).
type Result struct {
	Index              int                `json:"index"`
	Content            string             `json:"content"`
	Tokens             []int32            `json:"tokens"`
	IDSlot             int                `json:"id_slot"`
	Stop               bool               `json:"stop"`
	Model              string             `json:"model"`
	TokensPredicted    int                `json:"tokens_predicted"`
	TokensEvaluated    int                `json:"tokens_evaluated"`
	GenerationSettings GenerationSettings `json:"generation_settings"`
	Prompt             string             `json:"prompt"`
	HasNewLine         bool               `json:"has_new_line"`
	Truncated          bool               `json:"truncated"`
	StopType           string             `json:"stop_type"`
	StoppingWord       string             `json:"stopping_word"`
	TokensCached       int                `json:"tokens_cached"`
	Timings            Timings            `json:"timings"`
	Probs              []TokenProb        `json:"completion_probabilities,omitempty"`
}

// SelectFields is response_fields: only the named fields of v's JSON
// object, each under its path as written; "a/b" is field b of object a.
// A path that names nothing is left out. No fields: v whole.
func SelectFields(v any, fields []string) (any, error) {
	if len(fields) == 0 {
		return v, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var full map[string]any
	if err := json.Unmarshal(raw, &full); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(fields))
	for _, path := range fields {
		var cur any = full
		ok := true
		for k := range strings.SplitSeq(path, "/") {
			m, isObj := cur.(map[string]any)
			if !isObj {
				ok = false
				break
			}
			if cur, ok = m[k]; !ok {
				break
			}
		}
		if ok {
			out[path] = cur
		}
	}
	return out, nil
}
