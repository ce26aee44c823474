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

// Row is one Config with every engine's numbers: Tandem, llama.cpp's
// prebuilt libraries and llama.cpp built for this machine.
type Row struct {
	Config
	Tandem Measure  `json:"tandem"`
	Llama  *Measure `json:"llama_cpp,omitempty"`        // prebuilt; nil: not run (--no-llama)
	Native *Measure `json:"llama_cpp_native,omitempty"` // native build; nil: not run or not built
	// Ratios are Tandem / prebuilt llama.cpp of the medians; nil without it.
	PrefillRatio *float64 `json:"prefill_ratio,omitempty"`
	DecodeRatio  *float64 `json:"decode_ratio,omitempty"`
	// GreedyAgree is how many leading greedy tokens of stream 0 Tandem and
	// prebuilt llama.cpp share (a sanity check that both computed the same
	// thing).
	GreedyAgree *int `json:"greedy_agree,omitempty"`
	// The same against the native build.
	NativePrefillRatio *float64 `json:"native_prefill_ratio,omitempty"`
	NativeDecodeRatio  *float64 `json:"native_decode_ratio,omitempty"`
	NativeGreedyAgree  *int     `json:"native_greedy_agree,omitempty"`
}

// otherCPU is the largest interference of the row's measures.
func (r *Row) otherCPU() float64 {
	v := r.Tandem.OtherCPU
	for _, m := range []*Measure{r.Llama, r.Native} {
		if m != nil {
			v = max(v, m.OtherCPU)
		}
	}
	return v
}

// compare fills the ratios and greedy agreements from the measures.
func (r *Row) compare() {
	r.PrefillRatio, r.DecodeRatio, r.GreedyAgree = versus(&r.Tandem, r.Llama)
	r.NativePrefillRatio, r.NativeDecodeRatio, r.NativeGreedyAgree = versus(&r.Tandem, r.Native)
}

// baseline is the llama.cpp column the targets use: the native build where
// it ran, else the prebuilt libraries (nil ratios when neither ran).
func (r *Row) baseline() (prefill, decode *float64) {
	if r.Native != nil {
		return r.NativePrefillRatio, r.NativeDecodeRatio
	}
	return r.PrefillRatio, r.DecodeRatio
}

// versus is Tandem's prefill and decode ratios to llama and the number of
// leading greedy tokens they share; all nil when llama is.
func versus(tandem, llama *Measure) (prefill, decode *float64, agree *int) {
	if llama == nil {
		return nil, nil, nil
	}
	n := 0
	for n < len(tandem.Tokens) && n < len(llama.Tokens) && tandem.Tokens[n] == llama.Tokens[n] {
		n++
	}
	return ratio(tandem.Prefill, llama.Prefill), ratio(tandem.Decode, llama.Decode), &n
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

// Target thresholds (the issues' acceptance criteria; issue 16's for the
// single-stream and 16-stream ratios and the thread scaling).
const (
	wantDecodeVsLlama   = 1.0 // single-stream decode ≥ 1.0× llama.cpp
	wantPrefillVsLlama  = 1.0 // single-stream prefill ≥ 1.0× llama.cpp
	wantScaling         = 2.0 // aggregate decode at 16 streams ≥ 2× our own single stream
	wantStreamsVsLlama  = 1.2 // aggregate decode at 16 streams ≥ 1.2× llama.cpp
	wantThreadScaling   = 1.6 // single-stream decode at 2 threads ≥ 1.6× at 1 thread
	targetStreams       = 16
	threadScalingThread = 2
)

// targets evaluates the acceptance targets on rows: per thread count, the
// single-stream ratios against llama.cpp, and at 16 streams our scaling
// over our own single stream (same sweep P and D) and the ratio against
// llama.cpp; then our single-stream decode at 2 threads over 1. llama.cpp is the native build where it ran,
// else the prebuilt libraries (Row.baseline; the name says which).
// Targets whose inputs were not measured are left out.
func targets(rows []Row) []Target {
	var out []Target
	for _, r := range rows {
		if r.Kind != kindSingle {
			continue
		}
		prefill, decode := r.baseline()
		if decode != nil {
			out = append(out, Target{
				Name:  fmt.Sprintf("single-stream decode vs %s, %d thread(s)", baselineName(r), r.Threads),
				Want:  fmt.Sprintf("≥ %.2f×", wantDecodeVsLlama),
				Value: *decode, Met: *decode >= wantDecodeVsLlama,
			})
		}
		if prefill != nil {
			out = append(out, Target{
				Name:  fmt.Sprintf("single-stream prefill vs %s, %d thread(s)", baselineName(r), r.Threads),
				Want:  fmt.Sprintf("≥ %.2f×", wantPrefillVsLlama),
				Value: *prefill, Met: *prefill >= wantPrefillVsLlama,
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
		if _, decode := r.baseline(); decode != nil {
			out = append(out, Target{
				Name:  fmt.Sprintf("decode at %d streams vs %s, %d thread(s)", targetStreams, baselineName(r), r.Threads),
				Want:  fmt.Sprintf("≥ %.2f×", wantStreamsVsLlama),
				Value: *decode, Met: *decode >= wantStreamsVsLlama,
			})
		}
	}
	one, two := findRow(rows, kindSingle, 1, 1), findRow(rows, kindSingle, threadScalingThread, 1)
	if one != nil && two != nil && one.Tandem.Decode > 0 {
		v := two.Tandem.Decode / one.Tandem.Decode
		out = append(out, Target{
			Name:  fmt.Sprintf("single-stream decode at %d threads vs our 1 thread", threadScalingThread),
			Want:  fmt.Sprintf("≥ %.2f×", wantThreadScaling),
			Value: v, Met: v >= wantThreadScaling,
		})
	}
	return out
}

// baselineName names the llama.cpp column Row.baseline uses.
func baselineName(r Row) string {
	if r.Native != nil {
		return "llama.cpp native"
	}
	return "llama.cpp prebuilt"
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
	// ISA is the one instruction set both sides ran at (--isa), "" for
	// each side's best.
	ISA string `json:"isa,omitempty"`
	// Tag names a run on another model than the default (--tag), ""
	// for the default's.
	Tag     string  `json:"tag,omitempty"`
	Date    string  `json:"date"` // YYYY-MM-DD
	Started string  `json:"started"`
	Seconds float64 `json:"seconds"` // wall time of the whole run
	Machine Machine `json:"machine"`
	Model   string  `json:"model"`
	Prompts string  `json:"prompts"` // how the prompt ids were made
	Tandem  Setup   `json:"tandem"`
	Llama   *Setup  `json:"llama_cpp,omitempty"`        // the prebuilt libraries
	Native  *Setup  `json:"llama_cpp_native,omitempty"` // llama.cpp built for this machine
	// NativeMissing says why the native column is absent when llama.cpp
	// ran without it (scripts/llamabench/native.sh could not build it).
	NativeMissing string   `json:"llama_cpp_native_missing,omitempty"`
	Rows          []Row    `json:"rows"`
	Targets       []Target `json:"targets"`
	Quick         bool     `json:"quick,omitempty"`
	Command       string   `json:"command"`
	// MaxOtherCPU is the interference above which a measure was retried
	// and, if it stayed above, flagged.
	MaxOtherCPU float64 `json:"max_other_cpu"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU          string   `json:"cpu"`                 // model name from /proc/cpuinfo
	ISAFlags     []string `json:"isa_flags,omitempty"` // the kernelFlags /proc/cpuinfo lists
	Cores        int      `json:"cores"`               // logical CPUs
	Go           string   `json:"go"`
	LoadAvgStart string   `json:"loadavg_start"` // /proc/loadavg before the run
	LoadAvgEnd   string   `json:"loadavg_end"`
	// OtherCPUStart is the share (0–1) of the machine's CPU other processes
	// used over settleWindow right before the run, once quietMachine
	// stopped waiting; nil when not measured (--quick).
	OtherCPUStart *float64 `json:"other_cpu_start,omitempty"`
}

// Setup is one engine's settings.
type Setup struct {
	Kernels   string `json:"kernels,omitempty"`   // Tandem: which matmul kernels ran
	Precision string `json:"precision,omitempty"` // Tandem: --cpu-precision (cpu.Precision)
	KVType    string `json:"kv_type"`
	FlashAttn bool   `json:"flash_attn"`
	BlockSize int    `json:"block_size,omitempty"`
	UBatch    int    `json:"n_ubatch,omitempty"`
	// llama.cpp: how bench.c was built and the ggml CPU backend it ran.
	Build       string `json:"build,omitempty"`
	BackendDir  string `json:"backend_dir,omitempty"`  // prebuilt variant libraries; "" = CPU backend linked in
	CPUVariant  string `json:"cpu_variant,omitempty"`  // the variant library ggml loaded
	BestVariant string `json:"best_variant,omitempty"` // the best one for this CPU (checkVariant)
	SystemInfo  string `json:"system_info,omitempty"`  // llama_print_system_info
	// WeightBuffers are the buffer types holding the weights (CPU_REPACK
	// or AMX mean those kernels ran).
	WeightBuffers []string `json:"weight_buffers,omitempty"`
}
