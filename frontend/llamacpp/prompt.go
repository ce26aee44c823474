package llamacpp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Part is one piece of a prompt: text to tokenize, or one token id.
type Part struct {
	Text   string
	Token  int32
	IsText bool
}

// Prompt is one prompt as llama.cpp takes it: a string, token ids, or
// both mixed ([12, 34, "string", 56]), in order.
type Prompt []Part

// StartsWithText reports whether a BOS may be added: llama.cpp adds one
// (when the model's add_bos_token says so) only to a prompt that is a
// string or whose first element is one.
func (p Prompt) StartsWithText() bool { return len(p) > 0 && p[0].IsText }

// Prompts is the prompt field: one prompt, or several (an array of
// strings, token arrays, mixed arrays or {"prompt_string"} objects),
// decoded by llama.cpp's rule: an array that holds a number anywhere is
// one prompt; any other array is a list of prompts.
type Prompts []Prompt

// UnmarshalJSON implements the rule above.
func (ps *Prompts) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(b, &elems); err != nil {
			return err
		}
		if !hasNumber(elems) {
			out := make(Prompts, 0, len(elems))
			for i, e := range elems {
				p, err := subprompt(e)
				if err != nil {
					return fmt.Errorf("prompt[%d]: %w", i, err)
				}
				out = append(out, p)
			}
			*ps = out
			return nil
		}
	}
	p, err := subprompt(b)
	if err != nil {
		return err
	}
	*ps = Prompts{p}
	return nil
}

func hasNumber(elems []json.RawMessage) bool {
	for _, e := range elems {
		if c := firstByte(e); c == '-' || (c >= '0' && c <= '9') {
			return true
		}
	}
	return false
}

func firstByte(b []byte) byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// subprompt decodes one prompt: "text", [ids and strings], or
// {"prompt_string": "text"} (multimodal_data is refused: Tandem serves
// no multimodal model).
func subprompt(b []byte) (Prompt, error) {
	switch firstByte(b) {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		return Prompt{{Text: s, IsText: true}}, nil
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(b, &elems); err != nil {
			return nil, err
		}
		p := make(Prompt, 0, len(elems))
		for _, e := range elems {
			if firstByte(e) == '"' {
				var s string
				if err := json.Unmarshal(e, &s); err != nil {
					return nil, err
				}
				p = append(p, Part{Text: s, IsText: true})
				continue
			}
			var id int32
			if err := json.Unmarshal(e, &id); err != nil {
				return nil, fmt.Errorf("a prompt array holds token ids (integers) and strings, got %s", e)
			}
			p = append(p, Part{Token: id})
		}
		return p, nil
	case '{':
		var o struct {
			PromptString   *string         `json:"prompt_string"`
			MultimodalData json.RawMessage `json:"multimodal_data"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return nil, err
		}
		if o.PromptString == nil {
			return nil, errors.New(`a prompt object needs "prompt_string"`)
		}
		if len(o.MultimodalData) > 0 && string(o.MultimodalData) != "null" && string(o.MultimodalData) != "[]" {
			return nil, errors.New("Multimodal data provided, but model does not support multimodal requests.") //lint:ignore ST1005 llama.cpp's wording
		}
		return Prompt{{Text: *o.PromptString, IsText: true}}, nil
	}
	return nil, fmt.Errorf("a prompt is a string, an array of token ids and strings, or an object with prompt_string; got %s", b)
}
