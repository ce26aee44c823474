package server

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// TestDecisions: each question is one greedy one-token read of the
// labels' logprobs (logprob_token_ids A, B, …, the byte tokenizer's
// letters), its user turn the input then the question; the answers come
// from those logprobs, the usage sums the reads.
func TestDecisions(t *testing.T) {
	f := &fakeEngine{script: func(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		ids := req.SamplingParams.LogprobTokenIDs
		row, lps := []int32{ids[0]}, []float64{math.Log(0.5)}
		for i, id := range ids {
			row = append(row, id)
			lps = append(lps, math.Log(0.5/float64(i+1)))
		}
		return []wire.EngineCoreOutput{{NewTokenIDs: []int32{ids[0]}, FinishReason: wire.FinishLength, NumCachedTokens: 16,
			NewLogprobs: &wire.Logprobs{TokenIDs: [][]int32{row}, Logprobs: [][]float64{lps}, Ranks: []int32{1}}}}
	}}
	ts := newTestServerWith(t, f, func(c *Config) { c.MaxModelLen = 1024; c.NumBlocks = 128; c.MaxRequestBody = "16K" }, tokenizer.NewByte())
	body := `{"model":"dummy","input":"The package arrived with a broken screen.","questions":[` +
		`{"type":"predicate","instructions":"Is the screen broken?"},` +
		`{"type":"choice","name":"department","instructions":"Which department?","choices":[{"value":"returns"},{"value":"billing"}]},` +
		`{"type":"score","name":"damage","instructions":"Rate the damage.","levels":[{"label":"undamaged"},{"label":"broken"},{"label":"lost"}]}]}`
	code, resp := do(t, ts, http.MethodPost, "/v1/decisions", body, nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, resp)
	}
	var out struct {
		Model   string
		Answers []map[string]any
		Usage   struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
			TotalTokens  int `json:"total_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(resp), &out); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 3 || len(out.Answers) != 3 || out.Model != "dummy" {
		t.Fatalf("%d reads, %s", len(reqs), resp)
	}
	total := 0
	for i, r := range reqs {
		sp := r.SamplingParams
		want := []int32{'A', 'B', 'C'}[:len(sp.LogprobTokenIDs)]
		if sp.MaxTokens != 1 || sp.Temperature != 0 || sp.Logprobs == nil || *sp.Logprobs != len(want) || string(runes(sp.LogprobTokenIDs)) != string(runes(want)) {
			t.Errorf("read %d: %+v", i, sp)
		}
		prompt := string(runes(r.PromptTokenIDs))
		if !strings.Contains(prompt, "The package arrived with a broken screen.\n\nQuestion: ") || !strings.Contains(prompt, "Answer with the letter of one option only.") {
			t.Errorf("read %d prompt: %q", i, prompt)
		}
		total += len(r.PromptTokenIDs)
	}
	if p := out.Answers[0]["probability"].(float64); math.Abs(p-1.0/3) > 1e-9 { // softmax(0.5, 0.25) → 2/3, 1/3
		t.Errorf("predicate: %v", out.Answers[0])
	}
	if out.Answers[1]["choice"] != "returns" || out.Answers[2]["name"] != "damage" {
		t.Errorf("answers: %v", out.Answers)
	}
	if out.Usage.OutputTokens != 3 || out.Usage.InputTokens != total || out.Usage.TotalTokens != total+3 {
		t.Errorf("usage: %+v, prompts %d tokens", out.Usage, total)
	}
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{"model":"dummy","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/a.png"}]}],"questions":[{"type":"predicate","instructions":"Red?"}]}`, 400, "text input only"},
		{`{"model":"other","input":"x","questions":[{"type":"predicate","instructions":"Red?"}]}`, 404, "does not exist"},
	} {
		if code, resp := do(t, ts, http.MethodPost, "/v1/decisions", tc.body, nil); code != tc.code || !strings.Contains(resp, tc.want) {
			t.Errorf("%s: %d %s", tc.body, code, resp)
		}
	}
}

func runes(ids []int32) []rune {
	out := make([]rune, len(ids))
	for i, id := range ids {
		out[i] = rune(id)
	}
	return out
}
