package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// TopLogprobs is one position of a completions choice's top_logprobs:
// token text → logprob as a JSON object whose keys keep the order they
// were set in — the sampled token first, then the alternatives, most
// likely first — as vLLM's Python dicts do (clients read the first key as
// the sampled token). Setting a text again updates its value in place.
// A nil TopLogprobs is JSON null (an echoed prompt's first token).
type TopLogprobs []TopLogprob

// TopLogprob is one key of a TopLogprobs.
type TopLogprob struct {
	Token   string
	Logprob Logprob
}

// Set gives token the logprob lp, appending it if new.
func (t *TopLogprobs) Set(token string, lp Logprob) {
	for i := range *t {
		if (*t)[i].Token == token {
			(*t)[i].Logprob = lp
			return
		}
	}
	*t = append(*t, TopLogprob{token, lp})
}

// Get is token's logprob.
func (t TopLogprobs) Get(token string) (Logprob, bool) {
	for _, e := range t {
		if e.Token == token {
			return e.Logprob, true
		}
	}
	return 0, false
}

// MarshalJSON implements json.Marshaler: an object in order, or null.
func (t TopLogprobs) MarshalJSON() ([]byte, error) {
	if t == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range t {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(e.Token)
		if err != nil {
			return nil, err
		}
		v, err := e.Logprob.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON implements json.Unmarshaler, keeping the keys' order.
func (t *TopLogprobs) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*t = nil
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("top_logprobs: want an object, got %v (%v)", tok, err)
	}
	out := TopLogprobs{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return fmt.Errorf("top_logprobs: %w", err)
		}
		var v float64
		if err := d.Decode(&v); err != nil {
			return fmt.Errorf("top_logprobs[%q]: %w", tok, err)
		}
		out.Set(tok.(string), Logprob(v))
	}
	*t = out
	return nil
}
