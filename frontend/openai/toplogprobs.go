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

// TopLogprobsOf is the TopLogprobs of n entries in order, entry(i) the
// i-th, a repeated text updating its first place as a Python dict
// assignment does. Linear in n: a full-vocabulary position (logprobs -1)
// has tens of thousands.
func TopLogprobsOf(n int, entry func(i int) (string, Logprob)) TopLogprobs {
	out := make(TopLogprobs, 0, n)
	var at map[string]int // text → index in out, once a scan would cost
	for i := range n {
		tok, lp := entry(i)
		j := -1
		if at != nil {
			if k, ok := at[tok]; ok {
				j = k
			}
		} else {
			for k := range out {
				if out[k].Token == tok {
					j = k
					break
				}
			}
		}
		if j >= 0 {
			out[j].Logprob = lp
			continue
		}
		out = append(out, TopLogprob{tok, lp})
		if at == nil && len(out) > 16 {
			at = make(map[string]int, n)
			for k, e := range out {
				at[e.Token] = k
			}
		} else if at != nil {
			at[tok] = len(out) - 1
		}
	}
	return out
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
	type kv struct {
		tok string
		lp  Logprob
	}
	var kvs []kv
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return fmt.Errorf("top_logprobs: %w", err)
		}
		var v float64
		if err := d.Decode(&v); err != nil {
			return fmt.Errorf("top_logprobs[%q]: %w", tok, err)
		}
		kvs = append(kvs, kv{tok.(string), Logprob(v)})
	}
	out := TopLogprobsOf(len(kvs), func(i int) (string, Logprob) { return kvs[i].tok, kvs[i].lp })
	*t = out
	return nil
}
