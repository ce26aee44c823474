package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// llama.cpp's native routes (llamacpp.go, llamacpp_routes.go) over the
// fake engine and the byte tokenizer (token id = byte).

func TestNativeCompletion(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok\nyes", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, "POST", "/completion", `{"prompt": "hi", "n_predict": 6, "return_tokens": true, "seed": 3}`, nil)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if r["content"] != "ok\nyes" || r["stop"] != true || r["stop_type"] != "limit" || r["has_new_line"] != true ||
		r["tokens_predicted"] != 6.0 || r["tokens_evaluated"] != 3.0 || r["prompt"] != "<|begin_of_text|>hi" || r["model"] != "dummy" {
		t.Errorf("result %s", body)
	}
	if toks := r["tokens"].([]any); len(toks) != 6 || toks[0] != float64('o') {
		t.Errorf("tokens %v", toks)
	}
	tm := r["timings"].(map[string]any)
	if tm["predicted_n"] != 6.0 || tm["prompt_n"].(float64)+tm["cache_n"].(float64) != 3 {
		t.Errorf("timings %v", tm)
	}
	gs := r["generation_settings"].(map[string]any)
	if gs["n_predict"] != 6.0 || gs["seed"] != 3.0 || gs["temperature"] != 0.8 || gs["top_k"] != 40.0 || gs["n_ctx"] != 64.0 {
		t.Errorf("generation_settings %v", gs)
	}
	req := f.requests()[0]
	sp := req.SamplingParams
	if sp.MaxTokens != 6 || sp.Temperature != 0.8 || sp.TopK != 40 || sp.TopP != 0.95 || sp.MinP != 0.05 || sp.Seed == nil || *sp.Seed != 3 {
		t.Errorf("sampling params %+v: want llama.cpp's defaults and the request's values", sp)
	}
	if !strings.HasSuffix(string(bytesOf(req.PromptTokenIDs)), "hi") || len(req.PromptTokenIDs) != 3 {
		t.Errorf("prompt ids %v", req.PromptTokenIDs)
	}
}

func bytesOf(ids []int32) []byte {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return b
}

func TestNativeCompletionStopTypes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		outs   []wire.EngineCoreOutput
		body   string
		want   string
		word   string
		output string
	}{
		{"eos", tokens("ab", wire.FinishStop), `{"prompt":"x"}`, "eos", "", "a"}, // the last token is the EOS
		{"limit", tokens("ab", wire.FinishLength), `{"prompt":"x","n_predict":2}`, "limit", "", "ab"},
		{"word", tokens("ab.cd", wire.FinishLength), `{"prompt":"x","stop":["."]}`, "word", ".", "ab"},
		{"eval only", tokens("a", wire.FinishLength), `{"prompt":"x","n_predict":0}`, "limit", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tc.outs }}
			ts := newTestServer(t, f, "")
			code, body := do(t, ts, "POST", "/completion", tc.body, nil)
			var r map[string]any
			if code != 200 || json.Unmarshal([]byte(body), &r) != nil {
				t.Fatalf("%d %s", code, body)
			}
			if r["stop_type"] != tc.want || r["stopping_word"] != tc.word || r["content"] != tc.output {
				t.Errorf("stop_type %v stopping_word %q content %q, want %s %q %q", r["stop_type"], r["stopping_word"], r["content"], tc.want, tc.word, tc.output)
			}
		})
	}
}

func TestNativeCompletionStream(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("abc", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, "POST", "/completions", `{"prompt": [104, "i"], "n_predict": 3, "stream": true, "response_fields": ["stop_type", "content"]}`, nil)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if strings.Contains(body, "[DONE]") {
		t.Error("llama.cpp's native stream ends without [DONE]")
	}
	var events []map[string]any
	for line := range strings.SplitSeq(body, "\n") {
		if rest, ok := strings.CutPrefix(line, "data: "); ok {
			var ev map[string]any
			if err := json.Unmarshal([]byte(rest), &ev); err != nil {
				t.Fatalf("%q: %v", rest, err)
			}
			events = append(events, ev)
		}
	}
	if len(events) != 4 {
		t.Fatalf("events %v, want 3 tokens and the final", events)
	}
	text := ""
	for i, ev := range events[:3] {
		if ev["stop"] != false || len(ev["tokens"].([]any)) != 1 || ev["tokens_predicted"] != float64(i+1) {
			t.Errorf("event %d: %v", i, ev)
		}
		text += ev["content"].(string)
	}
	last := events[3]
	if text != "abc" || last["stop_type"] != "limit" || last["content"] != "" || len(last) != 2 {
		t.Errorf("text %q, final %v (response_fields apply to it)", text, last)
	}
	// The mixed prompt: the token 104 ("h") then the text "i", no BOS:
	// the prompt does not start with text.
	if got := string(bytesOf(f.requests()[0].PromptTokenIDs)); got != "hi" {
		t.Errorf("prompt %q", got)
	}
}

func TestNativeCompletionManyPromptsAndProbs(t *testing.T) {
	f := &fakeEngine{script: func(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		outs := tokens(map[int]string{3: "ab", 2: "c"}[len(req.PromptTokenIDs)], wire.FinishLength) // BOS and the prompt
		for i := range outs {
			id := outs[i].NewTokenIDs[0]
			outs[i].NewLogprobs = &wire.Logprobs{TokenIDs: [][]int32{{id, id, 'z'}}, Logprobs: [][]float64{{-0.5, -0.5, -2}}, Ranks: []int32{1}}
		}
		return outs
	}}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, "POST", "/completion", `{"prompt": ["ab", "c"], "n_predict": 2, "n_probs": 2}`, nil)
	var rs []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &rs) != nil || len(rs) != 2 {
		t.Fatalf("%d %s: want an array of two results", code, body)
	}
	for i, want := range []string{"ab", "c"} {
		if rs[i]["index"] != float64(i) || rs[i]["content"] != want {
			t.Errorf("result %d: %v", i, rs[i])
		}
		probs := rs[i]["completion_probabilities"].([]any)
		if len(probs) != len(want) {
			t.Fatalf("result %d: %d probabilities", i, len(probs))
		}
		p := probs[0].(map[string]any)
		top := p["top_logprobs"].([]any)
		if p["id"] != float64(want[0]) || p["token"] != want[:1] || p["logprob"] != -0.5 || len(top) != 2 || top[1].(map[string]any)["token"] != "z" {
			t.Errorf("result %d: probability %v", i, p)
		}
	}
	if lp := f.requests()[0].SamplingParams.Logprobs; lp == nil || *lp != 2 {
		t.Errorf("engine logprobs %v, want n_probs", lp)
	}
}

func TestNativeCompletionErrors(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	for _, tc := range []struct{ body, want string }{
		{`{"n_predict": 3}`, `must be provided`},
		{`{"prompt": "` + strings.Repeat("x", 70) + `"}`, "exceed_context_size_error"},
		{`{"prompt": [1, 100000]}`, "out of vocabulary"},
		{`{"prompt": "x", "mirostat": 2}`, "mirostat"},
		{`{"prompt": "x", "logit_bias": [[100000, 1]]}`, "out of the vocabulary"},
		{`{"prompt": 5}`, "prompt"},
	} {
		code, body := do(t, ts, "POST", "/completion", tc.body, nil)
		if code != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.body, code, body, tc.want)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests reached the engine", n)
	}
}

func TestNativeCompletionBiasAndCache(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, "POST", "/completion", `{"prompt": "x", "logit_bias": [["hi", 2], [65, false]], "cache_prompt": false}`, nil)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	req := f.requests()[0]
	if b := req.SamplingParams.LogitBias; b['h'] != 2 || b['i'] != 2 || b[65] != -100 || len(b) != 3 {
		t.Errorf("logit bias %v: a text biases each of its tokens, false bans", b)
	}
	if !strings.Contains(body, `"logit_bias":[{"bias":null,"token":65},{"bias":2,"token":104},{"bias":2,"token":105}]`) {
		t.Errorf("generation_settings logit_bias: %s", body)
	}
	if !strings.HasPrefix(req.CacheSalt, "nocache-") {
		t.Errorf("cache_prompt false: cache salt %q, want one of its own", req.CacheSalt)
	}
}

func TestLlamaCppRoutes(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishStop) }}
	ts := newTestServerWith(t, f, func(c *Config) { c.ModelRoot = "/models/m.gguf" }, tokenizer.NewByte())
	code, body := do(t, ts, "POST", "/apply-template", `{"messages": [{"role": "user", "content": "hi"}]}`, nil)
	if code != 200 || !strings.Contains(body, `"prompt":`) || !strings.Contains(body, "hi") {
		t.Errorf("/apply-template: %d %s", code, body)
	}
	code, body = do(t, ts, "GET", "/props", "", nil)
	var props map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &props) != nil {
		t.Fatalf("/props: %d %s", code, body)
	}
	dgs := props["default_generation_settings"].(map[string]any)
	if _, body := do(t, ts, "POST", "/completion", `{"prompt": "x", "ignore_eos": true}`, nil); !strings.Contains(body, `"logit_bias":[{"bias":null,"token":257},{"bias":null,"token":259}]`) {
		t.Errorf("ignore_eos: generation_settings lists the EOS tokens as banned: %s", body)
	}
	if props["model_path"] != "/models/m.gguf" || dgs["n_ctx"] != 64.0 || dgs["params"].(map[string]any)["seed"] != float64(4294967295) {
		t.Errorf("/props: %s", body)
	}
	for _, path := range []string{"/models", "/v1/health"} {
		if code, body := do(t, ts, "GET", path, "", nil); code != 200 {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	if code, body := do(t, ts, "POST", "/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`, nil); code != 200 || !strings.Contains(body, "chat.completion") {
		t.Errorf("POST /chat/completions: %d %s", code, body)
	}
	// /detokenize: llama.cpp's content beside vLLM's prompt when no model is named.
	if code, body := do(t, ts, "POST", "/detokenize", `{"tokens": [104, 105]}`, nil); code != 200 || body != `{"prompt":"hi","content":"hi"}`+"\n" {
		t.Errorf("/detokenize without model: %d %q", code, body)
	}
	if code, body := do(t, ts, "POST", "/detokenize", `{"model": "dummy", "tokens": [104, 105]}`, nil); code != 200 || body != `{"prompt":"hi"}`+"\n" {
		t.Errorf("/detokenize with model: %d %q", code, body)
	}
}

func TestSlotsAndInputTokens(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return nil },
		states: []engineclient.EngineState{
			{Index: 0, Ready: true, Info: wire.Ready{MaxNumSeqs: 2}, NumRunning: 2},
			{Index: 1, Ready: true, Info: wire.Ready{MaxNumSeqs: 3}, NumRunning: 0, NumInFlight: 1},
			{Index: 2, Ready: false, Info: wire.Ready{MaxNumSeqs: 4}},
		}}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, "GET", "/slots", "", nil)
	var slots []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &slots) != nil {
		t.Fatalf("/slots: %d %s", code, body)
	}
	var busy []bool
	for i, sl := range slots {
		if sl["id"] != float64(i) || sl["n_ctx"] != 64.0 {
			t.Errorf("slot %d: %v", i, sl)
		}
		busy = append(busy, sl["is_processing"].(bool))
	}
	if want := []bool{true, true, true, false, false}; !slices.Equal(busy, want) {
		t.Errorf("is_processing %v, want %v (a ready engine's --max-num-seqs slots, its running requests busy)", busy, want)
	}
	if code, _ := do(t, ts, "GET", "/slots?fail_on_no_slot=1", "", nil); code != 200 {
		t.Errorf("fail_on_no_slot with free slots: %d", code)
	}
	f.states[1].NumRunning = 3
	if code, body := do(t, ts, "GET", "/slots?fail_on_no_slot=1", "", nil); code != 503 {
		t.Errorf("fail_on_no_slot, all busy: %d %s", code, body)
	}
	code, body = do(t, ts, "GET", "/props", "", nil)
	if code != 200 || !strings.Contains(body, `"total_slots":5`) {
		t.Errorf("/props total_slots: %d %s", code, body)
	}
	code, body = do(t, ts, "POST", "/chat/completions/input_tokens", `{"messages": [{"role": "user", "content": "hello"}]}`, nil)
	var n struct {
		InputTokens int `json:"input_tokens"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &n) != nil || n.InputTokens <= len("hello") {
		t.Errorf("input_tokens: %d %s", code, body)
	}
	off := newTestServerWith(t, f, func(c *Config) { c.DisableSlots = true }, tokenizer.NewByte())
	if code, body := do(t, off, "GET", "/slots", "", nil); code != 501 || !strings.Contains(body, "not_supported_error") {
		t.Errorf("--no-slots: %d %s", code, body)
	}
}

func TestDefaultSeed(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	seed := int64(42)
	ts := newTestServerWith(t, f, func(c *Config) { c.DefaultSeed = &seed }, tokenizer.NewByte())
	code, body := do(t, ts, "POST", "/completion", `{"prompt": "x", "n_predict": 1}`, nil)
	if code != 200 || !strings.Contains(body, `"seed":42`) {
		t.Errorf("generation_settings: %d %s, want --seed's 42", code, body)
	}
	if code, body := do(t, ts, "GET", "/props", "", nil); code != 200 || !strings.Contains(body, `"seed":42`) {
		t.Errorf("/props: %d %s, want --seed's 42 in the default settings", code, body)
	}
	for _, tc := range []struct {
		path, body string
		want       int64
	}{
		{"/completion", `{"prompt": "x", "n_predict": 1}`, 42},
		{"/completion", `{"prompt": "x", "n_predict": 1, "seed": 7}`, 7},
		{"/v1/completions", `{"prompt": "x", "max_tokens": 1}`, 42},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "max_tokens": 1, "seed": 9}`, 9},
	} {
		before := len(f.requests())
		if code, body := do(t, ts, "POST", tc.path, tc.body, nil); code != 200 {
			t.Fatalf("%s: %d %s", tc.path, code, body)
		}
		req := f.requests()[before]
		if req.SamplingParams.Seed == nil || *req.SamplingParams.Seed != tc.want {
			t.Errorf("%s %s: seed %v, want %d", tc.path, tc.body, req.SamplingParams.Seed, tc.want)
		}
	}
}

func TestTimingsPerTokenOnOpenAIRoutes(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("abc", wire.FinishLength) },
		timing: engineclient.Timing{Scheduled: 100, FirstToken: 100.5, LastToken: 101}}
	ts := newTestServer(t, f, "")
	chat := `"messages": [{"role": "user", "content": "x"}], "max_tokens": 3`
	code, body := do(t, ts, "POST", "/v1/chat/completions", `{`+chat+`, "timings_per_token": true}`, nil)
	if code != 200 || !strings.Contains(body, `"timings":{"cache_n":3,`) || !strings.Contains(body, `"predicted_n":3,"predicted_ms":500,`) {
		t.Errorf("chat with timings_per_token: %d %s", code, body)
	}
	if _, body := do(t, ts, "POST", "/v1/chat/completions", `{`+chat+`}`, nil); strings.Contains(body, "timings") {
		t.Errorf("chat without timings_per_token: %s", body)
	}
	_, body = do(t, ts, "POST", "/v1/completions", `{"prompt": "x", "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true}, "timings_per_token": true}`, nil)
	var usageLine string
	for line := range strings.SplitSeq(body, "\n") {
		if strings.Contains(line, `"usage"`) {
			usageLine = line
		}
		if strings.Contains(line, `"timings"`) && !strings.Contains(line, `"choices":[]`) {
			t.Errorf("timings on a chunk with choices: %s", line)
		}
	}
	if !strings.Contains(usageLine, `"prompt_ms":500`) {
		t.Errorf("usage chunk %s: want the timings", usageLine)
	}
}

// fimTokenizer is the byte tokenizer with Qwen's FIM tokens, on ids the
// byte tokenizer reserves.
type fimTokenizer struct{ tokenizer.Tokenizer }

var fimIDs = map[string]int32{"<|fim_prefix|>": 300, "<|fim_suffix|>": 301, "<|fim_middle|>": 302, "<|file_sep|>": 303}

func (f fimTokenizer) Encode(text string, addSpecial bool) []int32 {
	if id, ok := fimIDs[text]; ok {
		return []int32{id}
	}
	return f.Tokenizer.Encode(text, addSpecial)
}

func TestInfill(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("n();", wire.FinishStop) }}
	plain := newTestServer(t, f, "")
	if code, body := do(t, plain, "POST", "/infill", `{"input_prefix": "a", "input_suffix": "b"}`, nil); code != 501 || !strings.Contains(body, "FIM_PRE token missing") {
		t.Errorf("a model without FIM tokens: %d %s, want llama.cpp's 501", code, body)
	}
	ts := newTestServerWith(t, f, func(c *Config) { c.MaxModelLen = 256 }, fimTokenizer{tokenizer.NewByte()})
	code, body := do(t, ts, "POST", "/infill", `{"input_prefix": "ab", "prompt": "c", "input_suffix": "d",
		"input_extra": [{"filename": "x.h", "text": "T"}], "n_predict": 8}`, nil)
	if code != 200 || !strings.Contains(body, `"content":"n()"`) {
		t.Fatalf("%d %s", code, body)
	}
	got := f.requests()[0].PromptTokenIDs
	want := []int32{303, 'x', '.', 'h', '\n', 'T', 303}
	want = append(want, bytesOf32("filename\n")...)
	want = append(want, 256, 300, 'a', 'b', 'c', 301, 'd', 302) // BOS, then the FIM layout
	if !slices.Equal(got, want) {
		t.Errorf("prompt\n got %v\nwant %v", got, want)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"input_suffix": "b"}`, "input_prefix"},
		{`{"input_prefix": "a"}`, "input_suffix"},
		{`{"input_prefix": "a", "input_suffix": "b", "prompt": [1, 2]}`, "must be a string"},
		{`{"input_prefix": "a", "input_suffix": "b", "input_extra": [{}]}`, `\"text\" field`},
		{`{"input_prefix": "a", "input_suffix": "b", "input_extra": [{"filename": 123, "text": "x"}]}`, "filename"},
		{`{"input_prefix": "a", "input_suffix": "b", "input_extra": {"text": "x"}}`, "input_extra"},
	} {
		if code, body := do(t, ts, "POST", "/infill", tc.body, nil); code != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want 400 with %s", tc.body, code, body, tc.want)
		}
	}
}

func bytesOf32(s string) []int32 {
	out := make([]int32, len(s))
	for i := range len(s) {
		out[i] = int32(s[i])
	}
	return out
}

// TestSpeculativeSettings checks generation_settings' speculative.*:
// llama-server's defaults from an engine that does not draft, the
// engine's own (its READY) from one that does, and a request's values
// over either, in /props and in a /completion's settings.
func TestSpeculativeSettings(t *testing.T) {
	drafting := []engineclient.EngineState{{Index: 0, Ready: true, Info: wire.Ready{MaxNumSeqs: 4,
		Speculative: &wire.SpecInfo{NMax: 8, NMin: 2, PMin: 0.5, Type: "ngram-simple"}}}}
	for _, tc := range []struct {
		name    string
		states  []engineclient.EngineState
		request string
		want    [3]float64 // n_max, n_min, p_min
		types   string
	}{
		{"off", nil, `{"prompt": "x"}`, [3]float64{3, 0, 0}, "none"},
		{"engine drafts", drafting, `{"prompt": "x"}`, [3]float64{8, 2, 0.5}, "ngram-simple"},
		{"request", drafting, `{"prompt": "x", "speculative.n_max": 4, "speculative.n_min": 1, "speculative.p_min": 0.9}`, [3]float64{4, 1, 0.9}, "ngram-simple"},
		{"request, engine off", nil, `{"prompt": "x", "speculative.n_max": 0}`, [3]float64{0, 0, 0}, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{states: tc.states, script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishStop) }}
			ts := newTestServerWith(t, f, nil, tokenizer.NewByte())
			got := func(gs map[string]any) [3]float64 {
				if gs["speculative.types"] != tc.types {
					t.Errorf("speculative.types %v, want %q", gs["speculative.types"], tc.types)
				}
				return [3]float64{gs["speculative.n_max"].(float64), gs["speculative.n_min"].(float64), gs["speculative.p_min"].(float64)}
			}
			code, body := do(t, ts, "POST", "/completion", tc.request, nil)
			var r map[string]any
			if code != 200 || json.Unmarshal([]byte(body), &r) != nil {
				t.Fatalf("/completion: %d %s", code, body)
			}
			if g := got(r["generation_settings"].(map[string]any)); g != tc.want {
				t.Errorf("/completion generation_settings speculative n_max, n_min, p_min = %v, want %v", g, tc.want)
			}
			if tc.request != `{"prompt": "x"}` {
				return // /props shows the server's defaults only
			}
			code, body = do(t, ts, "GET", "/props", "", nil)
			var props map[string]any
			if code != 200 || json.Unmarshal([]byte(body), &props) != nil {
				t.Fatalf("/props: %d %s", code, body)
			}
			if g := got(props["default_generation_settings"].(map[string]any)["params"].(map[string]any)); g != tc.want {
				t.Errorf("/props speculative n_max, n_min, p_min = %v, want %v", g, tc.want)
			}
		})
	}
}
