package decisions

import (
	"encoding/json"
	"math"
)

// Answer is one question's answer, vLLM's PredicateAnswer, ChoiceAnswer or
// ScoreAnswer (the fields of the others are omitted).
type Answer struct {
	Type          string        `json:"type"`
	Name          *string       `json:"name"`
	Probability   *float64      `json:"probability,omitempty"` // predicate: P(true)
	Choice        any           `json:"choice,omitempty"`      // choice: the most likely value
	Score         *float64      `json:"score,omitempty"`       // score: the expected 0-indexed level
	Probabilities []Probability `json:"probabilities,omitempty"`
	Confidence    *float64      `json:"confidence,omitempty"` // the top label's probability × label mass
}

// Probability is one option's probability: a choice's value, or a score
// level's index and label.
type Probability struct {
	Value       any     `json:"value"` // choice: string or bool; score: the level's index
	Label       string  `json:"label,omitempty"`
	Probability float64 `json:"probability"`
}

// Read is what the engine gave for one question: the labels' logprobs in
// label order (natural log, over the whole vocabulary) and the tokens.
type Read struct {
	LabelLogprobs []float64
	InputTokens   int
	OutputTokens  int
	CachedTokens  int
}

// AnswerOf builds q's answer from its read: a softmax over the labels'
// logprobs gives the probabilities; the labels' total probability (label
// mass) scales the confidence, so a read that mostly wanted another token
// is not confident.
func AnswerOf(q *Question, r Read) Answer {
	probs := Softmax(r.LabelLogprobs)
	mass := 0.0
	for _, lp := range r.LabelLogprobs {
		mass += math.Exp(lp)
	}
	a := Answer{Type: q.Type, Name: q.Name}
	if q.Type == "predicate" {
		a.Probability = &probs[1]
		return a
	}
	top := 0
	for i, p := range probs {
		if p > probs[top] {
			top = i
		}
	}
	conf := probs[top] * mass
	a.Confidence = &conf
	if q.Type == "choice" {
		a.Choice = q.Choices[top].Value
		for i, c := range q.Choices {
			a.Probabilities = append(a.Probabilities, Probability{Value: c.Value, Probability: probs[i]})
		}
		return a
	}
	score := 0.0
	for i, l := range q.Levels {
		score += float64(i) * probs[i]
		a.Probabilities = append(a.Probabilities, Probability{Value: i, Label: l.Label, Probability: probs[i]})
	}
	a.Score = &score
	return a
}

// Softmax is the softmax of logprobs (or any logits; stable: shifted by
// their maximum), a new slice.
func Softmax(logprobs []float64) []float64 {
	top := math.Inf(-1)
	for _, lp := range logprobs {
		top = max(top, lp)
	}
	out := make([]float64, len(logprobs))
	total := 0.0
	for i, lp := range logprobs {
		out[i] = math.Exp(lp - top)
		total += out[i]
	}
	for i := range out {
		out[i] /= total
	}
	return out
}

// Usage is the response's usage, vLLM's OpenAIDecisionUsage.
type Usage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// Response is the response body, vLLM's DecisionResponse.
type Response struct {
	Model   string   `json:"model"`
	Answers []Answer `json:"answers"`
	Usage   Usage    `json:"usage"`
}

// ResponseOf answers every question of r from its reads, in order.
func ResponseOf(model string, r *Request, reads []Read) Response {
	out := Response{Model: model, Answers: make([]Answer, len(r.Questions))}
	for i := range r.Questions {
		out.Answers[i] = AnswerOf(&r.Questions[i], reads[i])
		out.Usage.InputTokens += reads[i].InputTokens
		out.Usage.OutputTokens += reads[i].OutputTokens
		out.Usage.InputTokensDetails.CachedTokens += reads[i].CachedTokens
	}
	out.Usage.TotalTokens = out.Usage.InputTokens + out.Usage.OutputTokens
	return out
}

// MarshalJSON writes the fields of the answer's type only, in vLLM's
// order (a false choice value included).
func (a Answer) MarshalJSON() ([]byte, error) {
	switch a.Type {
	case "predicate":
		return json.Marshal(struct {
			Type        string   `json:"type"`
			Name        *string  `json:"name"`
			Probability *float64 `json:"probability"`
		}{a.Type, a.Name, a.Probability})
	case "choice":
		return json.Marshal(struct {
			Type          string        `json:"type"`
			Name          *string       `json:"name"`
			Choice        any           `json:"choice"`
			Probabilities []Probability `json:"probabilities"`
			Confidence    *float64      `json:"confidence"`
		}{a.Type, a.Name, a.Choice, a.Probabilities, a.Confidence})
	}
	return json.Marshal(struct {
		Type          string        `json:"type"`
		Name          *string       `json:"name"`
		Score         *float64      `json:"score"`
		Probabilities []Probability `json:"probabilities"`
		Confidence    *float64      `json:"confidence"`
	}{a.Type, a.Name, a.Score, a.Probabilities, a.Confidence})
}

// MarshalJSON writes a choice's probability without a label and a score
// level's with it, as vLLM's ChoiceProbability and ScoreProbability.
func (p Probability) MarshalJSON() ([]byte, error) {
	if _, ok := p.Value.(int); ok {
		return json.Marshal(struct {
			Value       any     `json:"value"`
			Label       string  `json:"label"`
			Probability float64 `json:"probability"`
		}{p.Value, p.Label, p.Probability})
	}
	return json.Marshal(struct {
		Value       any     `json:"value"`
		Probability float64 `json:"probability"`
	}{p.Value, p.Probability})
}
