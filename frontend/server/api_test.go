package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/chattemplate"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

func TestTokenize(t *testing.T) {
	ts := newTestServer(t, &fakeEngine{}, "")
	tests := []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"prompt with BOS", "/tokenize", `{"prompt":"hi"}`, 200, `{"count":3,"max_model_len":64,"tokens":[256,104,105],"token_strs":null}`},
		{"prompt without special", "/tokenize", `{"model":"dummy","prompt":"hi","add_special_tokens":false,"return_token_strs":true}`, 200, `{"count":2,"max_model_len":64,"tokens":[104,105],"token_strs":["h","i"]}`},
		{"empty prompt", "/tokenize", `{"prompt":""}`, 200, `{"count":1,"max_model_len":64,"tokens":[256],"token_strs":null}`},
		{"messages", "/tokenize", `{"messages":[{"role":"user","content":"a"}],"add_generation_prompt":false}`, 200, `{"count":9,"max_model_len":64,"tokens":[258,117,115,101,114,10,97,259,10],"token_strs":null}`},
		{"neither", "/tokenize", `{}`, 400, `"param":"prompt"`},
		// llama.cpp server's fields (tools/server/README.md, POST /tokenize).
		{"llama.cpp content", "/tokenize", `{"content":"hi"}`, 200, `{"count":2,"max_model_len":64,"tokens":[104,105],"token_strs":null}`},
		{"llama.cpp add_special", "/tokenize", `{"content":"hi","add_special":true}`, 200, `"tokens":[256,104,105]`},
		{"llama.cpp with_pieces", "/tokenize", `{"content":"h\u00e9","with_pieces":true}`, 200, `"tokens":[{"id":104,"piece":"h"},{"id":195,"piece":[195]},{"id":169,"piece":[169]}]`},
		{"content and prompt", "/tokenize", `{"content":"a","prompt":"a"}`, 400, `"param":"content"`},
		{"unknown model", "/tokenize", `{"model":"x","prompt":"a"}`, 404, `"code":"model_not_found"`},
		{"detokenize", "/detokenize", `{"model":"dummy","tokens":[256,104,105]}`, 200, `{"prompt":"\u003c|begin_of_text|\u003ehi"}`},
		{"detokenize out of vocab", "/detokenize", `{"tokens":[1000]}`, 400, `"message":"Token id 1000 is out of vocabulary`},
		// vLLM's wording, which its HTTP tests match (tests/entrypoints/openai).
		{"completion out of vocab", "/v1/completions", `{"prompt":[999999],"max_tokens":1}`, 400, `"message":"Token id 999999 is out of vocabulary (size 320).","type":"invalid_request_error","param":"prompt"`},
		{"completion empty prompt", "/v1/completions", `{"prompt":"","max_tokens":1}`, 400, `"message":"Either prompt or prompt_embeds must be provided and non-empty.","type":"invalid_request_error","param":"prompt"`},
		{"chat seed too large", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"seed":9223372036854775808}`, 400, `less_than_equal`},
		{"detokenize missing", "/detokenize", `{}`, 400, `"param":"tokens"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, ts, http.MethodPost, tc.path, tc.body, nil)
			if code != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s, want %d with %s", code, body, tc.status, tc.want)
			}
		})
	}
}

func TestMaxWaitingRequests(t *testing.T) {
	t.Run("own requests without a first token", func(t *testing.T) {
		f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }, hold: make(chan struct{})}
		ts := newTestServerWith(t, f, func(c *Config) { c.MaxWaitingRequests = 2 }, tokenizer.NewByte())
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","max_tokens":1}`, nil) })
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(f.requests()) < 2 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/completions", strings.NewReader(`{"prompt":"x","max_tokens":1}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("status %d Retry-After %q, want 429 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		close(f.hold)
		wg.Wait()
		if code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","max_tokens":1}`, nil); code != http.StatusOK {
			t.Fatalf("after the queue drained: %d %s", code, body)
		}
	})
	t.Run("engine-reported queue", func(t *testing.T) {
		f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }, numWaiting: 3}
		ts := newTestServerWith(t, f, func(c *Config) { c.MaxWaitingRequests = 3 }, tokenizer.NewByte())
		for _, path := range []string{"/v1/completions", "/v1/responses"} {
			body := `{"prompt":"x","input":"x","max_tokens":1}`
			if code, resp := do(t, ts, http.MethodPost, path, body, nil); code != http.StatusTooManyRequests || !strings.Contains(resp, `"code":"rate_limit_exceeded"`) {
				t.Fatalf("%s: %d %s, want 429", path, code, resp)
			}
		}
	})
}

func TestAuthAndRequestIDs(t *testing.T) {
	ts := newTestServer(t, &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}, "sekret")
	tests := []struct {
		name, method, path, body, key string
		status                        int
	}{
		{"health open", "GET", "/health", "", "", 200},
		{"ping open", "GET", "/ping", "", "", 200},
		{"metrics open", "GET", "/metrics", "", "", 200},
		{"version open", "GET", "/version", "", "", 200},
		{"web console open", "GET", "/", "", "", 200},
		{"console page open", "GET", "/console", "", "", 200},
		{"tokenize needs the key", "POST", "/tokenize", `{"prompt":"a"}`, "", 401},
		{"tokenize with the key", "POST", "/tokenize", `{"prompt":"a"}`, "sekret", 200},
		{"longer wrong key", "GET", "/v1/models", "", "sekret-and-more", 401},
		{"prefix of the key", "GET", "/v1/models", "", "sek", 401},
		{"models with the key", "GET", "/v1/models", "", "sekret", 200},
		{"unknown route with the key", "GET", "/v1/nope", "", "sekret", 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("X-Request-Id", "rid-"+tc.name)
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if got := resp.Header.Get("X-Request-Id"); got != "rid-"+tc.name {
				t.Fatalf("X-Request-Id %q not echoed", got)
			}
		})
	}
	code, body := do(t, ts, http.MethodGet, "/v1/models", "", nil)
	if code != 401 || !strings.Contains(body, `"code":"invalid_api_key"`) {
		t.Fatalf("%d %s", code, body)
	}
	// A request id is bounded like a session id (one 8 MB id once grew
	// the engine by a GB).
	code, body = do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"a","max_tokens":1}`,
		map[string]string{"Authorization": "Bearer sekret", "X-Request-Id": strings.Repeat("r", 257)})
	if code != 400 || !strings.Contains(body, `"param":"X-Request-Id"`) {
		t.Fatalf("long X-Request-Id: %d %s", code, body)
	}
}

func TestBestOf(t *testing.T) {
	// Child i scripts logprob -i per token: child 0 is the best.
	f := &fakeEngine{script: func(r *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		child := int(r.RequestID[0] - '0')
		outs := tokens(string(rune('p'+child))+"z", wire.FinishLength)
		for i := range outs {
			outs[i].NewLogprobs = &wire.Logprobs{TokenIDs: [][]int32{outs[i].NewTokenIDs}, Logprobs: [][]float64{{-float64(child)}}}
		}
		return outs
	}}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","max_tokens":2,"best_of":3,"seed":1}`, nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var resp struct {
		Choices []struct {
			Text     string
			Logprobs any
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Text != "pz" || resp.Choices[0].Logprobs != nil || resp.Usage.CompletionTokens != 6 {
		t.Fatalf("want the best of 3 (pz) without logprobs, 6 tokens used: %s", body)
	}
	if reqs := f.requests(); len(reqs) != 3 || *reqs[0].SamplingParams.Logprobs != 0 {
		t.Fatalf("%d engine requests", len(reqs))
	}
}

// templateTok is the byte tokenizer with a Jinja chat template.
type templateTok struct {
	tokenizer.Tokenizer
	tmpl tokenizer.Template
}

func (t templateTok) ChatTemplate() tokenizer.Template { return t.tmpl }

func TestChatTemplateSeesWholeMessages(t *testing.T) {
	src := `{% for m in messages %}[{{ m.role }}:{{ m.content }}{% if m.tool_calls %}|call {{ m.tool_calls[0].function.name }}{% endif %}{% if m.tool_call_id %}|id {{ m.tool_call_id }}{% endif %}]{% endfor %}` +
		`{% if tools %}<tools {{ tools|length }}>{% endif %}{% if flag %}<flag>{% endif %}{% if add_generation_prompt %}>{% endif %}`
	tmpl, err := chattemplate.New(src, chattemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServerWith(t, f, func(c *Config) { c.MaxModelLen = 512; c.NumBlocks = 64 }, templateTok{tokenizer.NewByte(), tmpl})
	tests := []struct {
		name, body, want string
	}{
		{"tool calls, parts, tools, kwargs",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"42"}],"tools":[{"type":"function","function":{"name":"get"}}],"chat_template_kwargs":{"flag":true},"max_tokens":1}`,
			"[user:a\nb][assistant:|call get][tool:42|id c1]<tools 1><flag>>"},
		{"continue final message",
			`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"Par"}],"continue_final_message":true,"max_tokens":1}`,
			"[user:q][assistant:Par"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := len(f.requests())
			if code, body := do(t, ts, http.MethodPost, "/v1/chat/completions", tc.body, nil); code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			got := tokenizer.NewByte().Decode(f.requests()[n].PromptTokenIDs, false)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("prompt (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContinuousUsageAndFingerprint(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ab", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/chat/completions",
		`{"messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"max_tokens":2}`, nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var completion []int
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			SystemFingerprint string `json:"system_fingerprint"`
			Usage             *struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatal(err)
		}
		if ch.Usage == nil || !strings.HasPrefix(ch.SystemFingerprint, "fp_") {
			t.Fatalf("chunk without usage or fingerprint: %s", data)
		}
		completion = append(completion, ch.Usage.CompletionTokens)
	}
	if diff := cmp.Diff([]int{0, 1, 2, 2}, completion); diff != "" { // the last is the usage chunk
		t.Fatalf("completion tokens per chunk (-want +got):\n%s", diff)
	}
}

func TestTruncatePromptTokens(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	tests := []struct {
		name, body string
		want       []int32
	}{
		{"keep last 3", `{"prompt":"abcdef","truncate_prompt_tokens":3,"max_tokens":1}`, []int32{'d', 'e', 'f'}},
		{"shorter prompt kept", `{"prompt":[1,2],"truncate_prompt_tokens":5,"max_tokens":1}`, []int32{1, 2}},
		{"token prompt", `{"prompt":[1,2,3,4],"truncate_prompt_tokens":2,"max_tokens":1}`, []int32{3, 4}},
		{"truncation_side left", `{"prompt":[1,2,3,4],"truncate_prompt_tokens":2,"truncation_side":"left","max_tokens":1}`, []int32{3, 4}},
		{"truncation_side right keeps the first", `{"prompt":[1,2,3,4],"truncate_prompt_tokens":2,"truncation_side":"right","max_tokens":1}`, []int32{1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := len(f.requests())
			if code, body := do(t, ts, http.MethodPost, "/v1/completions", tc.body, nil); code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			if diff := cmp.Diff(tc.want, f.requests()[n].PromptTokenIDs); diff != "" {
				t.Fatalf("prompt (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTruncationSideInvalid: a truncation_side other than left or right
// is vLLM's 400.
func TestTruncationSideInvalid(t *testing.T) {
	ts := newTestServer(t, &fakeEngine{}, "")
	code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":[1,2,3],"truncate_prompt_tokens":2,"truncation_side":"middle","max_tokens":1}`, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "`truncation_side` must be either 'left' or 'right'.") || !strings.Contains(body, `"param":"truncation_side"`) {
		t.Fatalf("%d %s", code, body)
	}
}

func TestChatEchoAndPriorityHeader(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("is", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	body := `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"Paris "}],"echo":true,"continue_final_message":true,"max_tokens":2,"priority":5}`
	code, resp := do(t, ts, http.MethodPost, "/v1/chat/completions", body, map[string]string{"X-Vllm-Priority": "-3"})
	if code != http.StatusOK || !strings.Contains(resp, `"content":"Paris is"`) {
		t.Fatalf("%d %s", code, resp)
	}
	if p := f.requests()[0].Priority; p != -3 {
		t.Fatalf("priority %d, want the header's -3", p)
	}
	code, resp = do(t, ts, http.MethodPost, "/v1/chat/completions", strings.Replace(body, `"max_tokens":2`, `"max_tokens":2,"stream":true`, 1), nil)
	if code != http.StatusOK || !strings.Contains(resp, `"delta":{"role":"assistant","content":"Paris "}`) {
		t.Fatalf("%d %s", code, resp)
	}
	if code, resp := do(t, ts, http.MethodPost, "/v1/chat/completions", body, map[string]string{"X-Vllm-Priority": "high"}); code != 400 || !strings.Contains(resp, "X-Vllm-Priority") {
		t.Fatalf("%d %s", code, resp)
	}
}
