package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// fuzzRoutes are the routes that take a request body.
var fuzzRoutes = []string{"/v1/chat/completions", "/v1/completions", "/v1/responses", "/tokenize", "/detokenize",
	"/v1/messages", "/v1/messages/count_tokens"}

// FuzzHandlers sends arbitrary bodies through the whole handler stack (decoding,
// validation, session resolution, templating, tokenization, the fake engine,
// detokenization, SSE) of every route that takes one. Whatever the body, the answer is
// a 2xx or a 4xx, never a 5xx (a panic is a 500 through echo's Recover); an error is
// error JSON (OpenAI's, or Anthropic's on /v1/messages); a stream ends with [DONE]
// (Anthropic's with message_stop).
func FuzzHandlers(f *testing.F) {
	seeds := []string{
		`{"model":"dummy","messages":[{"role":"user","content":"hi"}],"max_tokens":3}`,
		`{"model":"dummy","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stream":true,"n":2,"stop":["k"]}`,
		`{"model":"dummy","prompt":"hello","max_tokens":2,"stream":true,"stream_options":{"include_usage":true},"logprobs":2}`,
		`{"model":"dummy","prompt":[[1,2],[3]],"echo":true,"best_of":2,"n":2}`,
		`{"model":"dummy","input":"hi","store":true,"stream":true}`,
		`{"model":"dummy","input":[{"role":"user","content":"x"}],"previous_response_id":"resp_x"}`,
		`{"model":"dummy","prompt":"hi","return_token_strs":true}`,
		`{"model":"dummy","messages":[{"role":"system","content":"s"},{"role":"assistant","content":"a"}],"continue_final_message":true,"add_generation_prompt":false}`,
		`{"model":"dummy","tokens":[104,105,256,-1,99999999]}`,
		`{"model":"dummy","prompt":"x","session_id":"s\u0000","use_beam_search":true,"n":2}`,
		`{"model":"dummy","prompt":"x","truncate_prompt_tokens":-1,"max_tokens":0}`,
		`{"model":"dummy","prompt":"x","vllm_xargs":{"session_id":["a"]},"cache_salt":""}`,
		`{"model":"dummy","input":[{"role":"user","content":"x"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"c","output":"y"}],"tools":[{"type":"function","name":"f"}],"tool_choice":"required","stream":true}`,
		`{"messages":null}`, `[]`, `null`, `"x"`, `{"prompt":{}}`, ``,
		`{"model":"m","max_tokens":3,"stream":true,"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stop_sequences":["k"]}`,
		`{"model":"m","max_tokens":3,"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"any"},"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]}`,
	}
	for i, s := range seeds {
		for r := range fuzzRoutes {
			if i%len(fuzzRoutes) == r || i >= 12 {
				f.Add(uint8(r), []byte(s))
			}
		}
	}
	fe := &fakeEngine{script: fuzzScript}
	s := New(Config{ServedModelName: "dummy", MaxModelLen: 64, BlockSize: 16, NumBlocks: 16, Version: "fuzz",
		MaxRequestBody: "64K", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, fe, tokenizer.NewByte())
	h := s.Handler()
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		out := rec.Body.String()
		if rec.Code >= 500 || rec.Code < 200 {
			t.Fatalf("POST %s %q: status %d: %s", path, body, rec.Code, out)
		}
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
			if strings.HasPrefix(path, "/v1/messages") { // Anthropic's events
				if !strings.HasSuffix(strings.TrimSpace(out), `{"type":"message_stop"}`) && !strings.Contains(out, "event: error\n") {
					t.Fatalf("POST %s %q: stream ends neither with message_stop nor an error:\n%s", path, body, out)
				}
				return
			}
			if !strings.HasSuffix(strings.TrimSpace(out), "data: [DONE]") && !strings.Contains(path, "responses") {
				t.Fatalf("POST %s %q: stream does not end with [DONE]:\n%s", path, body, out)
			}
			return
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("POST %s %q: status %d, body is not JSON: %s", path, body, rec.Code, out)
		}
		if rec.Code >= 400 && !strings.Contains(out, `"error"`) {
			t.Fatalf("POST %s %q: status %d without an error object: %s", path, body, rec.Code, out)
		}
	})
}

// fuzzScript answers like an engine: three tokens (the last one half a UTF-8
// character), with logprobs when the request asks for them (beam search does).
func fuzzScript(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
	outs := tokens("ok\xe2", wire.FinishLength)
	if k := req.SamplingParams.Logprobs; k != nil {
		n := max(0, min(*k, 20)) + 1
		for i := range outs {
			lp := &wire.Logprobs{TokenIDs: [][]int32{make([]int32, n)}, Logprobs: [][]float64{make([]float64, n)}, Ranks: []int32{1}}
			for j := range n {
				lp.TokenIDs[0][j] = outs[i].NewTokenIDs[0] + int32(j)
				lp.Logprobs[0][j] = -float64(j)
			}
			outs[i].NewLogprobs = lp
		}
	}
	return outs
}
