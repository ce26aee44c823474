package benchclient

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
)

// Dist summarizes a latency distribution, in milliseconds.
type Dist struct {
	Mean   float64 `json:"mean_ms"`
	Median float64 `json:"median_ms"`
	P90    float64 `json:"p90_ms"`
	P99    float64 `json:"p99_ms"`
	N      int     `json:"n"`
}

// dist summarizes values given in seconds.
func dist(seconds []float64) Dist {
	if len(seconds) == 0 {
		return Dist{}
	}
	v := slices.Clone(seconds)
	slices.Sort(v)
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return Dist{Mean: 1000 * sum / float64(len(v)), Median: 1000 * percentile(v, 50), P90: 1000 * percentile(v, 90), P99: 1000 * percentile(v, 99), N: len(v)}
}

// percentile of sorted values, linearly interpolated (numpy's default).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	r := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(r))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (r-float64(lo))*(sorted[hi]-sorted[lo])
}

// TurnStats is the multi-turn view of one turn number.
type TurnStats struct {
	Turn             int     `json:"turn"`
	N                int     `json:"n"`
	TTFT             Dist    `json:"ttft"`
	PromptTokens     int     `json:"prompt_tokens"`
	CachedTokens     int     `json:"cached_tokens"`
	CacheableTokens  int     `json:"cacheable_tokens"`
	HitRate          float64 `json:"hit_rate"`           // cached / prompt tokens
	CacheableHitRate float64 `json:"cacheable_hit_rate"` // min(cached, cacheable) / cacheable
}

// Summary is a run's headline numbers, as vllm bench serve reports them.
type Summary struct {
	Label     string  `json:"label"`
	Dataset   string  `json:"dataset"`
	Completed int     `json:"completed"`
	Failed    int     `json:"failed"`
	Duration  float64 `json:"duration_s"`

	RequestThroughput float64 `json:"request_throughput"` // requests/s
	OutputThroughput  float64 `json:"output_throughput"`  // tokens/s
	TotalThroughput   float64 `json:"total_token_throughput"`
	PromptTokens      int     `json:"total_input_tokens"`
	OutputTokens      int     `json:"total_output_tokens"`

	TTFT Dist `json:"ttft"`
	TPOT Dist `json:"tpot"` // (E2E − TTFT) / (output tokens − 1)
	ITL  Dist `json:"itl"`
	E2E  Dist `json:"e2e"`

	CachedTokens    int     `json:"cached_tokens"`
	HitRate         float64 `json:"prefix_cache_hit_rate"` // cached / prompt tokens
	CacheableTokens int     `json:"cacheable_tokens"`
	// CacheableHitRate is the share of the cacheable tokens (each turn's
	// previous prompt and answer, whole blocks) the server served from
	// its cache: 1.0 means it never recomputed a conversation's history.
	CacheableHitRate float64 `json:"cacheable_hit_rate"`
	// TTFTLateTurns is TTFT over turns ≥ 3 (multi-turn).
	TTFTLateTurns Dist        `json:"ttft_turns_ge_3"`
	Turns         []TurnStats `json:"turns,omitempty"`
}

// Summarize computes a run's summary.
func Summarize(label, dataset string, samples []Sample, duration float64) Summary {
	s := Summary{Label: label, Dataset: dataset, Duration: duration}
	var ttft, tpot, itl, e2e, late []float64
	turns := map[int]*TurnStats{}
	turnTTFT := map[int][]float64{}
	for _, x := range samples {
		if x.Error != "" {
			s.Failed++
			continue
		}
		s.Completed++
		s.PromptTokens += x.PromptTokens
		s.OutputTokens += x.Completion
		s.CachedTokens += x.CachedTokens
		s.CacheableTokens += x.Cacheable
		ttft = append(ttft, x.TTFT)
		e2e = append(e2e, x.E2E)
		itl = append(itl, x.ITL...)
		if x.Completion > 1 {
			tpot = append(tpot, (x.E2E-x.TTFT)/float64(x.Completion-1))
		}
		if x.Turn >= 3 {
			late = append(late, x.TTFT)
		}
		ts, ok := turns[x.Turn]
		if !ok {
			ts = &TurnStats{Turn: x.Turn}
			turns[x.Turn] = ts
		}
		ts.N++
		ts.PromptTokens += x.PromptTokens
		ts.CachedTokens += x.CachedTokens
		ts.CacheableTokens += x.Cacheable
		ts.CacheableHitRate += float64(min(x.CachedTokens, x.Cacheable)) // a sum until divided below
		turnTTFT[x.Turn] = append(turnTTFT[x.Turn], x.TTFT)
	}
	if duration > 0 {
		s.RequestThroughput = float64(s.Completed) / duration
		s.OutputThroughput = float64(s.OutputTokens) / duration
		s.TotalThroughput = float64(s.PromptTokens+s.OutputTokens) / duration
	}
	s.TTFT, s.TPOT, s.ITL, s.E2E, s.TTFTLateTurns = dist(ttft), dist(tpot), dist(itl), dist(e2e), dist(late)
	s.HitRate = ratio(s.CachedTokens, s.PromptTokens)
	hit := 0.0
	for _, k := range slices.Sorted(maps.Keys(turns)) {
		ts := turns[k]
		hit += ts.CacheableHitRate
		ts.CacheableHitRate = ratioF(ts.CacheableHitRate, ts.CacheableTokens)
		ts.HitRate = ratio(ts.CachedTokens, ts.PromptTokens)
		ts.TTFT = dist(turnTTFT[k])
		s.Turns = append(s.Turns, *ts)
	}
	s.CacheableHitRate = ratioF(hit, s.CacheableTokens)
	return s
}

func ratio(a, b int) float64 { return ratioF(float64(a), b) }

func ratioF(a float64, b int) float64 {
	if b == 0 {
		return 0
	}
	return a / float64(b)
}

// WriteMarkdown writes the runs as Markdown tables: the headline numbers,
// then TTFT p50 and the cacheable hit rate per turn number.
func WriteMarkdown(w io.Writer, runs []*Run) {
	fmt.Fprintln(w, "| run | ok/failed | req/s | out tok/s | TTFT p50 / p90 / p99 ms | TTFT p50 turns ≥ 3 ms | TPOT p50 ms | ITL p50 ms | E2E p50 ms | hit rate | cacheable hit rate |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		s := r.Summary
		fmt.Fprintf(w, "| %s | %d/%d | %.2f | %.1f | %.0f / %.0f / %.0f | %.0f | %.1f | %.1f | %.0f | %.1f%% | %.1f%% |\n",
			s.Label, s.Completed, s.Failed, s.RequestThroughput, s.OutputThroughput, s.TTFT.Median, s.TTFT.P90, s.TTFT.P99,
			s.TTFTLateTurns.Median, s.TPOT.Median, s.ITL.Median, s.E2E.Median, 100*s.HitRate, 100*s.CacheableHitRate)
	}
	maxTurn := 0
	for _, r := range runs {
		for _, t := range r.Summary.Turns {
			maxTurn = max(maxTurn, t.Turn)
		}
	}
	if maxTurn < 2 {
		return
	}
	head := func(what string) {
		fmt.Fprintf(w, "\n| %s |", what)
		for t := 1; t <= maxTurn; t++ {
			fmt.Fprintf(w, " turn %d |", t)
		}
		fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", maxTurn))
	}
	row := func(label string, turns []TurnStats, cell func(TurnStats) string) {
		fmt.Fprintf(w, "| %s |", label)
		for t := 1; t <= maxTurn; t++ {
			c := "–"
			for _, ts := range turns {
				if ts.Turn == t {
					c = cell(ts)
				}
			}
			fmt.Fprintf(w, " %s |", c)
		}
		fmt.Fprintln(w)
	}
	head("TTFT p50 ms")
	for _, r := range runs {
		row(r.Label, r.Summary.Turns, func(ts TurnStats) string { return fmt.Sprintf("%.0f", ts.TTFT.Median) })
	}
	head("prefix-cache hit rate (cached / prompt tokens)")
	for _, r := range runs {
		row(r.Label, r.Summary.Turns, func(ts TurnStats) string { return fmt.Sprintf("%.0f%%", 100*ts.HitRate) })
	}
	head("cacheable hit rate (cached / history tokens)")
	for _, r := range runs {
		row(r.Label, r.Summary.Turns, func(ts TurnStats) string {
			if ts.CacheableTokens == 0 {
				return "–"
			}
			return fmt.Sprintf("%.0f%%", 100*ts.CacheableHitRate)
		})
	}
}
