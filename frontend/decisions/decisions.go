package decisions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Limits, as vLLM's (protocol.py and NextTokenStrategy.limits).
const (
	MaxQuestions = 64  // per request, for a next-token model (the schema allows 200)
	MaxLabels    = 26  // A to Z
	MaxChoices   = 255 // the schema's bound, before MaxLabels applies
	MaxLevels    = 10
)

// Labels name a question's options in order; a capital letter is one
// token at the start of a reply for common tokenizers (the server checks).
const Labels = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// Request is a POST /v1/decisions body.
type Request struct {
	Model            string     `json:"model"`
	Input            Input      `json:"input"`
	Questions        []Question `json:"questions"`
	SafetyIdentifier *string    `json:"safety_identifier,omitempty"`
	Joint            bool       `json:"joint,omitempty"`
	CacheSalt        *string    `json:"cache_salt,omitempty"`
}

// Input is the input: a string, or user messages whose content is a
// string or input_text parts.
type Input struct {
	Text string // the messages' texts joined, as vLLM's input_text
}

// UnmarshalJSON accepts a string or a list of user messages.
func (in *Input) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		in.Text = s
		return nil
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &msgs); err != nil {
		return fmt.Errorf("input must be a string or a list of user messages")
	}
	texts := make([]string, 0, len(msgs))
	for i, m := range msgs {
		if m.Role != "user" {
			return fmt.Errorf("input[%d].role must be \"user\"", i)
		}
		if m.Type != "" && m.Type != "message" {
			return fmt.Errorf("input[%d].type must be \"message\"", i)
		}
		if err := json.Unmarshal(m.Content, &s); err == nil {
			texts = append(texts, s)
			continue
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return fmt.Errorf("input[%d].content must be a string or input_text parts", i)
		}
		pt := make([]string, len(parts))
		for j, p := range parts {
			if p.Type == "input_image" {
				//lint:ignore ST1005 vLLM's wording, which its tests match
				return fmt.Errorf("Decisions supports text input only; images are not supported")
			}
			if p.Type != "input_text" {
				return fmt.Errorf("input[%d].content[%d].type must be \"input_text\"", i, j)
			}
			pt[j] = p.Text
		}
		texts = append(texts, strings.Join(pt, "\n"))
	}
	in.Text = strings.Join(texts, "\n\n")
	return nil
}

// Question is one question: predicate (true or false), choice (one of
// choices, whose values are strings or booleans) or score (one of ordered
// levels).
type Question struct {
	Type         string         `json:"type"`
	Instructions string         `json:"instructions"`
	Name         *string        `json:"name,omitempty"`
	Choices      []ChoiceOption `json:"choices,omitempty"`
	Levels       []ScoreLevel   `json:"levels,omitempty"`
}

// ChoiceOption is one option of a choice question.
type ChoiceOption struct {
	Value       any    `json:"value"` // string or bool
	Description string `json:"description,omitempty"`
}

// ScoreLevel is one level of a score question.
type ScoreLevel struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Decode reads a request strictly (unknown fields are errors, as vLLM's
// extra="forbid") and validates it; the error is the 400's message.
func Decode(body []byte) (*Request, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	var r Request
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("invalid request: %w", err)
	}
	return &r, r.validate()
}

func (r *Request) validate() error {
	switch {
	case r.Model == "":
		return fmt.Errorf("model is required")
	case len(r.Questions) == 0:
		return fmt.Errorf("questions: at least 1 question")
	case r.Joint:
		return fmt.Errorf("joint: this model reads each question on its own; joint reads need DiffusionGemma")
	case len(r.Questions) > MaxQuestions:
		return fmt.Errorf("questions: at most %d for this model", MaxQuestions)
	case r.CacheSalt != nil && *r.CacheSalt == "":
		return fmt.Errorf("cache_salt: at least 1 character")
	}
	for i, q := range r.Questions {
		if err := q.validate(); err != nil {
			return fmt.Errorf("questions[%d]: %w", i, err)
		}
	}
	return nil
}

func (q *Question) validate() error {
	if q.Name != nil && *q.Name == "" {
		return fmt.Errorf("name must be a non-empty string when provided")
	}
	switch q.Type {
	case "predicate":
	case "choice":
		if len(q.Choices) < 2 || len(q.Choices) > MaxChoices {
			return fmt.Errorf("choices: between 2 and %d", MaxChoices)
		}
		seen := map[string]bool{}
		for j, c := range q.Choices {
			switch c.Value.(type) {
			case string, bool:
			default:
				return fmt.Errorf("choices[%d].value must be a string or a boolean", j)
			}
			k := fmt.Sprintf("%T:%v", c.Value, c.Value)
			if seen[k] {
				return fmt.Errorf("choice values must be distinct")
			}
			seen[k] = true
		}
		if len(q.Choices) > MaxLabels {
			//lint:ignore ST1005 vLLM's wording, which its tests match
			return fmt.Errorf("This model supports at most %d choices per question", MaxLabels)
		}
	case "score":
		if len(q.Levels) < 2 || len(q.Levels) > MaxLevels {
			return fmt.Errorf("levels: between 2 and %d", MaxLevels)
		}
	default:
		return fmt.Errorf("type must be predicate, choice or score, got %q", q.Type)
	}
	return nil
}

// option is one labelled option of a read.
type option struct{ name, description string }

// options are q's options as the model reads them: false and true for a
// predicate, a choice's values as JSON, a score's level labels.
func (q *Question) options() []option {
	switch q.Type {
	case "predicate":
		return []option{{"false", ""}, {"true", ""}}
	case "choice":
		out := make([]option, len(q.Choices))
		for i, c := range q.Choices {
			v, _ := json.Marshal(c.Value)
			out[i] = option{string(v), c.Description}
		}
		return out
	}
	out := make([]option, len(q.Levels))
	for i, l := range q.Levels {
		out[i] = option{l.Label, l.Description}
	}
	return out
}

// NumLabels is how many labels q's read scores (A, B, … in order).
func (q *Question) NumLabels() int { return len(q.options()) }

// Content is the user turn of q's read: the input, a blank line, then the
// question, its labelled options and the reply instruction.
func Content(input string, q *Question) string {
	var b strings.Builder
	b.WriteString(input)
	b.WriteString("\n\n")
	if q.Instructions != "" {
		b.WriteString("Question: ")
		b.WriteString(q.Instructions)
		b.WriteByte('\n')
	}
	for i, o := range q.options() {
		b.WriteString(Labels[i : i+1])
		b.WriteString(": ")
		b.WriteString(o.name)
		if o.description != "" {
			b.WriteString(" - ")
			b.WriteString(o.description)
		}
		b.WriteByte('\n')
	}
	b.WriteString("Answer with the letter of one option only.")
	return b.String()
}
