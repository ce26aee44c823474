package llamacpp

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func text(s string) Part  { return Part{Text: s, IsText: true} }
func token(id int32) Part { return Part{Token: id} }

func TestPromptsShapes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Prompts
		err  string
	}{
		{`"hello"`, Prompts{{text("hello")}}, ""},
		{`[12, 34, 56]`, Prompts{{token(12), token(34), token(56)}}, ""},
		{`[12, 34, "string", 56]`, Prompts{{token(12), token(34), text("string"), token(56)}}, ""},
		{`{"prompt_string": "hi"}`, Prompts{{text("hi")}}, ""},
		// An array without a number is a list of prompts.
		{`["a", "b"]`, Prompts{{text("a")}, {text("b")}}, ""},
		{`["a", [1, 2], {"prompt_string": "c"}]`, Prompts{{text("a")}, {token(1), token(2)}, {text("c")}}, ""},
		{`[[1, "x"], [2]]`, Prompts{{token(1), text("x")}, {token(2)}}, ""},
		{`[]`, Prompts{}, ""},
		{`123`, nil, "a prompt is a string"},
		{`[1.5, 2]`, nil, "token ids"},
		{`{"text": "x"}`, nil, "prompt_string"},
		{`{"prompt_string": "x", "multimodal_data": ["aGk="]}`, nil, "multimodal"},
		{`[true]`, nil, "prompt[0]"},
	} {
		var got Prompts
		err := json.Unmarshal([]byte(tc.in), &got)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want one with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
	}
	if !(Prompt{text("a"), token(1)}).StartsWithText() || (Prompt{token(1), text("a")}).StartsWithText() {
		t.Error("StartsWithText: only a prompt whose first piece is text starts with text")
	}
}

func TestBiasesShapes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Biases
		err  string
	}{
		{`[[15043, 1.0]]`, Biases{{Token: 15043, Value: 1}}, ""},
		{`[[15043, false]]`, Biases{{Token: 15043, Ban: true}}, ""},
		{`[["Hello, World!", -0.5]]`, Biases{{Text: "Hello, World!", IsText: true, Value: -0.5}}, ""},
		{`{"15043": 2, "Hi": false}`, Biases{{Token: 15043, Value: 2}, {Text: "Hi", IsText: true, Ban: true}}, ""},
		{`null`, nil, ""},
		{`[[1]]`, nil, "pair"},
		{`[[1, true]]`, nil, "number or false"},
		{`[[{}, 1]]`, nil, "token id or a string"},
		{`"x"`, nil, "array of"},
	} {
		var got Biases
		err := json.Unmarshal([]byte(tc.in), &got)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want one with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
	}
}

func decode(t *testing.T, body string) CompletionRequest {
	t.Helper()
	var r CompletionRequest
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return r
}

func TestResolveDefaults(t *testing.T) {
	r := decode(t, `{"prompt": "x"}`)
	s, e := r.Resolve()
	if e != nil {
		t.Fatal(e)
	}
	want := Settings{NPredict: -1, Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: RandomSeed, RepeatPenalty: 1,
		RepeatLastN: 64, Samplers: DefaultSamplers, NCmpl: 1, CachePrompt: true, IDSlot: -1}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	p := s.Params(nil, "", "")
	if *p.Temperature != 0.8 || *p.TopP != 0.95 || p.TopK != 40 || p.MinP != 0.05 || p.Seed != nil || p.RepetitionPenalty != nil || p.N != nil {
		t.Errorf("params from the defaults: %+v", p)
	}
}

func TestResolveFields(t *testing.T) {
	for _, tc := range []struct {
		body  string
		check func(Settings) bool
	}{
		{`{"prompt":"x","max_tokens":5}`, func(s Settings) bool { return s.NPredict == 5 }},
		{`{"prompt":"x","max_tokens":5,"n_predict":7}`, func(s Settings) bool { return s.NPredict == 7 }},
		{`{"prompt":"x","n_predict":0}`, func(s Settings) bool { return s.NPredict == 0 }},
		{`{"prompt":"x","seed":-1}`, func(s Settings) bool { return s.Seed == RandomSeed }},
		{`{"prompt":"x","seed":42}`, func(s Settings) bool { return s.Seed == 42 }},
		{`{"prompt":"x","n":3}`, func(s Settings) bool { return s.NCmpl == 3 }},
		{`{"prompt":"x","n":3,"n_cmpl":2}`, func(s Settings) bool { return s.NCmpl == 2 }},
		{`{"prompt":"x","cache_prompt":false}`, func(s Settings) bool { return !s.CachePrompt }},
		{`{"prompt":"x","json_schema":{"const":"42"}}`, func(s Settings) bool { return string(s.JSONSchema) == `{"const":"42"}` }},
		{`{"prompt":"x","typical_p":1,"mirostat":0,"dry_multiplier":0,"top_n_sigma":-1}`, func(s Settings) bool { return true }},
	} {
		r := decode(t, tc.body)
		s, e := r.Resolve()
		if e != nil {
			t.Errorf("%s: %v", tc.body, e)
			continue
		}
		if !tc.check(s) {
			t.Errorf("%s: settings %+v", tc.body, s)
		}
	}
}

func TestResolveRefuses(t *testing.T) {
	for _, tc := range []struct{ body, param string }{
		{`{}`, "prompt"},
		{`{"prompt":"x","n_predict":-2}`, "n_predict"},
		{`{"prompt":"x","n_probs":21}`, "n_probs"},
		{`{"prompt":"x","n_cmpl":0}`, "n_cmpl"},
		{`{"prompt":"x","top_p":1.5}`, "top_p"},
		{`{"prompt":"x","min_p":-1}`, "min_p"},
		{`{"prompt":"x","mirostat":2}`, "mirostat"},
		{`{"prompt":"x","typical_p":0.5}`, "typical_p"},
		{`{"prompt":"x","dry_multiplier":0.8}`, "dry_multiplier"},
		{`{"prompt":"x","xtc_probability":0.5}`, "xtc_probability"},
		{`{"prompt":"x","dynatemp_range":0.5}`, "dynatemp_range"},
		{`{"prompt":"x","top_n_sigma":1}`, "top_n_sigma"},
		{`{"prompt":"x","lora":[{"scale":1}]}`, "lora"}, // no id
		{`{"prompt":"x","lora":[{"id":0,"scale":1e308}]}`, "lora"},
		{`{"prompt":"x","grammar":"root ::= \"a\"","json_schema":{}}`, "grammar"},
	} {
		r := decode(t, tc.body)
		_, e := r.Resolve()
		if e == nil || e.Status != 400 || e.Param == nil || *e.Param != tc.param {
			t.Errorf("%s: %v, want a 400 naming %s", tc.body, e, tc.param)
		}
	}
}

func TestParamsMapping(t *testing.T) {
	r := decode(t, `{"prompt":"x","temperature":-1,"top_k":0,"top_p":0,"seed":7,"repeat_penalty":1.3,"n_cmpl":2,
		"stop":["\n"],"grammar":"root ::= \"a\"","presence_penalty":0.5}`)
	s, e := r.Resolve()
	if e != nil {
		t.Fatal(e)
	}
	p := s.Params(map[string]float64{"5": -100}, "sess", "salt")
	if *p.Temperature != 0 || p.TopK != 0 || *p.TopP != 1 || *p.Seed != 7 || *p.RepetitionPenalty != 1.3 || *p.N != 2 ||
		p.Stop[0] != "\n" || p.GuidedGrammar == "" || p.PresencePenalty != 0.5 || p.SessionID != "sess" || p.CacheSalt != "salt" ||
		p.LogitBias["5"] != -100 {
		t.Errorf("params %+v", p)
	}
	if e := p.Validate(); e != nil {
		t.Errorf("the mapped params do not validate: %v", e)
	}
	// repeat_last_n 0 switches the repeat penalty off, as in llama.cpp.
	r = decode(t, `{"prompt":"x","repeat_penalty":1.3,"repeat_last_n":0}`)
	s, _ = r.Resolve()
	if p := s.Params(nil, "", ""); p.RepetitionPenalty != nil {
		t.Errorf("repeat_last_n 0: repetition penalty %v", *p.RepetitionPenalty)
	}
}

func TestSelectFields(t *testing.T) {
	r := Result{Content: "hi", Prompt: "p", GenerationSettings: GenerationSettings{NPredict: 32}}
	got, err := SelectFields(r, []string{"content", "generation_settings/n_predict", "prompt", "no/such", "content/x"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"content": "hi", "generation_settings/n_predict": 32.0, "prompt": "p"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if v, _ := SelectFields(r, nil); !cmp.Equal(v, any(r)) {
		t.Error("no response_fields: the result whole")
	}
}

func TestTokenProbJSON(t *testing.T) {
	tp := TokenProb{ID: 5, Token: "a\xff", Bytes: []int{97, 255}, Logprob: math.Inf(-1),
		Top: []TokenProb{{ID: 6, Token: "b", Bytes: []int{98}, Logprob: math.Log(0.5)}}}
	b, err := json.Marshal(tp)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":5,"token":"a","bytes":[97,255],"logprob":-3.4028234663852886e+38,"top_logprobs":[{"id":6,"token":"b","bytes":[98],"logprob":-0.6931471805599453}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	tp.Post, tp.Logprob = true, math.Log(0.25)
	b, _ = json.Marshal(tp)
	want = `{"id":5,"token":"a","bytes":[97,255],"prob":0.25,"top_probs":[{"id":6,"token":"b","bytes":[98],"prob":0.5}]}`
	if string(b) != want {
		t.Errorf("post_sampling_probs: got  %s\nwant %s", b, want)
	}
}

func TestNewTimings(t *testing.T) {
	got := NewTimings(3, 10, 20, 5, 100) // 5 tokens: the first from the prompt's step, then 4 decode steps in 100 ms
	want := Timings{CacheN: 3, PromptN: 10, PromptMS: 20, PromptPerTokenMS: 2, PromptPerSecond: 500, PredictedN: 5,
		PredictedMS: 100, PredictedPerTokenMS: 25, PredictedPerSecond: 40}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if one := NewTimings(0, 1, 5, 1, 0); one.PredictedPerSecond != 0 || one.PredictedPerTokenMS != 0 {
		t.Errorf("one token, no decode step: %+v, want rates 0", one)
	}
	if z := NewTimings(0, 0, 0, 0, 0); z != (Timings{}) {
		t.Errorf("no tokens, no time: %+v, want zeros (never NaN)", z)
	}
}

// FuzzPrompts: any body decodes to prompts or an error, never a panic,
// and a decoded prompt re-encodes to one that decodes the same.
func FuzzPrompts(f *testing.F) {
	for _, s := range []string{`"x"`, `[1,2]`, `[1,"a",2]`, `["a","b"]`, `[[1],[2,"c"]]`, `{"prompt_string":"p"}`, `[]`, `[{}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var ps Prompts
		if err := json.Unmarshal([]byte(in), &ps); err != nil {
			return
		}
		for _, p := range ps {
			for _, part := range p {
				if part.IsText && part.Token != 0 {
					t.Fatalf("%q: a text part with a token id", in)
				}
			}
		}
	})
}

func TestInfillLayout(t *testing.T) {
	f := FIM{Pre: 100, Suf: 101, Mid: 102, Rep: 103, Sep: 104}
	in := InfillInput{Prefix: []int32{1, 2, 3, 4}, Suffix: []int32{5, 6}, Prompt: []int32{7},
		Extra: []ExtraChunk{{File: []int32{8}, Text: []int32{9}}}, Repo: []int32{10}, CurrentFile: []int32{11},
		ChunkSeparator: []int32{12}, BOS: 1000, NBatch: 64, NPredict: 4, NCtx: 512}
	want := []int32{103, 10, 104, 8, 9, 104, 11, 1000, 100, 1, 2, 3, 4, 7, 101, 5, 6, 102}
	if got := Infill(in, f); !cmp.Equal(got, want) {
		t.Errorf("repo-level layout:\n got %v\nwant %v", got, want)
	}
	// No FIM_REP/FIM_SEP: chunks are separated by the snippet text; no BOS.
	g := FIM{Pre: 100, Suf: 101, Mid: 102, Rep: NoToken, Sep: NoToken}
	in.BOS = NoToken
	want = []int32{12, 9, 100, 1, 2, 3, 4, 7, 101, 5, 6, 102}
	if got := Infill(in, g); !cmp.Equal(got, want) {
		t.Errorf("without separators:\n got %v\nwant %v", got, want)
	}
	// A small batch cuts the prefix to its last 3/4 batch, the suffix to
	// the rest of the quarter; a small context drops the extra context.
	in.NBatch, in.NCtx = 4, 8
	want = []int32{100, 2, 3, 4, 7, 101, 102}
	if got := Infill(in, g); !cmp.Equal(got, want) {
		t.Errorf("cut to the batch:\n got %v\nwant %v", got, want)
	}
	if m := (FIM{Pre: 1, Suf: NoToken, Mid: 2}).Missing(); m != "FIM_SUF" {
		t.Errorf("Missing %q", m)
	}
}
