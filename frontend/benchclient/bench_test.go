package benchclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tandem-llm/tandem/frontend/benchclient"
)

// fakeServer streams OpenAI-style chunks: two content chunks and a usage
// chunk whose prompt_tokens is the number of words in the request and
// whose cached_tokens is what the same session sent before (a perfect
// session cache).
type fakeServer struct {
	mu       sync.Mutex
	seen     map[string]int // session → prompt + completion tokens of its last turn
	requests []map[string]any
	sessions []string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/models" {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model"}]}`)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	words := 0
	if msgs, ok := body["messages"].([]any); ok {
		for _, m := range msgs {
			words += len(strings.Fields(m.(map[string]any)["content"].(string)))
		}
	} else {
		words = len(strings.Fields(body["prompt"].(string)))
	}
	sess := r.Header.Get("X-Session-ID")
	f.mu.Lock()
	f.requests = append(f.requests, body)
	f.sessions = append(f.sessions, sess)
	if f.seen == nil {
		f.seen = map[string]int{}
	}
	cached := 0
	if sess != "" {
		cached = f.seen[sess]
		f.seen[sess] = words + 2
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	for _, piece := range []string{"hello", " world"} {
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", piece)
		w.(http.Flusher).Flush()
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":%d}}}\n\n", words, cached)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func TestMultiTurnCarriesAnswersAndMeasuresHits(t *testing.T) {
	fake := &fakeServer{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	run, err := benchclient.Execute(context.Background(), benchclient.Config{
		Label:  "session",
		Target: &benchclient.Target{BaseURL: srv.URL},
		Dataset: benchclient.DatasetConfig{Name: benchclient.DatasetMultiTurn, Seed: 7, NumConversations: 3, NumTurns: 4,
			SystemLen: 10, ContextLen: 20, UserLen: 5, OutputLen: 8},
		NumClients: 2, MaxActive: 2, BlockSize: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := run.Summary
	if s.Completed != 12 || s.Failed != 0 {
		t.Fatalf("completed %d failed %d, want 12/0", s.Completed, s.Failed)
	}
	if s.CacheableHitRate != 1 {
		t.Errorf("cacheable hit rate %v, want 1 (the fake caches every history)", s.CacheableHitRate)
	}
	if len(s.Turns) != 4 || s.Turns[0].CacheableTokens != 0 || s.Turns[1].CacheableTokens == 0 {
		t.Errorf("per-turn stats %+v", s.Turns)
	}
	if s.TTFT.N != 12 || s.TTFT.Median <= 0 || s.ITL.N != 12 {
		t.Errorf("TTFT %+v ITL %+v", s.TTFT, s.ITL)
	}
	// The last turn of each conversation carries 4 questions, 3 answers.
	fake.mu.Lock()
	defer fake.mu.Unlock()
	lastTurns := 0
	for i, req := range fake.requests {
		msgs := req["messages"].([]any)
		if !strings.HasPrefix(fake.sessions[i], "bench-conv-7-") {
			t.Errorf("request %d has session %q", i, fake.sessions[i])
		}
		if len(msgs) == 8 {
			lastTurns++
			if got := msgs[2].(map[string]any)["content"]; got != "hello world" {
				t.Errorf("the first answer carried forward is %q, want the server's", got)
			}
		}
		if req["stream"] != true || req["max_tokens"] != float64(8) {
			t.Errorf("request %d: stream %v max_tokens %v", i, req["stream"], req["max_tokens"])
		}
	}
	if lastTurns != 3 {
		t.Errorf("%d requests with the full history, want 3", lastTurns)
	}
}

func TestSingleShotDatasets(t *testing.T) {
	tests := []struct {
		name    string
		cfg     benchclient.DatasetConfig
		wantN   int
		distinc int // distinct first 10 words
	}{
		{"random", benchclient.DatasetConfig{Name: benchclient.DatasetRandom, NumPrompts: 6, InputLen: 30, OutputLen: 4}, 6, 6},
		{"prefix-repetition", benchclient.DatasetConfig{Name: benchclient.DatasetPrefixRepetition, NumPrompts: 6, PrefixLen: 30, SuffixLen: 5, NumPrefixes: 2, OutputLen: 4}, 6, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeServer{}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			var bar bytes.Buffer
			run, err := benchclient.Execute(context.Background(), benchclient.Config{
				Label: tt.name, Target: &benchclient.Target{BaseURL: srv.URL, Model: "m"}, Dataset: tt.cfg, NumClients: 3, RequestRate: 1000, Progress: &bar,
			})
			if err != nil {
				t.Fatal(err)
			}
			if run.Summary.Completed != tt.wantN {
				t.Errorf("completed %d, want %d", run.Summary.Completed, tt.wantN)
			}
			firsts := map[string]bool{}
			for _, req := range fake.requests {
				firsts[strings.Join(strings.Fields(req["prompt"].(string))[:10], " ")] = true
			}
			if len(firsts) != tt.distinc {
				t.Errorf("%d distinct prompt starts, want %d", len(firsts), tt.distinc)
			}
			if !strings.Contains(bar.String(), fmt.Sprintf("%d/%d requests", tt.wantN, tt.wantN)) {
				t.Errorf("progress bar never showed completion: %q", bar.String())
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	samples := []benchclient.Sample{
		{Turn: 1, TTFT: 0.1, E2E: 0.5, Completion: 5, PromptTokens: 100, CachedTokens: 0},
		{Turn: 2, TTFT: 0.2, E2E: 0.6, Completion: 5, PromptTokens: 150, CachedTokens: 96, Cacheable: 96},
		{Turn: 3, TTFT: 0.3, E2E: 0.7, Completion: 1, PromptTokens: 200, CachedTokens: 112, Cacheable: 144},
		{Turn: 3, Error: "boom"},
	}
	s := benchclient.Summarize("x", benchclient.DatasetMultiTurn, samples, 2)
	want := benchclient.Summary{
		Label: "x", Dataset: benchclient.DatasetMultiTurn, Completed: 3, Failed: 1, Duration: 2,
		RequestThroughput: 1.5, OutputThroughput: 5.5, TotalThroughput: 230.5, PromptTokens: 450, OutputTokens: 11,
		CachedTokens: 208, HitRate: 208.0 / 450, CacheableTokens: 240, CacheableHitRate: 208.0 / 240,
	}
	opts := cmpopts.IgnoreFields(benchclient.Summary{}, "TTFT", "TPOT", "ITL", "E2E", "TTFTLateTurns", "Turns")
	if diff := cmp.Diff(want, s, opts, cmpopts.EquateApprox(1e-9, 0)); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if s.TTFT.Median != 200 || s.TTFT.P90 != 280 || s.TTFTLateTurns.N != 1 || s.TPOT.N != 2 {
		t.Errorf("TTFT %+v late %+v TPOT %+v", s.TTFT, s.TTFTLateTurns, s.TPOT)
	}
	if len(s.Turns) != 3 || s.Turns[2].CacheableHitRate != 112.0/144 {
		t.Errorf("turns %+v", s.Turns)
	}
}

func TestReports(t *testing.T) {
	run := func(label string, ttft float64) *benchclient.Run {
		var samples []benchclient.Sample
		for turn := 1; turn <= 4; turn++ {
			samples = append(samples, benchclient.Sample{Turn: turn, TTFT: ttft * float64(turn), E2E: 1, PromptTokens: 100 * turn, CachedTokens: 50 * (turn - 1), Cacheable: 60 * (turn - 1)})
		}
		return &benchclient.Run{Label: label, Summary: benchclient.Summarize(label, benchclient.DatasetMultiTurn, samples, 10)}
	}
	runs := []*benchclient.Run{run("session", 0.05), run("round-robin", 0.2)}
	var md bytes.Buffer
	benchclient.WriteMarkdown(&md, runs)
	for _, want := range []string{"| session |", "| round-robin |", "TTFT p50 ms | turn 1 | turn 2 | turn 3 | turn 4 |", "| session | 50 | 100 | 150 | 200 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var img bytes.Buffer
	if err := benchclient.WritePNG(&img, "multi-turn", runs); err != nil {
		t.Fatal(err)
	}
	m, err := png.Decode(&img)
	if err != nil {
		t.Fatal(err)
	}
	if b := m.Bounds(); b.Dx() != 1200 || b.Dy() != 520 {
		t.Errorf("plot is %v", b)
	}
	// The lines are drawn: the palette's first colour appears.
	found := false
	for y := 0; y < m.Bounds().Dy() && !found; y++ {
		for x := 0; x < m.Bounds().Dx(); x++ {
			if r, g, b, _ := m.At(x, y).RGBA(); r>>8 == 31 && g>>8 == 119 && b>>8 == 180 {
				found = true
				break
			}
		}
	}
	if !found {
		t.Error("the plot has no line in the first series' colour")
	}
}
