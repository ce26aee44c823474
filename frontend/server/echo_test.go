package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire"
)

// promptLogprobScript is logprobScript that also sends, on the first
// output of a request asking for prompt logprobs, a row per prompt
// position after the first: the prompt token at -1 (rank 2) and 'z' at -3.
func promptLogprobScript(text string) func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
	return func(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		outs := logprobScript(text, false)(req)
		if req.SamplingParams.PromptLogprobs == nil {
			return outs
		}
		lp := &wire.Logprobs{}
		for _, id := range req.PromptTokenIDs[1:] {
			lp.TokenIDs = append(lp.TokenIDs, []int32{id, 'z'})
			lp.Logprobs = append(lp.Logprobs, []float64{-1, -3})
			lp.Ranks = append(lp.Ranks, 2)
		}
		outs[0].NewPromptLogprobs = lp
		return outs
	}
}

// TestStreamedEcho checks a completions stream with echo as vLLM's (the
// prompt is token ids: no BOS, whose text the echo leaves out): the
// prompt goes out with the first tokens and, with logprobs, so do the
// prompt's logprobs (the first token's null); text_offset counts the
// choice's text sent before each chunk.
func TestStreamedEcho(t *testing.T) {
	tests := []struct {
		name            string
		body            string
		wantText        []string
		wantLogprobs    []string // per chunk; "" = none
		wantPromptLProb bool     // the engine is asked for prompt logprobs
	}{
		{"echo", `"echo":true`, []string{"xya", "b"}, []string{"", ""}, false},
		{"echo with logprobs", `"echo":true,"logprobs":1`, []string{"xya", "b"}, []string{
			`{"tokens":["x","y","a"],"token_logprobs":[null,-1,-0.5],"top_logprobs":[null,{"y":-1,"z":-3},{"a":-0.5}],"text_offset":[0,1,2]}`,
			`{"tokens":["b"],"token_logprobs":[-0.5],"top_logprobs":[{"b":-0.5}],"text_offset":[3]}`,
		}, true},
		{"logprobs without echo", `"logprobs":0`, []string{"a", "b"}, []string{
			`{"tokens":["a"],"token_logprobs":[-0.5],"top_logprobs":[{"a":-0.5}],"text_offset":[0]}`,
			`{"tokens":["b"],"token_logprobs":[-0.5],"top_logprobs":[{"b":-0.5}],"text_offset":[1]}`,
		}, false},
		{"prompt_logprobs 0 without echo", `"logprobs":0,"prompt_logprobs":0`, []string{"a", "b"}, []string{
			`{"tokens":["a"],"token_logprobs":[-0.5],"top_logprobs":[{"a":-0.5}],"text_offset":[0]}`,
			`{"tokens":["b"],"token_logprobs":[-0.5],"top_logprobs":[{"b":-0.5}],"text_offset":[1]}`,
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: promptLogprobScript("ab")}
			ts := newTestServer(t, f, "")
			code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":[120,121],"max_tokens":2,"stream":true,`+tc.body+`}`, nil)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var text, lps []string
			for _, line := range strings.Split(body, "\n") {
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				var ev struct {
					Choices []struct {
						Text     string
						Logprobs json.RawMessage
					}
				}
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					t.Fatalf("event %q: %v", data, err)
				}
				lp := string(ev.Choices[0].Logprobs)
				if lp == "null" {
					lp = ""
				}
				text, lps = append(text, ev.Choices[0].Text), append(lps, lp)
			}
			if diff := cmp.Diff(tc.wantText, text); diff != "" {
				t.Errorf("text per chunk (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLogprobs, lps); diff != "" {
				t.Errorf("logprobs per chunk (-want +got):\n%s", diff)
			}
			if got := f.requests()[0].SamplingParams.PromptLogprobs != nil; got != tc.wantPromptLProb {
				t.Errorf("engine asked for prompt logprobs: %v, want %v", got, tc.wantPromptLProb)
			}
		})
	}
}

// TestPromptLogprobsKeyOrder: a prompt_logprobs entry lists the prompt
// token first and then its alternatives by rank, as vLLM's dict does,
// even where an alternative's id sorts before the prompt token's; the
// prompt token among its own alternatives is listed once.
func TestPromptLogprobsKeyOrder(t *testing.T) {
	f := &fakeEngine{script: promptLogprobScript("ab")}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":[120,123,122],"max_tokens":1,"prompt_logprobs":1}`, nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var out struct {
		Choices []struct {
			PromptLogprobs []json.RawMessage `json:"prompt_logprobs"`
		}
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range out.Choices[0].PromptLogprobs {
		d := json.NewDecoder(strings.NewReader(string(e)))
		var ks []string
		if tok, _ := d.Token(); tok == nil {
			keys = append(keys, "null")
			continue
		}
		for d.More() {
			k, _ := d.Token()
			ks = append(ks, k.(string))
			var v json.RawMessage
			if err := d.Decode(&v); err != nil {
				t.Fatal(err)
			}
		}
		keys = append(keys, strings.Join(ks, ","))
	}
	if diff := cmp.Diff([]string{"null", "123,122", "122"}, keys); diff != "" {
		t.Errorf("prompt_logprobs keys per position (-want +got):\n%s", diff)
	}
}
