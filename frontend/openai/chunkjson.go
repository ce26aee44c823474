package openai

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends c as JSON to b, byte for byte what json.Marshal
// writes. A streamed chat completion sends one chunk per token, and
// json.Marshal's reflection (and its re-compaction of MarshalJSON's
// output) was a quarter of the frontend's CPU time at 64 streams; the
// common chunk — one choice, content or role, no tool calls, logprobs or
// usage — is written directly, anything else goes through MarshalJSON.
func (c ChatCompletionChunk) AppendJSON(b []byte) ([]byte, error) {
	if len(c.Choices) != 1 || c.Usage != nil || c.PromptTokenIDs != nil || c.Metrics != nil {
		return appendMarshal(b, c)
	}
	ch := &c.Choices[0]
	if ch.Logprobs != nil || len(ch.Delta.ToolCalls) > 0 || ch.Delta.FunctionCall != nil || ch.Delta.Reasoning != nil || !ch.StopReason.IsZero() || ch.TokenIDs != nil {
		return appendMarshal(b, c)
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, c.ID)
	b = append(b, `,"object":`...)
	b = appendJSONString(b, c.Object)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, c.Created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, c.Model)
	if c.SystemFingerprint != "" {
		b = append(b, `,"system_fingerprint":`...)
		b = appendJSONString(b, c.SystemFingerprint)
	}
	b = append(b, `,"choices":[{"index":`...)
	b = strconv.AppendInt(b, int64(ch.Index), 10)
	b = append(b, `,"delta":{`...)
	sep := ""
	if ch.Delta.Role != "" {
		b = append(b, `"role":`...)
		b = appendJSONString(b, ch.Delta.Role)
		sep = ","
	}
	if ch.Delta.Content != nil {
		b = append(b, sep...)
		b = append(b, `"content":`...)
		b = appendJSONString(b, *ch.Delta.Content)
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	if ch.FinishReason == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *ch.FinishReason)
	}
	return append(b, "}]}"...), nil
}

// appendMarshal appends v's MarshalJSON.
func appendMarshal(b []byte, v json.Marshaler) ([]byte, error) {
	j, err := v.MarshalJSON()
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// appendJSONString appends s as a JSON string the way json.Marshal
// writes it: HTML-safe (<, >, & escaped), invalid UTF-8 as U+FFFD, U+2028
// and U+2029 escaped. Plain ASCII is copied as is; anything else goes
// through json.Marshal, which is rarer and still correct.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // a string always marshals
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
