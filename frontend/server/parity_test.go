package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// The checks of vLLM's HTTP behaviours that issue #18 listed (parity).

// sseData returns the JSON events of an SSE body, without [DONE].
func sseData(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

func decodeMap(t *testing.T, body string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%q: %v", body, err)
	}
	return m
}

// isNull reports whether m has key with the value null.
func isNull(m map[string]any, key string) bool {
	v, ok := m[key]
	return ok && v == nil
}

func TestStreamUsageFollowsIncludeUsage(t *testing.T) {
	tests := []struct {
		name      string
		options   string // stream_options, "" = none
		force     bool   // --enable-force-include-usage
		wantUsage []bool // per event: whether it carries usage
	}{
		{"continuous without include_usage", `{"include_usage":false,"continuous_usage_stats":true}`, false, []bool{false, false, false}},
		{"continuous alone", `{"continuous_usage_stats":true}`, false, []bool{false, false, false}},
		{"include_usage and continuous", `{"include_usage":true,"continuous_usage_stats":true}`, false, []bool{true, true, true, true}},
		{"include_usage alone", `{"include_usage":true}`, false, []bool{false, false, false, true}},
		{"forced without options", "", true, []bool{true, true, true, true}},
		{"forced over include_usage false", `{"include_usage":false}`, true, []bool{true, true, true, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ab", wire.FinishLength) }}
			ts := newTestServerWith(t, f, func(c *Config) { c.ForceIncludeUsage = tc.force }, tokenizer.NewByte())
			body := `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":2`
			if tc.options != "" {
				body += `,"stream_options":` + tc.options
			}
			code, resp := do(t, ts, http.MethodPost, "/v1/chat/completions", body+"}", nil)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, resp)
			}
			var got []bool
			for _, ev := range sseData(t, resp) {
				_, has := ev["usage"]
				got = append(got, has)
			}
			if diff := cmp.Diff(tc.wantUsage, got); diff != "" {
				t.Fatalf("usage per event (-want +got):\n%s\n%s", diff, resp)
			}
		})
	}
}

// logprobScript answers with text, each token with logprob -0.5 and, when
// withTop, the alternative token 'z' at -2.
func logprobScript(text string, withTop bool) func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
	return func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		outs := tokens(text, wire.FinishLength)
		for i := range outs {
			ids, lps := []int32{outs[i].NewTokenIDs[0]}, []float64{-0.5}
			if withTop {
				ids, lps = append(ids, 'z'), append(lps, -2)
			}
			outs[i].NewLogprobs = &wire.Logprobs{TokenIDs: [][]int32{ids}, Logprobs: [][]float64{lps}}
		}
		return outs
	}
}

func TestCompletionLogprobsHoldTheSampledToken(t *testing.T) {
	tests := []struct {
		name     string
		logprobs int
		withTop  bool
		want     string
	}{
		{"logprobs 0", 0, false, `{"tokens":["a","b"],"token_logprobs":[-0.5,-0.5],"top_logprobs":[{"a":-0.5},{"b":-0.5}],"text_offset":[0,1]}`},
		{"logprobs 1", 1, true, `{"tokens":["a","b"],"token_logprobs":[-0.5,-0.5],"top_logprobs":[{"a":-0.5,"z":-2},{"b":-0.5,"z":-2}],"text_offset":[0,1]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: logprobScript("ab", tc.withTop)}
			ts := newTestServer(t, f, "")
			code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","max_tokens":2,"logprobs":`+string(rune('0'+tc.logprobs))+`}`, nil)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var resp struct {
				Choices []struct {
					Logprobs json.RawMessage
				}
			}
			if err := json.Unmarshal([]byte(body), &resp); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(resp.Choices[0].Logprobs)); diff != "" {
				t.Fatalf("logprobs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLogitBiasOutsideTheVocabulary(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServerWith(t, f, func(c *Config) { c.VocabSize = 300 }, tokenizer.NewByte())
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		body := `{"prompt":"x","messages":[{"role":"user","content":"x"}],"max_tokens":1,"logit_bias":{"1000":1,"5":2,"300":-1}}`
		code, resp := do(t, ts, http.MethodPost, path, body, nil)
		e := decodeMap(t, resp)["error"].(map[string]any)
		want := "token_id(s) [300, 1000] in logit_bias contain out-of-vocab token ids. Vocabulary size: 300"
		if code != http.StatusBadRequest || e["message"] != want || e["param"] != "logit_bias" {
			t.Fatalf("%s: %d %s, want 400 %q", path, code, resp, want)
		}
	}
	if code, resp := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","max_tokens":1,"logit_bias":{"299":1}}`, nil); code != http.StatusOK {
		t.Fatalf("the last id of the vocabulary: %d %s", code, resp)
	}
}

func TestResponsesCarryVLLMsNullFields(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ab", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	_, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","max_tokens":2}`, nil)
	choice := decodeMap(t, body)["choices"].([]any)[0].(map[string]any)
	for _, k := range []string{"prompt_logprobs", "prompt_token_ids", "token_ids"} {
		if !isNull(choice, k) {
			t.Errorf("completion choice: %s is not null: %s", k, body)
		}
	}
	_, body = do(t, ts, http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2}`, nil)
	chat := decodeMap(t, body)
	for _, k := range []string{"prompt_logprobs", "prompt_token_ids"} {
		if !isNull(chat, k) {
			t.Errorf("chat completion: %s is not null: %s", k, body)
		}
	}
	if !isNull(chat["choices"].([]any)[0].(map[string]any), "token_ids") {
		t.Errorf("chat choice: token_ids is not null: %s", body)
	}
}

func TestModelCards(t *testing.T) {
	f := &fakeEngine{}
	ts := newTestServerWith(t, f, func(c *Config) { c.ServedModelName, c.ModelRoot = "org/m", "/models/m.gguf" }, tokenizer.NewByte())
	code, body := do(t, ts, http.MethodGet, "/v1/models", "", nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	card := decodeMap(t, body)["data"].([]any)[0].(map[string]any)
	perms, _ := card["permission"].([]any)
	if card["root"] != "/models/m.gguf" || !isNull(card, "parent") || len(perms) != 1 {
		t.Fatalf("card %s: want root, parent null and one permission", body)
	}
	perm := perms[0].(map[string]any)
	if perm["object"] != "model_permission" || perm["allow_sampling"] != true || perm["organization"] != "*" || !isNull(perm, "group") ||
		!strings.HasPrefix(perm["id"].(string), "modelperm-") {
		t.Fatalf("permission %v", perm)
	}
	for _, path := range []string{"/v1/models/org/m", "/v1/models/org%2Fm"} {
		code, got := do(t, ts, http.MethodGet, path, "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, got)
		}
		if diff := cmp.Diff(card, decodeMap(t, got)); diff != "" {
			t.Fatalf("GET %s is not the listed card (-list +got):\n%s", path, diff)
		}
	}
	code, body = do(t, ts, http.MethodGet, "/v1/models/other", "", nil)
	e := decodeMap(t, body)["error"].(map[string]any)
	if code != http.StatusNotFound || e["code"] != "model_not_found" || e["param"] != "model" {
		t.Fatalf("unknown model: %d %s", code, body)
	}
}

func TestReturnTokenIDs(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ab", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	_, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":[7,8],"max_tokens":2,"return_token_ids":true}`, nil)
	choice := decodeMap(t, body)["choices"].([]any)[0].(map[string]any)
	if diff := cmp.Diff([]any{7.0, 8.0}, choice["prompt_token_ids"]); diff != "" {
		t.Errorf("completion prompt_token_ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{97.0, 98.0}, choice["token_ids"]); diff != "" {
		t.Errorf("completion token_ids (-want +got):\n%s", diff)
	}
	_, body = do(t, ts, http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"return_token_ids":true}`, nil)
	chat := decodeMap(t, body)
	if ids, _ := chat["prompt_token_ids"].([]any); len(ids) == 0 {
		t.Errorf("chat prompt_token_ids: %s", body)
	}
	if diff := cmp.Diff([]any{97.0, 98.0}, chat["choices"].([]any)[0].(map[string]any)["token_ids"]); diff != "" {
		t.Errorf("chat token_ids (-want +got):\n%s", diff)
	}
	_, body = do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":[7,8],"max_tokens":2,"return_token_ids":true,"stream":true}`, nil)
	var prompts, outs []any
	for _, ev := range sseData(t, body) {
		for _, c := range ev["choices"].([]any) {
			ch := c.(map[string]any)
			if p, ok := ch["prompt_token_ids"].([]any); ok {
				prompts = append(prompts, p...)
			}
			if o, ok := ch["token_ids"].([]any); ok {
				outs = append(outs, o...)
			}
		}
	}
	if diff := cmp.Diff([]any{7.0, 8.0, 97.0, 98.0}, append(prompts, outs...)); diff != "" {
		t.Errorf("streamed prompt_token_ids then token_ids (-want +got):\n%s", diff)
	}
}

func TestReturnTokensAsTokenIDs(t *testing.T) {
	tests := []struct {
		name   string
		server bool   // --return-tokens-as-token-ids
		field  string // the request's return_tokens_as_token_ids, "" = unset
		want   string // the first logprobs token
	}{
		{"off", false, "", "a"},
		{"request", false, "true", "token_id:97"},
		{"server", true, "", "token_id:97"},
		{"request overrides server", true, "false", "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: logprobScript("ab", true)}
			ts := newTestServerWith(t, f, func(c *Config) { c.ReturnTokensAsTokenIDs = tc.server }, tokenizer.NewByte())
			extra := ""
			if tc.field != "" {
				extra = `,"return_tokens_as_token_ids":` + tc.field
			}
			_, body := do(t, ts, http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"logprobs":true,"top_logprobs":1`+extra+`}`, nil)
			var chat struct {
				Choices []struct {
					Logprobs struct {
						Content []struct {
							Token       string
							Bytes       []int
							TopLogprobs []struct{ Token string } `json:"top_logprobs"`
						}
					}
				}
			}
			if err := json.Unmarshal([]byte(body), &chat); err != nil {
				t.Fatal(err)
			}
			got := chat.Choices[0].Logprobs.Content[0]
			if got.Token != tc.want || string(rune(got.Bytes[0])) != tc.want[:1] {
				t.Fatalf("chat token %q bytes %v, want %q: %s", got.Token, got.Bytes, tc.want, body)
			}
			_, body = do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","max_tokens":2,"logprobs":1`+extra+`}`, nil)
			if !strings.Contains(body, `"tokens":["`+tc.want+`"`) {
				t.Fatalf("completion tokens, want %q first: %s", tc.want, body)
			}
		})
	}
}

// TestTextOffsetCountsCharacters: vLLM's text_offset is Python's len of
// the token strings, code points, so a client can slice the text with it.
func TestTextOffsetCountsCharacters(t *testing.T) {
	lps := []tokenLogprob{{token: "é"}, {token: "日本"}, {token: "x"}, {token: "🙂"}, {token: "y"}}
	got := completionLogprobs(lps, 2).TextOffset
	if diff := cmp.Diff([]int{2, 3, 5, 6, 7}, got); diff != "" {
		t.Errorf("text_offset (-want +got):\n%s", diff)
	}
	echoed := &openai.CompletionLogprobs{Tokens: []string{"ü", "ber"}, TextOffset: []int{0, 1}, TokenLogprobs: []*openai.Logprob{nil, nil}, TopLogprobs: []openai.TopLogprobs{nil, nil}}
	all := appendLogprobs(echoed, completionLogprobs(lps[:2], 9))
	if diff := cmp.Diff([]int{0, 1, 4, 5}, all.TextOffset); diff != "" {
		t.Errorf("echoed then generated text_offset (-want +got):\n%s", diff)
	}
}

// TestTopLogprobsSampledFirst: vLLM's clients read a position's first
// top_logprobs key as the sampled token (tests/entrypoints/openai's
// test_return_tokens_as_ids), so it comes first even when an alternative
// sorts before it.
func TestTopLogprobsSampledFirst(t *testing.T) {
	lps := []tokenLogprob{{token: "zz", logprob: -0.5, top: []topLogprob{{token: "aa", logprob: -1}, {token: "zz", logprob: -0.5}}}}
	got, err := json.Marshal(completionLogprobs(lps, 0).TopLogprobs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`[{"zz":-0.5,"aa":-1}]`, string(got)); diff != "" {
		t.Errorf("top_logprobs (-want +got):\n%s", diff)
	}
}

// TestStreamedTokenIDsAcrossSplitCharacters: a token holding only a
// character's first bytes sends no text; with return_token_ids its id
// still reaches the client, on the next chunk (vLLM's
// test_chat_completion_with_emoji_and_token_ids decodes them back).
func TestStreamedTokenIDsAcrossSplitCharacters(t *testing.T) {
	const text = "é🐱!" // byte tokens: 2 + 4 + 1
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens(text, wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	var want []any
	for _, b := range []byte(text) {
		want = append(want, float64(b))
	}
	for _, tc := range []struct{ path, body, field string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":7,"return_token_ids":true,"stream":true}`, "delta"},
		{"/v1/completions", `{"prompt":[7],"max_tokens":7,"return_token_ids":true,"stream":true}`, "text"},
	} {
		_, body := do(t, ts, http.MethodPost, tc.path, tc.body, nil)
		var ids []any
		var got string
		for _, ev := range sseData(t, body) {
			for _, c := range ev["choices"].([]any) {
				ch := c.(map[string]any)
				if o, ok := ch["token_ids"].([]any); ok {
					ids = append(ids, o...)
				}
				if d, ok := ch["delta"].(map[string]any); ok {
					s, _ := d["content"].(string)
					got += s
				} else if s, ok := ch["text"].(string); ok {
					got += s
				}
			}
		}
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("%s: streamed token_ids (-want +got):\n%s", tc.path, diff)
		}
		if got != text {
			t.Errorf("%s: streamed text %q, want %q", tc.path, got, text)
		}
	}
}

// TestLogprobTokenIDsWithSampled: with logprob_token_ids the engine
// reports the sampled token then exactly those ids; chat's top_logprobs
// list the sampled token with them, streamed or not, as vLLM's do.
func TestLogprobTokenIDsWithSampled(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		outs := tokens("*", wire.FinishLength) // '*' = 42
		outs[0].NewLogprobs = &wire.Logprobs{TokenIDs: [][]int32{{42, 100, 200}}, Logprobs: [][]float64{{-0.1, -3, -5}}}
		return outs
	}}
	ts := newTestServer(t, f, "")
	body := `{"messages":[{"role":"user","content":"x"}],"max_tokens":1,"logprobs":true,"logprob_token_ids":[100,200],"return_tokens_as_token_ids":true`
	want := []string{"token_id:42", "token_id:100", "token_id:200"}
	tops := func(content []any) []string {
		var got []string
		for _, e := range content[0].(map[string]any)["top_logprobs"].([]any) {
			got = append(got, e.(map[string]any)["token"].(string))
		}
		return got
	}
	_, resp := do(t, ts, http.MethodPost, "/v1/chat/completions", body+"}", nil)
	lp := decodeMap(t, resp)["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)
	if diff := cmp.Diff(want, tops(lp["content"].([]any))); diff != "" {
		t.Errorf("top_logprobs (-want +got):\n%s", diff)
	}
	_, resp = do(t, ts, http.MethodPost, "/v1/chat/completions", body+`,"stream":true}`, nil)
	var got []string
	for _, ev := range sseData(t, resp) {
		for _, c := range ev["choices"].([]any) {
			if l, ok := c.(map[string]any)["logprobs"].(map[string]any); ok && len(l["content"].([]any)) > 0 {
				got = append(got, tops(l["content"].([]any))...)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("streamed top_logprobs (-want +got):\n%s", diff)
	}
}

// TestKVTransferPromptTokenIDs: vLLM's decode-side token reuse — a
// chat request whose kv_transfer_params carry prompt_token_ids runs on
// those ids, not on its messages (tests/entrypoints/openai's
// test_kv_transfer_prompt_token_ids_round_trip).
func TestKVTransferPromptTokenIDs(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/chat/completions",
		`{"messages":[{"role":"user","content":"unrelated"}],"max_tokens":2,"return_token_ids":true,"kv_transfer_params":{"prompt_token_ids":[7,8,9],"do_remote_prefill":true}}`, nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if diff := cmp.Diff([]any{7.0, 8.0, 9.0}, decodeMap(t, body)["prompt_token_ids"]); diff != "" {
		t.Errorf("prompt_token_ids (-want +got):\n%s", diff)
	}
	reqs := f.requests()
	if diff := cmp.Diff([]int32{7, 8, 9}, reqs[len(reqs)-1].PromptTokenIDs); diff != "" {
		t.Errorf("engine prompt (-want +got):\n%s", diff)
	}
	code, body = do(t, ts, http.MethodPost, "/v1/chat/completions",
		`{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"kv_transfer_params":{"prompt_token_ids":[7,999999]}}`, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "kv_transfer_params.prompt_token_ids") || !strings.Contains(body, "out of vocabulary") {
		t.Errorf("out-of-vocabulary forwarded id: %d %s", code, body)
	}
}
