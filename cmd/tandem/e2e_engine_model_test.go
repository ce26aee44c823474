package main

import (
	"bufio"
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore"
)

// The engine acceptance checks of e2e_engine_test.go, on the real default
// model (SmolLM2-135M-Instruct Q4_1, TANDEM_MODEL) instead of the dummy one:
// its BPE tokenizer, 30 layers and 720 KiB KV blocks rather than bytes.

// modelStack is a split engine + frontend serving the default model.
type modelStack struct {
	*splitStack
	name string // the served model name
}

// startModelSplit runs startSplit with the default model (the later flags
// override startSplit's --model dummy, --max-model-len and --threads).
func startModelSplit(t *testing.T, engineArgs ...string) *modelStack {
	t.Helper()
	path := defaultModel(t)
	args := append([]string{"--model", path, "--max-model-len", "2048", "--threads", strconv.Itoa(runtime.NumCPU())}, engineArgs...)
	return &modelStack{splitStack: startSplit(t, args...), name: enginecore.ServedName("", path)}
}

// complete is streamCompletion for the served model.
func (s *modelStack) complete(body map[string]any, hdr map[string]string) streamResult {
	body["model"] = s.name
	return streamCompletion(s.base, body, hdr)
}

// tokenize returns the prompt's token ids from POST /tokenize.
func (s *modelStack) tokenize(t *testing.T, prompt string) []int {
	t.Helper()
	code, resp := postJSON(t, s.base+"/tokenize", map[string]any{"model": s.name, "prompt": prompt}, nil)
	if code != http.StatusOK {
		t.Fatalf("tokenize: status %d: %v", code, resp)
	}
	raw, _ := resp["tokens"].([]any)
	ids := make([]int, len(raw))
	for i, x := range raw {
		ids[i] = int(x.(float64))
	}
	if c, ok := resp["count"].(float64); !ok || int(c) != len(ids) {
		t.Fatalf("tokenize: count %v for %d tokens", resp["count"], len(ids))
	}
	return ids
}

// kvBlocksLogged is the pool size the engine logged at startup.
func (s *modelStack) kvBlocksLogged(t *testing.T) int {
	t.Helper()
	m := regexp.MustCompile(`KV cache sized.* blocks=(\d+) block_size=16 `).FindStringSubmatch(s.engine.out.String())
	if m == nil {
		t.Fatalf("engine did not log its KV pool with block size 16:\n%s", s.engine.out.String())
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func blocksFor(tokens int) int { return (tokens + 15) / 16 }

// TestDefaultModelManyConcurrentStreams: 64 concurrent streams all finish
// with the lengths asked for, and a greedy request's text does not change
// when it runs inside the busy batch.
func TestDefaultModelManyConcurrentStreams(t *testing.T) {
	s := startModelSplit(t, "--max-num-seqs", "64")
	greedy := map[string]any{"prompt": "The quick brown fox", "max_tokens": 16, "temperature": 0, "ignore_eos": true}
	alone := s.complete(copyMap(greedy), nil)
	if alone.err != nil || alone.completion != 16 || alone.text == "" {
		t.Fatalf("greedy alone: err %v, %d tokens, text %q", alone.err, alone.completion, alone.text)
	}
	const n = 64
	results := make([]streamResult, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if i == n/2 {
				results[i] = s.complete(copyMap(greedy), nil)
				return
			}
			results[i] = s.complete(map[string]any{"prompt": fmt.Sprintf("Request %d: tell me about the weather in", i), "max_tokens": 8 + i%8, "ignore_eos": true, "temperature": 0.8, "seed": i}, nil)
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("64 streams took %v", time.Since(began).Round(time.Millisecond))
	for i, r := range results {
		want := 8 + i%8
		if i == n/2 {
			want = 16
		}
		if r.err != nil || r.completion != want || r.finish != "length" || r.text == "" {
			t.Fatalf("request %d: err %v, %d tokens (want %d), finish %q, text %q", i, r.err, r.completion, want, r.finish, r.text)
		}
	}
	if results[n/2].text != alone.text {
		t.Fatalf("greedy text inside a busy batch differs from alone:\n%q\n%q", results[n/2].text, alone.text)
	}
}

// TestDefaultModelPrefixCacheHitsAndSaltIsolation: the second of two
// requests sharing a 1,000-token prefix reuses it (and answers sooner);
// another cache_salt reuses nothing.
func TestDefaultModelPrefixCacheHitsAndSaltIsolation(t *testing.T) {
	s := startModelSplit(t, "--kv-cache-memory", "256Mi")
	prefix := strings.TrimSpace(strings.Repeat("All work and no play makes Jack a dull boy. ", 95))
	p1, p2 := prefix+"\nFirst question?", prefix+"\nSecond question?"
	t1, t2 := s.tokenize(t, p1), s.tokenize(t, p2)
	shared := commonPrefix(t1, t2)
	if shared < 1000 || len(t2) > 1200 {
		t.Fatalf("the prompts share %d tokens of %d/%d; the test wants a 1,000-token prefix", shared, len(t1), len(t2))
	}
	req := func(prompt, salt string) streamResult {
		body := map[string]any{"prompt": prompt, "max_tokens": 2, "temperature": 0}
		if salt != "" {
			body["cache_salt"] = salt
		}
		r := s.complete(body, nil)
		if r.err != nil || r.completion != 2 {
			t.Fatalf("err %v, %d tokens", r.err, r.completion)
		}
		return r
	}
	first := req(p1, "")
	second := req(p2, "")
	salted := req(p2, "tenant-b")
	t.Logf("shared prefix %d tokens; cached: first %d, second %d, other salt %d; TTFT: cold %v, cached %v, other salt %v",
		shared, first.cached, second.cached, salted.cached, first.ttft, second.ttft, salted.ttft)
	if first.cached != 0 || second.cached < 960 || second.cached > shared || salted.cached != 0 {
		t.Fatalf("cached tokens: first %d, second %d (want 960…%d), other salt %d (want 0)", first.cached, second.cached, shared, salted.cached)
	}
	if second.ttft >= first.ttft || second.ttft >= salted.ttft {
		t.Fatalf("TTFT with %d cached tokens %v, not shorter than cold %v and other salt %v", second.cached, second.ttft, first.ttft, salted.ttft)
	}
	// The counters ride on heartbeats: poll until the last request shows.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		q, h := metric(t, s.base, "vllm:prefix_cache_queries_total", `engine="0"`), metric(t, s.base, "vllm:prefix_cache_hits_total", `engine="0"`)
		if h == float64(second.cached) && q >= 3*960 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prefix cache metrics: %v hits (want %d) of %v queried tokens (want ≥ %d)", h, second.cached, q, 3*960)
		}
	}
}

// TestDefaultModelPreemptionWithATinyKVCache: 32 concurrent requests that
// cannot all fit in the pool are preempted and recomputed, and all finish
// with the lengths asked for.
func TestDefaultModelPreemptionWithATinyKVCache(t *testing.T) {
	s := startModelSplit(t, "--kv-cache-memory", "34Mi", "--max-num-seqs", "32")
	const n, maxTokens = 32, 64
	prompt := func(i int) string {
		return fmt.Sprintf("%02d. %s", i, strings.Repeat("The sea is wide and the sky is blue. ", 8))
	}
	promptLen := len(s.tokenize(t, prompt(0)))
	pool, need := s.kvBlocksLogged(t), blocksFor(promptLen+maxTokens)
	t.Logf("pool %d blocks; each request needs %d (%d prompt + %d output tokens), %d all together", pool, need, promptLen, maxTokens, n*need)
	if pool < need || pool >= n*need/2 {
		t.Fatalf("pool of %d blocks: want one request (%d blocks) to fit and half of all %d not", pool, need, n*need)
	}
	results := make([]streamResult, n)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.complete(map[string]any{"prompt": prompt(i), "max_tokens": maxTokens, "ignore_eos": true, "temperature": 0}, nil)
		}()
	}
	wg.Wait()
	t.Logf("32 requests took %v", time.Since(began).Round(time.Millisecond))
	for i, r := range results {
		if r.err != nil || r.completion != maxTokens || r.finish != "length" {
			t.Fatalf("request %d: err %v, %d tokens (want %d), finish %q", i, r.err, r.completion, maxTokens, r.finish)
		}
	}
	p := metric(t, s.base, "vllm:num_preemptions_total", `engine="0"`)
	t.Logf("%v preemptions", p)
	if p == 0 {
		t.Fatal("no preemption: the test did not stress the pool")
	}
	// Preemption recomputes; greedy output must not change.
	for _, i := range []int{7, n - 1} {
		again := s.complete(map[string]any{"prompt": prompt(i), "max_tokens": maxTokens, "ignore_eos": true, "temperature": 0}, nil)
		if again.err != nil || again.text != results[i].text {
			t.Fatalf("request %d: under preemption greedy text differs from the same request alone (err %v):\n%q\n%q", i, again.err, results[i].text, again.text)
		}
	}
}

// openModelStream starts a long streaming completion on the served model
// and returns it after its first event arrived.
func openModelStream(base, model, prompt string) (*http.Response, *bufio.Reader, error) {
	return openStreamBody(base, map[string]any{"model": model, "prompt": prompt, "max_tokens": 900, "ignore_eos": true, "stream": true})
}

// TestDefaultModelCancelledStreamsReleaseTheCache: 200 streams closed by
// their clients after the first tokens leave the KV cache as it was idle
// and nothing running or waiting.
func TestDefaultModelCancelledStreamsReleaseTheCache(t *testing.T) {
	s := startModelSplit(t)
	idle := metric(t, s.base, "vllm:kv_cache_usage_perc", `engine="0"`)
	sem := make(chan struct{}, 40)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			resp, r, err := openModelStream(s.base, s.name, fmt.Sprintf("Story %d: tell me a long story about a dragon.", i))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = r.ReadString('\n') // read a little more, then go away
			_, _ = r.ReadString('\n')
			resp.Body.Close()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		time.Sleep(1500 * time.Millisecond) // stats ride on heartbeats
		usage := metric(t, s.base, "vllm:kv_cache_usage_perc", `engine="0"`)
		running := metric(t, s.base, "vllm:num_requests_running", `engine="0"`)
		waiting := metric(t, s.base, "vllm:num_requests_waiting", `engine="0"`)
		if usage == idle && running == 0 && waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 200 cancelled streams: kv usage %v (idle %v), %v running, %v waiting", usage, idle, running, waiting)
		}
	}
	// The engine still serves.
	if r := s.complete(map[string]any{"prompt": "After the storm,", "max_tokens": 8, "ignore_eos": true}, nil); r.err != nil || r.completion != 8 {
		t.Fatalf("after the cancellations: err %v, %d tokens", r.err, r.completion)
	}
}

// TestDefaultModelSessionCacheSurvivesOtherSessions: a three-turn
// conversation keeps more of its turns cached, turn after turn, while 50
// other sessions (each ended with DELETE) pass through a pool too small to
// hold them all; without session ids, LRU evicts it.
func TestDefaultModelSessionCacheSurvivesOtherSessions(t *testing.T) {
	s := startModelSplit(t, "--kv-cache-memory", "45Mi")
	pool := s.kvBlocksLogged(t)
	otherPrompt := func(i int) string {
		return fmt.Sprintf("Note %03d-%d: %s", i, time.Now().UnixNano(), strings.Repeat("Remember to water the plants on time. ", 12))
	}
	const others = 25 // between turns; 50 over the conversation
	if n := blocksFor(len(s.tokenize(t, otherPrompt(0)))) * others; n <= pool {
		t.Fatalf("%d other sessions between turns take %d blocks, which fit the pool of %d", others, n, pool)
	}
	type turn struct{ prompt, cached int }
	run := func(t *testing.T, withSessions bool) []turn {
		sid := func(name string) map[string]string {
			if !withSessions {
				return nil
			}
			return map[string]string{"X-Session-ID": fmt.Sprintf("%s-%d", name, time.Now().UnixNano())}
		}
		conv := sid("conversation")
		prompt := fmt.Sprintf("Conversation %d.\n%s", time.Now().UnixNano(), strings.TrimSpace(strings.Repeat("Tell me about the sea and the ships that sail on it. ", 16)))
		var turns []turn
		// Each question adds more than two blocks, so a turn's reuse grows
		// even when the block where the last answer's text meets the next
		// question tokenizes differently than it was generated.
		for n, question := range []string{"",
			"\nNow tell me about the mountains: how high they are, which forests cover their slopes, which animals live there in winter, and how people have crossed them for centuries?",
			"\nAnd the rivers: where they begin, which towns they pass on their way, how fast they run in spring, and where they finally meet the sea you told me about?",
		} {
			prompt += question
			r := s.complete(map[string]any{"prompt": prompt, "max_tokens": 16, "ignore_eos": true}, conv)
			if r.err != nil || r.completion != 16 {
				t.Fatalf("turn %d: err %v, %d tokens", n+1, r.err, r.completion)
			}
			turns = append(turns, turn{prompt: len(s.tokenize(t, prompt)), cached: r.cached})
			prompt += r.text
			if n == 2 {
				break
			}
			for i := range others {
				other := sid(fmt.Sprintf("other%d", i))
				r := s.complete(map[string]any{"prompt": otherPrompt(i), "max_tokens": 2}, other)
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
		}
		return turns
	}
	with := run(t, true)
	without := run(t, false)
	t.Logf("pool %d blocks; turns (prompt tokens, cached) with session ids %v, without %v", pool, with, without)
	for n := 1; n < len(with); n++ {
		// All of the previous turn's full blocks but the last, whose
		// tokens the next turn's text may tokenize differently.
		want := (with[n-1].prompt/16 - 1) * 16
		if with[n].cached < want || with[n].cached <= with[n-1].cached {
			t.Fatalf("with session ids turn %d reused %d cached tokens, want ≥ %d and more than turn %d's %d", n+1, with[n].cached, want, n, with[n-1].cached)
		}
	}
	for n := 1; n < len(with); n++ {
		if without[n].cached >= with[n].cached {
			t.Fatalf("without session ids turn %d reused %d tokens, no fewer than with them (%d): the policy made no difference", n+1, without[n].cached, with[n].cached)
		}
	}
}
