package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSpeculativeModel serves the real default model with vLLM's n-gram
// speculative decoding and asks it to repeat a text (what prompt lookup
// drafts well): the tokens equal those of the same request with
// speculation off (llama.cpp's per-request speculative.n_max 0), greedy
// and seeded at temperature 1; llama-server's timings report the drafts
// (draft_n, draft_n_accepted), vLLM's per-request metrics their
// acceptance, and /metrics vLLM's and llama-server's spec-decode counters.
func TestSpeculativeModel(t *testing.T) {
	path := defaultModel(t)
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--max-model-len", "2048", "--kv-cache-memory", "256Mi",
		"--enable-per-request-metrics", "--speculative-config", `{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 2, "prompt_lookup_max": 4}`)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	checkSpeculative(t, base, 5)
}

// TestSpeculativeDraftModel is TestSpeculativeModel with llama-server's
// draft model (-md): the default model drafts for itself, so greedy
// drafts are nearly all kept (and nothing is faster: the point is the
// plumbing, the equal output and the figures).
func TestSpeculativeDraftModel(t *testing.T) {
	path := defaultModel(t)
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--max-model-len", "2048", "--kv-cache-memory", "256Mi",
		"--enable-per-request-metrics", "-md", path, "--spec-draft-n-max", "4")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	checkSpeculative(t, base, 4)
}

// checkSpeculative runs the checks of TestSpeculativeModel on a server
// speculating k tokens a step.
func checkSpeculative(t *testing.T, base string, k int) {
	text := strings.Repeat("Every turn of a conversation lands on the engine core that already holds its cache. ", 3)
	prompt := "Repeat this text exactly:\n" + text + "\nRepeat this text exactly:\n"
	complete := func(t *testing.T, body map[string]any) ([]int32, map[string]any) {
		t.Helper()
		body["prompt"], body["n_predict"], body["return_tokens"] = prompt, 48, true
		status, out := postJSON(t, base+"/completion", body, nil)
		if status != 200 {
			t.Fatalf("status %d: %v", status, out)
		}
		var toks []int32
		for _, v := range out["tokens"].([]any) {
			toks = append(toks, int32(v.(float64)))
		}
		return toks, out["timings"].(map[string]any)
	}
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"greedy", map[string]any{"temperature": 0}},
		{"seeded", map[string]any{"temperature": 1, "seed": 1234, "top_k": 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			off := map[string]any{"speculative.n_max": 0}
			for k, v := range tc.body {
				off[k] = v
			}
			want, plain := complete(t, off)
			got, timings := complete(t, tc.body)
			if !slices.Equal(got, want) {
				t.Errorf("tokens with drafts %v\nwithout %v", got, want)
			}
			if _, ok := plain["draft_n"]; ok {
				t.Errorf("speculative.n_max 0: timings %v report drafts", plain)
			}
			drafted, _ := timings["draft_n"].(float64)
			accepted, _ := timings["draft_n_accepted"].(float64)
			if tc.name == "greedy" && (drafted == 0 || accepted == 0 || accepted > drafted) {
				t.Errorf("timings %v: want draft_n > 0 and 0 < draft_n_accepted ≤ draft_n", timings)
			}
		})
	}

	t.Run("per-request metrics", func(t *testing.T) {
		status, out := postJSON(t, base+"/v1/chat/completions", map[string]any{
			"messages": []any{map[string]any{"role": "user", "content": "Repeat this text exactly:\n" + text}}, "max_tokens": 40, "temperature": 0,
		}, nil)
		if status != 200 {
			t.Fatalf("status %d: %v", status, out)
		}
		sd, ok := out["metrics"].(map[string]any)["speculative_decoding"].(map[string]any)
		if !ok {
			t.Fatalf("metrics %v: no speculative_decoding", out["metrics"])
		}
		hist := sd["acceptance_histogram"].([]any)
		if len(hist) != k+1 || int(sd["num_spec_tokens"].(float64)) != k || sd["num_spec_steps"].(float64) == 0 ||
			sd["mean_acceptance_length"].(float64) < 1 || sd["draft_acceptance_rate"].(float64) > 1 {
			t.Errorf("speculative_decoding %v", sd)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := string(b)
		for _, name := range []string{"vllm:spec_decode_num_drafts_total{", "vllm:spec_decode_num_draft_tokens_total{", "vllm:spec_decode_num_accepted_tokens_total{",
			fmt.Sprintf(`vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="SmolLM2-135M-Instruct.Q4_1",position="%d"}`, k-1),
			"llamacpp:spec_decode_num_drafts_total ", "llamacpp:spec_decode_num_accepted_tokens_total "} {
			i := strings.Index(m, name)
			if i < 0 {
				t.Errorf("/metrics has no %s", name)
				continue
			}
			line := m[i:]
			line = line[:strings.IndexByte(line, '\n')]
			if strings.HasPrefix(name, "vllm:spec_decode_num_accepted_tokens_per_pos") {
				continue // the last position may well be 0
			}
			if v := line[strings.LastIndexByte(line, ' ')+1:]; v == "0" {
				t.Errorf("%s is 0", line)
			}
		}
	})
}
