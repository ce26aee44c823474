package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/chattemplate"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// TestModelNames: the served name and its aliases (--alias) are answered,
// another name is 404 model_not_found unless AcceptAnyModel (llama-server's
// behaviour); the card lists aliases and tags only when set.
func TestModelNames(t *testing.T) {
	ok := func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }
	chat := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`
	}
	tests := []struct {
		name   string
		edit   func(*Config)
		model  string
		status int
	}{
		{"served name", nil, "dummy", 200},
		{"unknown name", nil, "gpt-4o", 404},
		{"alias", func(c *Config) { c.ModelAliases = []string{"fim", "code"} }, "fim", 200},
		{"not an alias", func(c *Config) { c.ModelAliases = []string{"fim"} }, "fi", 404},
		{"any name accepted", func(c *Config) { c.AcceptAnyModel = true }, "gpt-3.5-turbo", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServerWith(t, &fakeEngine{script: ok}, tc.edit, tokenizer.NewByte())
			code, body := do(t, ts, http.MethodPost, "/v1/chat/completions", chat(tc.model), nil)
			if code != tc.status {
				t.Fatalf("%d %s, want %d", code, body, tc.status)
			}
			if code == 404 && !strings.Contains(body, `"code":"model_not_found"`) {
				t.Errorf("404 body %s", body)
			}
			if code == 200 && !strings.Contains(body, `"model":"dummy"`) {
				t.Errorf("the answer names another model than the served one: %s", body)
			}
			for _, path := range []string{"/tokenize"} {
				code, _ := do(t, ts, http.MethodPost, path, `{"model":"`+tc.model+`","prompt":"x"}`, nil)
				if code != tc.status {
					t.Errorf("%s: %d, want %d", path, code, tc.status)
				}
			}
		})
	}

	ts := newTestServerWith(t, &fakeEngine{script: ok}, func(c *Config) {
		c.ServedModelName, c.ModelAliases, c.ModelTags = "code", []string{"tinyllama-2", "fim", "code"}, []string{"chat", "small"}
	}, tokenizer.NewByte())
	var list struct {
		Data []struct {
			ID      string   `json:"id"`
			Aliases []string `json:"aliases"`
			Tags    []string `json:"tags"`
		} `json:"data"`
	}
	code, body := do(t, ts, http.MethodGet, "/v1/models", "", nil)
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Data) != 1 {
		t.Fatalf("%d %s %v", code, body, err)
	}
	got := list.Data[0]
	if got.ID != "code" || !cmp.Equal(got.Aliases, []string{"code", "tinyllama-2", "fim"}) || !cmp.Equal(got.Tags, []string{"chat", "small"}) {
		t.Errorf("card %+v", got)
	}
	if code, body := do(t, ts, http.MethodGet, "/v1/models/fim", "", nil); code != 200 || !strings.Contains(body, `"id":"code"`) {
		t.Errorf("retrieve by alias: %d %s", code, body)
	}
	plain := newTestServerWith(t, &fakeEngine{script: ok}, nil, tokenizer.NewByte())
	if _, body := do(t, plain, http.MethodGet, "/v1/models", "", nil); strings.Contains(body, "aliases") || strings.Contains(body, "tags") {
		t.Errorf("aliases or tags without --alias/--tags: %s", body)
	}
}

// templatedServer serves a fake engine whose every answer is one token
// with the chat template source and the config edit (nil: none).
func templatedServer(t *testing.T, source string, edit func(*Config)) (*httptest.Server, *fakeEngine) {
	t.Helper()
	tmpl, err := chattemplate.New(source, chattemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServerWith(t, f, func(c *Config) {
		c.MaxModelLen = 512
		if edit != nil {
			edit(c)
		}
	}, templateTok{tokenizer.NewByte(), tmpl})
	return ts, f
}

// TestTemplateKwargsDefaults: --default-chat-template-kwargs and
// --reasoning reach the template under the request's own keys, and auto
// turns enable_thinking on only for a template that reads it.
func TestTemplateKwargsDefaults(t *testing.T) {
	thinking := `{% if enable_thinking is defined %}think={{ enable_thinking }}{% endif %}{% if lang is defined %} lang={{ lang }}{% endif %}|`
	plain := `{% for m in messages %}{{ m.content }}{% endfor %}{% if lang is defined %} lang={{ lang }}{% endif %}|`
	tests := []struct {
		name, source string
		edit         func(*Config)
		kwargs       string
		want         string
	}{
		{"auto, template reads enable_thinking", thinking, nil, "", "think=True|"},
		{"auto, template does not", plain, nil, "", "hi|"},
		{"off", thinking, func(c *Config) { c.Reasoning = "off" }, "", "think=False|"},
		{"on", thinking, func(c *Config) { c.Reasoning = "on" }, "", "think=True|"},
		{"request wins over reasoning", thinking, func(c *Config) { c.Reasoning = "on" }, `{"enable_thinking":false}`, "think=False|"},
		{"server defaults", plain, func(c *Config) { c.DefaultChatTemplateKwargs = map[string]any{"lang": "fr"} }, "", "hi lang=fr|"},
		{"request wins over defaults", plain, func(c *Config) { c.DefaultChatTemplateKwargs = map[string]any{"lang": "fr"} }, `{"lang":"de"}`, "hi lang=de|"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, f := templatedServer(t, tc.source, tc.edit)
			body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":1`
			if tc.kwargs != "" {
				body += `,"chat_template_kwargs":` + tc.kwargs
			}
			if code, out := do(t, ts, http.MethodPost, "/v1/chat/completions", body+"}", nil); code != 200 {
				t.Fatalf("%d %s", code, out)
			}
			got := tokenizer.NewByte().Decode(f.requests()[0].PromptTokenIDs, false)
			if got != tc.want {
				t.Errorf("prompt %q, want %q", got, tc.want)
			}
		})
	}
}

// TestContextErrorShape: a prompt over the context is a 400 with OpenAI's
// code and message and llama-server's type, n_prompt_tokens and n_ctx.
func TestContextErrorShape(t *testing.T) {
	ts := newTestServerWith(t, &fakeEngine{}, func(c *Config) { c.MaxModelLen = 16; c.MaxRequestBody = "1M" }, tokenizer.NewByte())
	code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"`+strings.Repeat("x", 40)+`"}`, nil)
	var e struct {
		Error struct {
			Type          string `json:"type"`
			Code          string `json:"code"`
			NPromptTokens int    `json:"n_prompt_tokens"`
			NCtx          int    `json:"n_ctx"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || code != 400 {
		t.Fatalf("%d %s", code, body)
	}
	if e.Error.Type != "exceed_context_size_error" || e.Error.Code != "context_length_exceeded" || e.Error.NPromptTokens < 40 || e.Error.NCtx != 16 {
		t.Errorf("error %+v", e.Error)
	}
}

// TestVerbose: verbose: true (or the server's --verbose) adds llama.cpp's
// __verbose object with the rendered prompt; otherwise it is absent.
func TestVerbose(t *testing.T) {
	tmpl, err := chattemplate.New(`{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}`, chattemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		server, req bool
	}{{"off", false, false}, {"request", false, true}, {"server", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok", wire.FinishLength) }}
			ts := newTestServerWith(t, f, func(c *Config) { c.MaxModelLen = 512; c.Verbose = tc.server }, templateTok{tokenizer.NewByte(), tmpl})
			body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Book"}],"max_tokens":2,"verbose":%v}`, tc.req)
			code, out := do(t, ts, http.MethodPost, "/v1/chat/completions", body, nil)
			var got struct {
				Verbose *struct {
					Prompt, Content string
				} `json:"__verbose"`
			}
			if err := json.Unmarshal([]byte(out), &got); code != 200 || err != nil {
				t.Fatalf("%d %s", code, out)
			}
			if want := tc.server || tc.req; (got.Verbose != nil) != want {
				t.Fatalf("__verbose present %v, want %v: %s", got.Verbose != nil, want, out)
			}
			if got.Verbose != nil && (got.Verbose.Prompt != "<user>Book" || got.Verbose.Content != "ok") {
				t.Errorf("__verbose %+v", got.Verbose)
			}
		})
	}
}

// TestPrefillAssistant: with PrefillAssistant a final assistant message is
// continued, unless the request decides (add_generation_prompt); without
// it the template opens a new turn, as vLLM.
func TestPrefillAssistant(t *testing.T) {
	tmpl, err := chattemplate.New(`{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}`, chattemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := `"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"Par"}]`
	for _, tc := range []struct {
		name    string
		prefill bool
		extra   string
		want    string
	}{
		{"vLLM default: a new turn", false, "", "<user>q</user><assistant>Par</assistant><assistant>"},
		{"prefill", true, "", "<user>q</user><assistant>Par"},
		{"the request decides", true, `,"add_generation_prompt":true`, "<user>q</user><assistant>Par</assistant><assistant>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
			ts := newTestServerWith(t, f, func(c *Config) { c.MaxModelLen = 512; c.PrefillAssistant = tc.prefill }, templateTok{tokenizer.NewByte(), tmpl})
			if code, out := do(t, ts, http.MethodPost, "/v1/chat/completions", `{`+msgs+tc.extra+`,"max_tokens":1}`, nil); code != 200 {
				t.Fatalf("%d %s", code, out)
			}
			if got := tokenizer.NewByte().Decode(f.requests()[0].PromptTokenIDs, false); got != tc.want {
				t.Errorf("prompt %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReasoningEffort: a request's reasoning effort (chat's
// reasoning_effort, Responses' reasoning.effort, Anthropic's
// output_config.effort and thinking disabled, Ollama's think level)
// reaches the template as reasoning_effort, and as enable_thinking unless
// the request sets it, over the server's defaults; --reasoning-effort-map
// rewrites it; an unknown effort is a 400.
func TestReasoningEffort(t *testing.T) {
	source := `{% if reasoning_effort is defined %}effort={{ reasoning_effort }} {% endif %}{% if enable_thinking is defined %}think={{ enable_thinking }}{% endif %}|`
	user := `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name, path, body string
		edit             func(*Config)
		want             string // the prompt; "" = a 400
	}{
		{"chat low", "/v1/chat/completions", `{` + user + `,"reasoning_effort":"low"}`, nil, "effort=low think=True|"},
		{"chat none", "/v1/chat/completions", `{` + user + `,"reasoning_effort":"none"}`, nil, "effort=none think=False|"},
		{"kwargs win", "/v1/chat/completions", `{` + user + `,"reasoning_effort":"none","chat_template_kwargs":{"enable_thinking":true}}`, nil, "effort=none think=True|"},
		{"effort over --reasoning off", "/v1/chat/completions", `{` + user + `,"reasoning_effort":"high"}`, func(c *Config) { c.Reasoning = "off" }, "effort=high think=True|"},
		{"no effort", "/v1/chat/completions", `{` + user + `}`, func(c *Config) { c.Reasoning = "off" }, "think=False|"},
		{"effort map", "/v1/chat/completions", `{` + user + `,"reasoning_effort":"medium"}`, func(c *Config) { c.ReasoningEffortMap = map[string]string{"medium": "low"} }, "effort=low think=True|"},
		{"unknown effort", "/v1/chat/completions", `{` + user + `,"reasoning_effort":"extreme"}`, nil, ""},
		{"responses", "/v1/responses", `{"input":"hi","reasoning":{"effort":"minimal"}}`, nil, "effort=minimal think=True|"},
		{"responses unknown effort", "/v1/responses", `{"input":"hi","reasoning":{"effort":"x"}}`, nil, ""},
		{"anthropic effort", "/v1/messages", `{"model":"dummy","max_tokens":1,` + user + `,"output_config":{"effort":"high"}}`, nil, "effort=high think=True|"},
		{"anthropic thinking disabled", "/v1/messages", `{"model":"dummy","max_tokens":1,` + user + `,"thinking":{"type":"disabled"}}`, nil, "effort=none think=False|"},
		{"ollama think level", "/api/chat", `{"model":"dummy","stream":false,` + user + `,"think":"low"}`, nil, "effort=low think=True|"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, f := templatedServer(t, source, tc.edit)
			code, out := do(t, ts, http.MethodPost, tc.path, tc.body, nil)
			if tc.want == "" {
				if code != http.StatusBadRequest || !strings.Contains(out, "must be one of none, minimal") {
					t.Fatalf("%d %s, want a 400 naming the efforts", code, out)
				}
				return
			}
			if code != 200 {
				t.Fatalf("%d %s", code, out)
			}
			if got := tokenizer.NewByte().Decode(f.requests()[0].PromptTokenIDs, false); got != tc.want {
				t.Errorf("prompt %q, want %q", got, tc.want)
			}
			if tc.path == "/v1/responses" && !strings.Contains(out, `"reasoning":{"effort":"minimal"`) {
				t.Errorf("the response does not echo the effort: %s", out)
			}
		})
	}
}
