package openai

import "testing"

// TestChatShape: conversations are told from prompts by their first
// bytes, without parsing the prompts.
func TestChatShape(t *testing.T) {
	for _, tc := range []struct {
		raw           string
		batch, shaped bool
	}{
		{`[{"role":"user","content":"hi"}]`, false, true},
		{` [ { "role": "user" } ]`, false, true},
		{`[[{"role":"user"}],[{"role":"user"}]]`, true, true},
		{"[\n [\t{}]]", true, true},
		{`"hi"`, false, false},
		{`["a","b"]`, false, false},
		{`[1,2,3]`, false, false},
		{`[[1,2],[3]]`, false, false},
		{`[]`, false, false},
		{``, false, false},
	} {
		if batch, shaped := chatShape([]byte(tc.raw)); batch != tc.batch || shaped != tc.shaped {
			t.Errorf("chatShape(%q) = %v, %v; want %v, %v", tc.raw, batch, shaped, tc.batch, tc.shaped)
		}
	}
}
