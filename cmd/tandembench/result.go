package main

import (
	"fmt"
	"slices"
)

// Kinds of Row.
const (
	kindSingle  = "single"  // single stream, long prompt: the prefill and decode targets
	kindStreams = "streams" // concurrency sweep: aggregate decode
)

// Config is one measured configuration.
type Config struct {
	Kind         string `json:"kind"` // kindSingle or kindStreams
	Threads      int    `json:"threads"`
	Streams      int    `json:"streams"`       // S
	PromptTokens int    `json:"prompt_tokens"` // P, per stream
	GenTokens    int    `json:"gen_tokens"`    // D, per stream
	Reps         int    `json:"reps"`
}

func (c Config) String() string {
	return fmt.Sprintf("%s threads=%d streams=%d P=%d D=%d", c.Kind, c.Threads, c.Streams, c.PromptTokens, c.GenTokens)
}

// Measure is one engine's numbers for one Config.
type Measure struct {
	PrefillTokS []float64 `json:"prefill_tok_s"` // [reps] S·P / prefill seconds
	DecodeTokS  []float64 `json:"decode_tok_s"`  // [reps] S·D / decode seconds
	Prefill     float64   `json:"prefill_tok_s_median"`
	Decode      float64   `json:"decode_tok_s_median"`
	Tokens      []int32   `json:"tokens,omitempty"` // [D+1] stream 0's greedy tokens, last rep
	// OtherCPU is the share (0–1) of the machine's CPU time that other
	// processes used while this measure ran (see otherCPU); Attempts is
	// how many times it was measured to get it below --max-other-cpu (the
	// attempt with the least interference is kept).
	OtherCPU float64 `json:"other_cpu"`
	Attempts int     `json:"attempts"`
}

// summarize fills the medians.
func (m *Measure) summarize() {
	m.Prefill = median(m.PrefillTokS)
	m.Decode = median(m.DecodeTokS)
}

// Row is one Config with both engines' numbers.
type Row struct {
	Config
	Tandem Measure  `json:"tandem"`
	Llama  *Measure `json:"llama_cpp,omitempty"` // nil: llama.cpp not run (--no-llama)
	// Ratios are tandem/llama.cpp of the medians; nil without llama.cpp.
	PrefillRatio *float64 `json:"prefill_ratio,omitempty"`
	DecodeRatio  *float64 `json:"decode_ratio,omitempty"`
	// GreedyAgree is how many leading greedy tokens of stream 0 the two
	// engines share (a sanity check that both computed the same thing).
	GreedyAgree *int `json:"greedy_agree,omitempty"`
}

// otherCPU is the larger interference of the row's two measures.
func (r *Row) otherCPU() float64 {
	v := r.Tandem.OtherCPU
	if r.Llama != nil {
		v = max(v, r.Llama.OtherCPU)
	}
	return v
}

// compare fills the ratios and GreedyAgree from the two measures.
func (r *Row) compare() {
	r.PrefillRatio, r.DecodeRatio, r.GreedyAgree = nil, nil, nil
	if r.Llama == nil {
		return
	}
	r.PrefillRatio = ratio(r.Tandem.Prefill, r.Llama.Prefill)
	r.DecodeRatio = ratio(r.Tandem.Decode, r.Llama.Decode)
	n := 0
	for n < len(r.Tandem.Tokens) && n < len(r.Llama.Tokens) && r.Tandem.Tokens[n] == r.Llama.Tokens[n] {
		n++
	}
	r.GreedyAgree = &n
}

// ratio is a/b, nil when b is not positive.
func ratio(a, b float64) *float64 {
	if b <= 0 {
		return nil
	}
	v := a / b
	return &v
}

// median of xs (the mean of the middle two for an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Target is one acceptance target and whether this run meets it.
type Target struct {
	Name  string  `json:"name"`
	Want  string  `json:"want"`  // e.g. "≥ 0.80×"
	Value float64 `json:"value"` // the measured ratio
	Met   bool    `json:"met"`
}

// Target thresholds (the issues' acceptance criteria).
const (
	wantDecodeVsLlama  = 0.8 // single-stream decode ≥ 0.8× llama.cpp
	wantPrefillVsLlama = 0.5 // single-stream prefill ≥ 0.5× llama.cpp
	wantScaling        = 2.0 // aggregate decode at 16 streams ≥ 2× our own single stream
	targetStreams      = 16
)

// targets evaluates the acceptance targets on rows: per thread count, the
// single-stream ratios against llama.cpp, and at 16 streams our scaling
// over our own single stream (same sweep P and D) and the ratio against
// llama.cpp (ahead = > 1). Targets whose inputs were not measured are
// left out.
func targets(rows []Row) []Target {
	var out []Target
	for _, r := range rows {
		if r.Kind != kindSingle {
			continue
		}
		if r.DecodeRatio != nil {
			out = append(out, Target{
				Name:  fmt.Sprintf("single-stream decode vs llama.cpp, %d thread(s)", r.Threads),
				Want:  fmt.Sprintf("≥ %.2f×", wantDecodeVsLlama),
				Value: *r.DecodeRatio, Met: *r.DecodeRatio >= wantDecodeVsLlama,
			})
		}
		if r.PrefillRatio != nil {
			out = append(out, Target{
				Name:  fmt.Sprintf("single-stream prefill vs llama.cpp, %d thread(s)", r.Threads),
				Want:  fmt.Sprintf("≥ %.2f×", wantPrefillVsLlama),
				Value: *r.PrefillRatio, Met: *r.PrefillRatio >= wantPrefillVsLlama,
			})
		}
	}
	for _, r := range rows {
		if r.Kind != kindStreams || r.Streams != targetStreams {
			continue
		}
		if one := findRow(rows, kindStreams, r.Threads, 1); one != nil && one.Tandem.Decode > 0 {
			v := r.Tandem.Decode / one.Tandem.Decode
			out = append(out, Target{
				Name:  fmt.Sprintf("decode at %d streams vs our single stream, %d thread(s)", targetStreams, r.Threads),
				Want:  fmt.Sprintf("≥ %.2f×", wantScaling),
				Value: v, Met: v >= wantScaling,
			})
		}
		if r.DecodeRatio != nil {
			out = append(out, Target{
				Name:  fmt.Sprintf("decode at %d streams vs llama.cpp, %d thread(s)", targetStreams, r.Threads),
				Want:  "> 1.00×",
				Value: *r.DecodeRatio, Met: *r.DecodeRatio > 1,
			})
		}
	}
	return out
}

// findRow returns the row of kind at threads and streams, or nil.
func findRow(rows []Row, kind string, threads, streams int) *Row {
	for i := range rows {
		if r := &rows[i]; r.Kind == kind && r.Threads == threads && r.Streams == streams {
			return r
		}
	}
	return nil
}

// Report is everything one run writes to cpu-DATE.json.
type Report struct {
	Date    string   `json:"date"` // YYYY-MM-DD
	Started string   `json:"started"`
	Seconds float64  `json:"seconds"` // wall time of the whole run
	Machine Machine  `json:"machine"`
	Model   string   `json:"model"`
	Prompts string   `json:"prompts"` // how the prompt ids were made
	Tandem  Setup    `json:"tandem"`
	Llama   *Setup   `json:"llama_cpp,omitempty"`
	Rows    []Row    `json:"rows"`
	Targets []Target `json:"targets"`
	Quick   bool     `json:"quick,omitempty"`
	Command string   `json:"command"`
	// MaxOtherCPU is the interference above which a measure was retried
	// and, if it stayed above, flagged.
	MaxOtherCPU float64 `json:"max_other_cpu"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU          string `json:"cpu"`   // model name from /proc/cpuinfo
	Cores        int    `json:"cores"` // logical CPUs
	Go           string `json:"go"`
	LoadAvgStart string `json:"loadavg_start"` // /proc/loadavg before the run
	LoadAvgEnd   string `json:"loadavg_end"`
}

// Setup is one engine's settings.
type Setup struct {
	Kernels    string `json:"kernels,omitempty"`   // Tandem: which matmul kernels ran
	Precision  string `json:"precision,omitempty"` // Tandem: --cpu-precision (cpu.Precision)
	KVType     string `json:"kv_type"`
	FlashAttn  bool   `json:"flash_attn"`
	BlockSize  int    `json:"block_size,omitempty"`
	UBatch     int    `json:"n_ubatch,omitempty"`
	CPUVariant string `json:"cpu_variant,omitempty"`
	SystemInfo string `json:"system_info,omitempty"`
}
