package server

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// TestPoolingChatForm: vLLM's chat form of the pooling routes' input —
// messages holding one conversation or a list of them, or input holding
// the same — renders each conversation through the chat template (no
// generation prompt unless asked; no special tokens on top) into one
// prompt: one embedding, or one classification, each. Prompts that are
// not conversations stay prompts; a malformed conversation is a 400 that
// reaches no engine.
func TestPoolingChatForm(t *testing.T) {
	f := headEngine(2)
	url := headServer(t, f, "yes", "no")
	render := func(addGen bool, msgs ...tokenizer.Message) []int32 {
		tok := tokenizer.NewByte()
		text, err := tok.ChatTemplate().Render(msgs, addGen, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tok.Encode(text, false)
	}
	hi := tokenizer.Message{Role: "user", Content: "hi"}
	sys := tokenizer.Message{Role: "system", Content: "be brief"}
	yo := tokenizer.Message{Role: "user", Content: "yo"}
	for _, tc := range []struct {
		name, path, body string
		want             [][]int32
	}{
		{"messages: one conversation", "/v1/embeddings", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`, [][]int32{render(false, sys, hi)}},
		{"messages: two conversations", "/v1/embeddings", `{"messages":[[{"role":"user","content":"hi"}],[{"role":"user","content":[{"type":"text","text":"yo"}]}]]}`, [][]int32{render(false, hi), render(false, yo)}},
		{"input: one conversation", "/v1/embeddings", `{"input":[{"role":"user","content":"hi"}]}`, [][]int32{render(false, hi)}},
		{"input: two conversations", "/v1/embeddings", `{"input":[[{"role":"user","content":"hi"}],[{"role":"user","content":"yo"}]]}`, [][]int32{render(false, hi), render(false, yo)}},
		{"add_generation_prompt", "/v1/embeddings", `{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true}`, [][]int32{render(true, hi)}},
		{"token ids are still a prompt", "/v1/embeddings", `{"input":[[1,2,3]]}`, [][]int32{{1, 2, 3}}},
		{"classify", "/classify", `{"messages":[{"role":"user","content":"hi"}]}`, [][]int32{render(false, hi)}},
		{"pooling", "/pooling", `{"task":"embed","messages":[[{"role":"user","content":"hi"}],[{"role":"user","content":"yo"}]]}`, [][]int32{render(false, hi), render(false, yo)}},
	} {
		before := len(f.requests())
		code, body := postTo(t, url, tc.path, tc.body)
		var out struct {
			Data []json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil || code != 200 || len(out.Data) != len(tc.want) {
			t.Fatalf("%s: %d %s", tc.name, code, body)
		}
		var got [][]int32
		for _, r := range f.requests()[before:] {
			got = append(got, r.PromptTokenIDs)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: prompts (-want +got):\n%s", tc.name, diff)
		}
	}

	before := len(f.requests())
	for _, tc := range []struct{ name, body string }{
		{"empty messages", `{"messages":[]}`},
		{"a message without a role", `{"messages":[{"content":"hi"}]}`},
		{"an empty conversation", `{"messages":[[{"role":"user","content":"hi"}],[]]}`},
		{"an image part", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:,"}}]}]}`},
		{"a per-request template", `{"messages":[{"role":"user","content":"hi"}],"chat_template":"{{ 1 }}"}`},
		{"both prompt flags", `{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true,"continue_final_message":true}`},
		{"neither input nor messages", `{"model":"dummy"}`},
	} {
		if code, body := postTo(t, url, "/v1/embeddings", tc.body); code != 400 {
			t.Errorf("%s: %d %s, want 400", tc.name, code, body)
		}
	}
	if n := len(f.requests()); n != before {
		t.Errorf("refused requests reached the engine: %d", n-before)
	}
}
