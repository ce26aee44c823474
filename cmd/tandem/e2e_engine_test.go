package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// streamResult is what one streaming completion returned.
type streamResult struct {
	text       string
	finish     string
	completion int // usage.completion_tokens
	cached     int // usage.prompt_tokens_details.cached_tokens
	ttft       time.Duration
	err        error
}

// streamCompletion runs one streaming /v1/completions request to its end.
func streamCompletion(base string, body map[string]any, hdr map[string]string) streamResult {
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	if _, ok := body["model"]; !ok {
		body["model"] = "dummy"
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return streamResult{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		return streamResult{err: fmt.Errorf("status %d: %s", resp.StatusCode, raw)}
	}
	var r streamResult
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Error   *struct{ Message string }
			Choices []struct {
				Text         string
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				CompletionTokens    int `json:"completion_tokens"`
				PromptTokensDetails struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return streamResult{err: err}
		}
		if ch.Error != nil {
			return streamResult{err: fmt.Errorf("stream error: %s", ch.Error.Message)}
		}
		for _, c := range ch.Choices {
			if r.ttft == 0 {
				r.ttft = time.Since(start)
			}
			r.text += c.Text
			if c.FinishReason != nil {
				r.finish = *c.FinishReason
			}
		}
		if ch.Usage != nil {
			r.completion = ch.Usage.CompletionTokens
			r.cached = ch.Usage.PromptTokensDetails.CachedTokens
		}
	}
	r.err = sc.Err()
	return r
}

// metric reads one sample from /metrics (the first series matching name
// and the label filter).
func metric(t *testing.T, base, name, labels string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{([^}]*)\} (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		if strings.Contains(m[1], labels) {
			v, _ := strconv.ParseFloat(m[2], 64)
			return v
		}
	}
	t.Fatalf("/metrics has no %s{%s}", name, labels)
	return 0
}

func TestManyConcurrentStreams(t *testing.T) {
	s := startSplit(t, "--max-num-seqs", "64")
	greedy := map[string]any{"prompt": "The quick brown fox", "max_tokens": 24, "temperature": 0, "ignore_eos": true}
	alone := streamCompletion(s.base, copyMap(greedy), nil)
	if alone.err != nil {
		t.Fatal(alone.err)
	}
	const n = 64
	results := make([]streamResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == n/2 {
				results[i] = streamCompletion(s.base, copyMap(greedy), nil)
				return
			}
			results[i] = streamCompletion(s.base, map[string]any{"prompt": fmt.Sprintf("request %d says", i), "max_tokens": 16 + i%8, "ignore_eos": true, "temperature": 0.8, "seed": i}, nil)
		}()
	}
	wg.Wait()
	for i, r := range results {
		want := 16 + i%8
		if i == n/2 {
			want = 24
		}
		if r.err != nil || r.completion != want || r.finish != "length" {
			t.Fatalf("request %d: err %v, %d tokens (want %d), finish %q", i, r.err, r.completion, want, r.finish)
		}
	}
	if results[n/2].text != alone.text {
		t.Fatalf("greedy text inside a busy batch differs from alone:\n%q\n%q", results[n/2].text, alone.text)
	}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestPrefixCacheHitsAndSaltIsolation(t *testing.T) {
	s := startSplit(t)
	prefix := strings.Repeat("All work and no play makes Jack a dull boy. ", 23)[:1000]
	first := streamCompletion(s.base, map[string]any{"prompt": prefix + " First question?", "max_tokens": 4}, nil)
	second := streamCompletion(s.base, map[string]any{"prompt": prefix + " Second question?", "max_tokens": 4}, nil)
	salted := streamCompletion(s.base, map[string]any{"prompt": prefix + " Second question?", "max_tokens": 4, "cache_salt": "tenant-b"}, nil)
	for _, r := range []streamResult{first, second, salted} {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	// The byte tokenizer adds BOS, so the shared prefix is 1001 tokens.
	if first.cached != 0 || second.cached < 960 || salted.cached != 0 {
		t.Fatalf("cached tokens: first %d, second %d (want ≥ 960), other salt %d (want 0)", first.cached, second.cached, salted.cached)
	}
	t.Logf("TTFT: cold %v, cached %v, other salt %v", first.ttft, second.ttft, salted.ttft)
	if q, h := metric(t, s.base, "vllm:prefix_cache_queries_total", `engine="0"`), metric(t, s.base, "vllm:prefix_cache_hits_total", `engine="0"`); h < 960 || q < 3000 {
		t.Fatalf("prefix cache metrics: %v hits of %v queried tokens", h, q)
	}
}

func TestPreemptionWithATinyKVCache(t *testing.T) {
	// 64 blocks of 16 tokens (the dummy model's block takes 32 KiB).
	s := startSplit(t, "--kv-cache-memory", "2Mi", "--max-num-seqs", "32")
	const n = 32
	results := make([]streamResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = streamCompletion(s.base, map[string]any{"prompt": fmt.Sprintf("%02d %s", i, strings.Repeat("x", 90)), "max_tokens": 120, "ignore_eos": true, "temperature": 0}, nil)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil || r.completion != 120 {
			t.Fatalf("request %d: %v, %d tokens", i, r.err, r.completion)
		}
	}
	if p := metric(t, s.base, "vllm:num_preemptions_total", `engine="0"`); p == 0 {
		t.Fatal("no preemption: the test did not stress the pool")
	}
	// Preemption recomputes; greedy output must not change.
	again := streamCompletion(s.base, map[string]any{"prompt": fmt.Sprintf("%02d %s", 7, strings.Repeat("x", 90)), "max_tokens": 120, "ignore_eos": true, "temperature": 0}, nil)
	if again.text != results[7].text {
		t.Fatal("a preempted greedy request produced other text than the same request alone")
	}
}

func TestCancelledStreamsReleaseTheCache(t *testing.T) {
	s := startSplit(t)
	idle := metric(t, s.base, "vllm:kv_cache_usage_perc", `engine="0"`)
	sem := make(chan struct{}, 40)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			resp, r, err := openStream(s.base, fmt.Sprintf("cancel-%d", i))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = r.ReadString('\n') // read a little more, then go away
			resp.Body.Close()
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for {
		time.Sleep(1500 * time.Millisecond) // stats ride on heartbeats
		usage := metric(t, s.base, "vllm:kv_cache_usage_perc", `engine="0"`)
		running := metric(t, s.base, "vllm:num_requests_running", `engine="0"`)
		if usage == idle && running == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 200 cancelled streams: kv usage %v (idle %v), %v running", usage, idle, running)
		}
	}
}

// TestSessionCacheSurvivesOtherSessions: a conversation's cached turns
// survive 50 other sessions passing through (each ended with DELETE) a pool
// too small to hold them all; without session ids, LRU evicts it.
func TestSessionCacheSurvivesOtherSessions(t *testing.T) {
	s := startSplit(t, "--kv-cache-memory", "2Mi") // 64 blocks of 16 tokens
	run := func(t *testing.T, withSessions bool) (turn2Cached int) {
		sid := func(name string) map[string]string {
			if !withSessions {
				return nil
			}
			return map[string]string{"X-Session-ID": fmt.Sprintf("%s-%d", name, time.Now().UnixNano())}
		}
		conv := sid("conversation")
		turn1 := fmt.Sprintf("%d %s", time.Now().UnixNano(), strings.Repeat("Tell me about the sea. ", 18))[:400]
		r1 := streamCompletion(s.base, map[string]any{"prompt": turn1, "max_tokens": 16, "ignore_eos": true}, conv)
		if r1.err != nil {
			t.Fatal(r1.err)
		}
		for i := range 50 {
			other := sid(fmt.Sprintf("other%d", i))
			r := streamCompletion(s.base, map[string]any{"prompt": fmt.Sprintf("%03d %d %s", i, time.Now().UnixNano(), strings.Repeat("z", 280)), "max_tokens": 4}, other)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if withSessions {
				req, _ := http.NewRequest(http.MethodDelete, s.base+"/v1/sessions/"+other["X-Session-ID"], nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("DELETE: %v %v", err, resp)
				}
				resp.Body.Close()
			}
		}
		r2 := streamCompletion(s.base, map[string]any{"prompt": turn1 + r1.text + " And the mountains?", "max_tokens": 4}, conv)
		if r2.err != nil {
			t.Fatal(r2.err)
		}
		return r2.cached
	}
	with := run(t, true)
	without := run(t, false)
	t.Logf("turn 2 cached tokens: %d with session ids, %d without", with, without)
	if with < 384 {
		t.Fatalf("with session ids turn 2 reused %d cached tokens, want ≥ 384 (turn 1's full blocks)", with)
	}
	if without >= with {
		t.Fatalf("without session ids turn 2 reused %d tokens, no fewer than with them (%d): the policy made no difference", without, with)
	}
}
