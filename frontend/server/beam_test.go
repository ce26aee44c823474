package server

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire"
)

// toyVocab is the next-token vocabulary of the fake beam engine: 'a', 'b',
// 'c' and the byte tokenizer's EOS.
var toyVocab = []int32{'a', 'b', 'c', 257}

// toyNext is a deterministic next-token distribution over toyVocab, most
// likely first, hashed from the whole sequence.
func toyNext(seq []int32) (ids []int32, lps []float64) {
	type cand struct {
		id int32
		lp float64
	}
	cands := make([]cand, len(toyVocab))
	sum := 0.0
	for i, tok := range toyVocab {
		h := fnv.New32a()
		for _, t := range append(slices.Clone(seq), tok) {
			h.Write([]byte{byte(t), byte(t >> 8)})
		}
		cands[i] = cand{tok, float64(h.Sum32()%1000) / 200}
		sum += math.Exp(cands[i].lp)
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.lp, a.lp) })
	for _, c := range cands {
		ids, lps = append(ids, c.id), append(lps, c.lp-math.Log(sum))
	}
	return ids, lps
}

// toyEngine answers beam sub-requests (max_tokens 1 with logprobs) from
// toyNext.
func toyEngine(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
	ids, lps := toyNext(req.PromptTokenIDs)
	k := min(*req.SamplingParams.Logprobs, len(ids))
	return []wire.EngineCoreOutput{{
		NewTokenIDs:  ids[:1],
		NewLogprobs:  &wire.Logprobs{TokenIDs: [][]int32{append(ids[:1:1], ids[:k]...)}, Logprobs: [][]float64{append(lps[:1:1], lps[:k]...)}},
		FinishReason: wire.FinishLength,
	}}
}

// toyBest enumerates every sequence of at most maxTokens tokens (ending
// at EOS or at maxTokens) and returns the texts of the width best by
// cumulative logprob / length^penalty.
func toyBest(prompt []int32, maxTokens, width int, penalty float64) []string {
	type seq struct {
		text  string
		score float64
	}
	var all []seq
	var walk func(gen []int32, cum float64)
	walk = func(gen []int32, cum float64) {
		score := func(c float64) float64 { return c / math.Pow(float64(len(prompt)+len(gen)), penalty) }
		if len(gen) == maxTokens {
			all = append(all, seq{string(toBytes(gen)), score(cum)})
			return
		}
		ids, lps := toyNext(append(slices.Clone(prompt), gen...))
		for i, id := range ids {
			if id == 257 {
				all = append(all, seq{string(toBytes(gen)), score(cum + lps[i])})
				continue
			}
			walk(append(slices.Clone(gen), id), cum+lps[i])
		}
	}
	walk(nil, 0)
	slices.SortStableFunc(all, func(a, b seq) int { return cmp.Compare(b.score, a.score) })
	var out []string
	for _, s := range all[:width] {
		out = append(out, s.text)
	}
	return out
}

func toBytes(ids []int32) []byte {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return b
}

// TestBeamSearchReturnsTheBestBeams runs width-4 beam search through the
// server against the toy engine, on cases where beam search is exact (a
// vocabulary no larger than the width over two steps), and compares the
// beams with an exhaustive search. Every sub-request must carry the
// request's session id.
func TestBeamSearchReturnsTheBestBeams(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		penalty float64
	}{
		{"completions", `{"prompt":"xy","max_tokens":2,"n":4,"use_beam_search":true,"session_id":"beams"}`, 1},
		{"length penalty 2", `{"prompt":"xy","max_tokens":2,"n":4,"use_beam_search":true,"length_penalty":2,"session_id":"beams"}`, 2},
		{"best_of is the width", `{"prompt":"q","max_tokens":2,"n":4,"best_of":4,"use_beam_search":true,"length_penalty":0,"session_id":"beams"}`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: toyEngine}
			ts := newTestServer(t, f, "")
			code, body := do(t, ts, http.MethodPost, "/v1/completions", tc.body, nil)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var resp struct {
				Choices []struct{ Text string }
				Usage   struct {
					CompletionTokens int `json:"completion_tokens"`
				}
			}
			if err := json.Unmarshal([]byte(body), &resp); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range resp.Choices {
				got = append(got, c.Text)
			}
			var req struct{ Prompt string }
			_ = json.Unmarshal([]byte(tc.body), &req)
			prompt := append([]int32{256}, toInt32(req.Prompt)...) // BOS + bytes
			if diff := gocmp.Diff(toyBest(prompt, 2, 4, tc.penalty), got); diff != "" {
				t.Fatalf("beams differ from the exhaustive best (-want +got):\n%s", diff)
			}
			reqs := f.requests()
			if len(reqs) < 2 {
				t.Fatalf("%d sub-requests", len(reqs))
			}
			for _, r := range reqs {
				if r.SessionID != "beams" || r.SamplingParams.MaxTokens != 1 || *r.SamplingParams.Logprobs != 8 || !strings.Contains(r.RequestID, "-beam-") {
					t.Fatalf("sub-request %s: session %q max_tokens %d logprobs %d", r.RequestID, r.SessionID, r.SamplingParams.MaxTokens, *r.SamplingParams.Logprobs)
				}
			}
		})
	}
}

func toInt32(s string) []int32 {
	out := make([]int32, len(s))
	for i := range len(s) {
		out[i] = int32(s[i])
	}
	return out
}

func TestBeamSearchChatStream(t *testing.T) {
	f := &fakeEngine{script: toyEngine}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/chat/completions",
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"n":2,"use_beam_search":true,"stream":true,"stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":2}`, nil)
	if code != http.StatusOK || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("%d %s", code, body)
	}
	finished, withLogprobs := 0, 0
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
				Logprobs     *struct {
					Content []struct {
						TopLogprobs []any `json:"top_logprobs"`
					}
				}
			}
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			if c.FinishReason != nil {
				finished++
			}
			if c.Logprobs != nil && len(c.Logprobs.Content) > 0 && len(c.Logprobs.Content[0].TopLogprobs) == 2 {
				withLogprobs++
			}
		}
	}
	if finished != 2 || withLogprobs != 2 {
		t.Fatalf("%d finished choices, %d with logprobs, want 2 and 2:\n%s", finished, withLogprobs, body)
	}
}

// TestBeamSearchUnderAConstraint: each expansion carries the request's
// constraint, asks for masked logprobs and names how many of its prompt's
// last tokens are the beam's answer so far, so the engine can continue
// the constraint there. The toy engine plays the constraint "no token
// 'a'" through the masked logprobs (-Inf), and every returned beam keeps
// to it.
func TestBeamSearchUnderAConstraint(t *testing.T) {
	const prompt = "xy"
	var mu sync.Mutex
	bad := ""
	promptLen := -1 // tokens of the prompt: the first expansion's sequence
	f := &fakeEngine{script: func(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		sp := req.SamplingParams
		mu.Lock()
		defer mu.Unlock()
		if promptLen < 0 {
			promptLen = len(req.PromptTokenIDs)
		}
		switch {
		case sp.StructuredOutputs == nil || sp.StructuredOutputs.Regex != "[bc]*":
			bad = "no constraint on an expansion"
		case !sp.MaskedLogprobs:
			bad = "unmasked logprobs"
		case sp.ConstraintPrefix != len(req.PromptTokenIDs)-promptLen:
			bad = fmt.Sprintf("constraint prefix %d for a %d-token sequence", sp.ConstraintPrefix, len(req.PromptTokenIDs))
		}
		outs := toyEngine(req)
		lp := outs[0].NewLogprobs
		for j, id := range lp.TokenIDs[0] {
			if id == 'a' {
				lp.Logprobs[0][j] = math.Inf(-1)
			}
		}
		return outs
	}}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"`+prompt+`","max_tokens":3,"n":3,"use_beam_search":true,"guided_regex":"[bc]*"}`, nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if bad != "" {
		t.Fatal(bad)
	}
	var resp struct{ Choices []struct{ Text string } }
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 3 {
		t.Fatalf("%d choices, want 3", len(resp.Choices))
	}
	for _, c := range resp.Choices {
		if strings.Contains(c.Text, "a") {
			t.Fatalf("beam %q holds a token the constraint masked", c.Text)
		}
	}
}
