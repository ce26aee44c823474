package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// PromptLogprobsEntry is one position of PromptLogprobs: a JSON object
// keyed by token id whose keys keep their order, as vLLM's Python dict
// does: the prompt token first, then the alternatives by rank. (A Go map
// would sort the keys by their text.) A nil entry is null.
type PromptLogprobsEntry []PromptLogprobKey

// PromptLogprobKey is one key of a PromptLogprobsEntry.
type PromptLogprobKey struct {
	TokenID int32
	PromptLogprob
}

// Get is id's logprob and whether the entry has it.
func (e PromptLogprobsEntry) Get(id int32) (PromptLogprob, bool) {
	for _, k := range e {
		if k.TokenID == id {
			return k.PromptLogprob, true
		}
	}
	return PromptLogprob{}, false
}

// MarshalJSON implements json.Marshaler: an object in order, or null.
func (e PromptLogprobsEntry) MarshalJSON() ([]byte, error) {
	if e == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range e {
		if i > 0 {
			b.WriteByte(',')
		}
		v, err := json.Marshal(k.PromptLogprob)
		if err != nil {
			return nil, err
		}
		b.WriteByte('"')
		b.WriteString(strconv.Itoa(int(k.TokenID)))
		b.WriteString(`":`)
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON implements json.Unmarshaler, keeping the keys' order.
func (e *PromptLogprobsEntry) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*e = nil
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("prompt_logprobs entry: want an object, got %v (%v)", tok, err)
	}
	out := PromptLogprobsEntry{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return fmt.Errorf("prompt_logprobs entry: %w", err)
		}
		id, err := strconv.ParseInt(tok.(string), 10, 32)
		if err != nil {
			return fmt.Errorf("prompt_logprobs entry: key %q is not a token id", tok)
		}
		var lp PromptLogprob
		if err := d.Decode(&lp); err != nil {
			return fmt.Errorf("prompt_logprobs entry[%q]: %w", tok, err)
		}
		out = append(out, PromptLogprobKey{int32(id), lp})
	}
	*e = out
	return nil
}
