package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/enginecore/cpu"
)

// The scale phase (issue 16, parts 4, 5 and 7): Tandem and llama.cpp on
// random-weight GGUFs at 1B and 3B shape, where decode at batch 1 is
// bound by DRAM bandwidth (reported as a share of the bandwidth measured
// in the same run); long prompts on the default model (prefill, and
// decode at that depth); and the peak resident memory of `tandem serve`
// next to llama.cpp's for the same model and context (memory.go).

// Kinds of the scale phase's rows.
const (
	kindModel = "model" // a 1B/3B GGUF, single stream
	kindLong  = "long"  // the default model, a long prompt, single stream
)

// Parts of the scale phase (--scale).
const (
	partModels = "models"
	partLong   = "long"
	partMemory = "memory"
)

// scaleOptions are the scale phase's flags.
type scaleOptions struct {
	parts          []string
	models         []string // SHAPE-QUANT
	threads        []int
	prompt         int // models: P
	gen            int // models: D
	reps           int
	long           []int // long: P values
	longThreads    []int
	longGen        int // long: D
	dir            string
	bwMiB          int
	bwPasses       int
	memCtx         int
	memPrompt      int
	tandemBin      string
	partsFlag      string
	modelsFlag     string
	threadFlag     string
	longFlag       string
	longThreadFlag string
}

func (s *scaleOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&s.partsFlag, "scale", "models,long,memory", "scale phase: parts to run: models (1B/3B GGUFs vs the DRAM bound), long (long prompts), memory (peak RSS of tandem serve vs llama.cpp)")
	fs.StringVar(&s.modelsFlag, "scale-models", "1b:q4_0,q4_k_m,q8_0 3b:q4_k_m", "scale phase: random-weight GGUFs, space-separated SHAPE:QUANT,… (shapes 1b, 3b, tiny, moe; quantizations q4_0, q4_k_m, q8_0)")
	fs.StringVar(&s.threadFlag, "scale-threads", "1,2", "scale phase: thread counts")
	fs.IntVar(&s.prompt, "scale-prompt-tokens", 128, "scale phase, models: prompt tokens P")
	fs.IntVar(&s.gen, "scale-gen-tokens", 32, "scale phase, models: decode tokens D")
	fs.IntVar(&s.reps, "scale-reps", 1, "scale phase: measured repetitions (after one warm-up; these rows take minutes, so 1 by default)")
	fs.StringVar(&s.longFlag, "long-prompt-tokens", "2048,8192", "scale phase, long: prompt lengths P (decode runs at that depth)")
	fs.IntVar(&s.longGen, "long-gen-tokens", 16, "scale phase, long: decode tokens D")
	fs.StringVar(&s.longThreadFlag, "long-threads", "", `scale phase, long: thread counts ("" = the largest of --scale-threads: an 8,192-token prefill takes minutes per engine)`)
	fs.StringVar(&s.dir, "scale-model-dir", ".cache/benchmodels", "scale phase: where the generated GGUFs are cached")
	fs.IntVar(&s.bwMiB, "bandwidth-mib", 1024, "scale phase: MiB streamed by the DRAM bandwidth measure")
	fs.IntVar(&s.bwPasses, "bandwidth-passes", 5, "scale phase: passes of the bandwidth measure at the start and again at the end (best kept)")
	fs.IntVar(&s.memCtx, "memory-ctx", 4096, "scale phase, memory: context (tokens) both engines get")
	fs.IntVar(&s.memPrompt, "memory-prompt-tokens", 512, "scale phase, memory: prompt tokens of the one request")
	fs.StringVar(&s.tandemBin, "tandem-bin", "", `scale phase, memory: the tandem binary ("" = go build ./cmd/tandem into a temp dir)`)
}

// quick shrinks what --quick does not set: tiny models, short prompts,
// no memory part (it builds and starts the server).
func (s *scaleOptions) quick(set map[string]bool) {
	for name, apply := range map[string]func(){
		"scale":               func() { s.partsFlag = "models,long" },
		"scale-models":        func() { s.modelsFlag = "tiny:q4_0,q4_k_m" },
		"scale-threads":       func() { s.threadFlag = "1" },
		"scale-prompt-tokens": func() { s.prompt = 16 },
		"scale-gen-tokens":    func() { s.gen = 8 },
		"long-prompt-tokens":  func() { s.longFlag = "64" },
		"long-gen-tokens":     func() { s.longGen = 4 },
		"bandwidth-mib":       func() { s.bwMiB = 64 },
		"bandwidth-passes":    func() { s.bwPasses = 1 },
		"scale-model-dir":     func() { s.dir = filepath.Join(os.TempDir(), "tandembench-quick-models") },
	} {
		if !set[name] {
			apply()
		}
	}
}

func (s *scaleOptions) parse() error {
	var err error
	for p := range strings.SplitSeq(s.partsFlag, ",") {
		switch p = strings.TrimSpace(p); p {
		case "":
		case partModels, partLong, partMemory:
			s.parts = append(s.parts, p)
		default:
			return fmt.Errorf("--scale: part %q, want models, long or memory", p)
		}
	}
	if s.models, err = parseBenchModels(s.modelsFlag); err != nil {
		return fmt.Errorf("--scale-models: %w", err)
	}
	if s.threads, err = parseInts(s.threadFlag); err != nil || len(s.threads) == 0 {
		return fmt.Errorf("--scale-threads %q: want positive integers", s.threadFlag)
	}
	if s.long, err = parseInts(s.longFlag); err != nil {
		return fmt.Errorf("--long-prompt-tokens: %w", err)
	}
	if s.longThreads, err = parseInts(s.longThreadFlag); err != nil {
		return fmt.Errorf("--long-threads: %w", err)
	}
	if len(s.longThreads) == 0 {
		s.longThreads = []int{slices.Max(s.threads)}
	}
	if s.prompt < 1 || s.gen < 1 || s.reps < 1 || s.longGen < 1 || s.bwMiB < 1 || s.bwPasses < 1 || s.memCtx < 2 || s.memPrompt < 1 || s.memPrompt+16 > s.memCtx {
		return fmt.Errorf("scale phase: token counts, reps and passes must be ≥ 1 and --memory-prompt-tokens + 16 ≤ --memory-ctx")
	}
	return nil
}

func (s *scaleOptions) has(part string) bool { return slices.Contains(s.parts, part) }

// flags reproduces the phase's settings on a command line.
func (s *scaleOptions) flags() string {
	return fmt.Sprintf("--scale %s --scale-models %q --scale-threads %s --scale-prompt-tokens %d --scale-gen-tokens %d --scale-reps %d --long-prompt-tokens %s --long-gen-tokens %d --long-threads %s --memory-ctx %d --memory-prompt-tokens %d",
		strings.Join(s.parts, ","), s.modelsFlag, s.threadFlag, s.prompt, s.gen, s.reps, s.longFlag, s.longGen, joinInts(s.longThreads), s.memCtx, s.memPrompt)
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

// ScaleRow is one measured configuration of the scale phase, with what
// a decode step reads and the share of the DRAM bound each engine
// reached.
type ScaleRow struct {
	Model string `json:"model"` // SHAPE-QUANT, or the default model's file name
	Row
	// Bytes one decode step reads at the mean decode depth P + D/2:
	// weights (one embedding row) + K and V of every layer, Tandem's KV
	// in f32, llama.cpp's in its --kv-type.
	BytesTandem float64 `json:"decode_bytes_tandem"`
	BytesLlama  float64 `json:"decode_bytes_llama_cpp"`
	// DRAM shares: tok/s × bytes ÷ the bandwidth measured at the row's
	// thread count; nil without that engine or a bandwidth.
	DRAMTandem *float64 `json:"dram_share_tandem,omitempty"`
	DRAMLlama  *float64 `json:"dram_share_llama_cpp,omitempty"`
	DRAMNative *float64 `json:"dram_share_llama_cpp_native,omitempty"`
	// Fast is Tandem at --cpu-precision fast: prompt tokens at int8 as
	// well, llama.cpp's arithmetic, where the run's precision computes them
	// at 15 bits (twice the integer work of prefill); nil when the run is
	// already fast or the row is not a model row. FastPrefillRatio is its
	// prefill over the baseline llama.cpp column's.
	Fast             *Measure `json:"tandem_fast,omitempty"`
	FastPrefillRatio *float64 `json:"fast_prefill_ratio,omitempty"`
}

// setFast records m as the row's fast-precision measure.
func (r *ScaleRow) setFast(m *Measure) {
	r.Fast = m
	base := r.Native
	if base == nil {
		base = r.Llama
	}
	if base != nil {
		r.FastPrefillRatio = ratio(m.Prefill, base.Prefill)
	}
}

// shares fills the DRAM shares from bw.
func (r *ScaleRow) shares(bw *Bandwidth) {
	b := bw.of(r.Threads) * 1e9
	share := func(m *Measure, bytes float64) *float64 {
		if m == nil || b <= 0 {
			return nil
		}
		v := m.Decode * bytes / b
		return &v
	}
	r.DRAMTandem = share(&r.Tandem, r.BytesTandem)
	r.DRAMLlama = share(r.Llama, r.BytesLlama)
	r.DRAMNative = share(r.Native, r.BytesLlama)
}

// ScaleReport is everything the scale phase writes to scale-DATE.json.
type ScaleReport struct {
	Date          string       `json:"date"`
	Started       string       `json:"started"`
	Seconds       float64      `json:"seconds"`
	Machine       Machine      `json:"machine"`
	DefaultModel  string       `json:"default_model"` // the long and memory parts' model
	Prompts       string       `json:"prompts"`
	Tandem        Setup        `json:"tandem"`
	Llama         *Setup       `json:"llama_cpp,omitempty"`
	Native        *Setup       `json:"llama_cpp_native,omitempty"`
	NativeMissing string       `json:"llama_cpp_native_missing,omitempty"`
	Bandwidth     *Bandwidth   `json:"dram_bandwidth,omitempty"`
	Models        []benchModel `json:"models,omitempty"`
	Rows          []ScaleRow   `json:"rows"`
	Memory        *MemoryPart  `json:"memory,omitempty"`
	MemoryError   string       `json:"memory_error,omitempty"` // why the memory part has no rows
	Targets       []Target     `json:"targets"`
	Quick         bool         `json:"quick,omitempty"`
	Command       string       `json:"command"`
	MaxOtherCPU   float64      `json:"max_other_cpu"`
}

// runScale measures the scale phase and writes its outputs.
func runScale(ctx context.Context, o options, stderr io.Writer) error {
	s := &o.scale
	m, err := quietMachine(ctx, o, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	rep := &ScaleReport{
		Date: o.date, Started: start.Format(time.RFC3339), Machine: m, DefaultModel: o.model,
		Prompts: fmt.Sprintf(promptRule, o.seed),
		Tandem:  Setup{KVType: "f32", BlockSize: o.blockSize, Kernels: kernelsInUse(), Precision: o.precision.String()},
		Quick:   o.quick, MaxOtherCPU: o.maxOther,
		Command: strings.TrimSpace(goExperimentEnv() + " go run ./cmd/tandembench --phase scale " + s.flags()),
	}
	var llamas []*llamaBench
	if !o.noLlama {
		if err := checkFile("llama.cpp bench binary", o.llamaBin, "run scripts/oracle.sh && scripts/llamabench/build.sh, or pass --no-llama"); err != nil {
			return err
		}
		tmp, err := os.MkdirTemp("", "tandembench-scale-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		llamas, rep.NativeMissing = llamaSides(o, tmp)
		if rep.NativeMissing != "" {
			fmt.Fprintln(stderr, "scale: WARNING: no native llama.cpp column: "+rep.NativeMissing+"; the targets use the prebuilt libraries")
		}
		for i, l := range llamas {
			st, err := l.probe(ctx)
			if err != nil {
				return err
			}
			st.UBatch = l.ubatch
			if i == 0 {
				rep.Llama = &st
			} else {
				rep.Native = &st
			}
		}
	}
	if s.has(partModels) || s.has(partLong) {
		bwThreads := slices.Compact(slices.Sorted(slices.Values(s.threads)))
		rep.Bandwidth = measureBandwidth(int64(s.bwMiB)<<20, bwThreads, s.bwPasses)
		fmt.Fprintf(stderr, "scale: DRAM read bandwidth (%s loop, %d MiB, best of %d): %s\n", rep.Bandwidth.Kernel, s.bwMiB, s.bwPasses, fmtBandwidth(rep.Bandwidth))
	}
	kvElem := int64(2)
	if o.kvType == "f32" {
		kvElem = 4
	}
	measure := func(name, path string, cfgs []Config) error {
		db, err := readDecodeBytes(path)
		if err != nil {
			return err
		}
		oo := o
		oo.model = path
		ls := make([]*llamaBench, len(llamas))
		for i, l := range llamas {
			c := *l
			c.model = path
			ls[i] = &c
		}
		rows, err := measureThreads(ctx, oo, cfgs, ls, stderr)
		if err != nil {
			return err
		}
		var fast []Row // the model rows again, Tandem alone at --cpu-precision fast
		if cfgs[0].Kind == kindModel && o.precision != cpu.PrecisionFast {
			of := oo
			of.precision = cpu.PrecisionFast
			fmt.Fprintf(stderr, "scale: %s again at --cpu-precision fast (prompt tokens at int8, as llama.cpp)\n", name)
			if fast, err = measureThreads(ctx, of, cfgs, nil, stderr); err != nil {
				return err
			}
		}
		for i, r := range rows {
			depth := r.PromptTokens + r.GenTokens/2
			sr := ScaleRow{Model: name, Row: r, BytesTandem: db.at(depth, 4), BytesLlama: db.at(depth, kvElem)}
			if i < len(fast) {
				sr.setFast(&fast[i].Tandem)
			}
			sr.shares(rep.Bandwidth)
			fmt.Fprintf(stderr, "scale: %s %s: DRAM bound share tandem %s llama.cpp %s native %s\n", name, r.Config, fmtShare(sr.DRAMTandem), fmtShare(sr.DRAMLlama), fmtShare(sr.DRAMNative))
			rep.Rows = append(rep.Rows, sr)
		}
		return nil
	}
	if s.has(partModels) {
		for _, name := range s.models {
			m, err := ensureBenchModel(s.dir, name, stderr)
			if err != nil {
				return err
			}
			rep.Models = append(rep.Models, m)
			for _, t := range s.threads {
				cfg := Config{Kind: kindModel, Threads: t, Streams: 1, PromptTokens: s.prompt, GenTokens: s.gen, Reps: s.reps}
				if err := measure(name, m.Path, []Config{cfg}); err != nil {
					return err
				}
			}
		}
	}
	if s.has(partLong) && len(s.long) > 0 {
		for _, t := range s.longThreads {
			var cfgs []Config
			for _, p := range s.long {
				cfgs = append(cfgs, Config{Kind: kindLong, Threads: t, Streams: 1, PromptTokens: p, GenTokens: s.longGen, Reps: s.reps})
			}
			if err := measure(filepath.Base(o.model), o.model, cfgs); err != nil {
				return err
			}
		}
	}
	if rep.Bandwidth != nil { // again: other work on the machine only lowers a measure
		bwThreads := slices.Collect(maps.Keys(rep.Bandwidth.GBps))
		rep.Bandwidth.merge(measureBandwidth(int64(s.bwMiB)<<20, bwThreads, s.bwPasses))
		fmt.Fprintf(stderr, "scale: DRAM read bandwidth, best of the start and the end: %s\n", fmtBandwidth(rep.Bandwidth))
		for i := range rep.Rows {
			rep.Rows[i].shares(rep.Bandwidth)
		}
	}
	if s.has(partMemory) {
		// A failure here (the tree does not build, the server does not
		// start) must not cost the rows measured above: it is reported.
		mp, err := measureMemory(ctx, o, llamas, stderr)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			rep.MemoryError = err.Error()
			fmt.Fprintln(stderr, "scale: WARNING: no memory rows:", err)
		}
		rep.Memory = mp
	}
	rep.Targets = scaleTargets(rep)
	rep.Seconds = time.Since(start).Seconds()
	rep.Machine.LoadAvgEnd = loadAvg()
	return writeScale(rep, o, stderr)
}

// Targets of the scale phase (issue 16's acceptance lines).
const (
	wantScaleVsLlama = 0.9  // 1B Q4_0/Q4_K_M and P = 2048: ≥ 0.9× llama.cpp
	wantDRAMShare    = 0.75 // 1B Q4_0/Q4_K_M decode: ≥ 75% of the DRAM bound
	targetLongPrompt = 2048
)

// targetModels are the models the 1B targets apply to.
var targetModels = []string{"1b-q4_0", "1b-q4_k_m"}

// scaleTargets evaluates the targets whose inputs were measured: for the
// 1B Q4_0 and Q4_K_M rows decode and prefill against llama.cpp and
// decode's share of the DRAM bound; for P = 2048 prefill and decode at
// that depth against llama.cpp; and that the engine does not hold a
// second copy of the weights.
func scaleTargets(rep *ScaleReport) []Target {
	var out []Target
	ratioTarget := func(name string, v *float64) {
		if v != nil {
			out = append(out, Target{Name: name, Want: fmt.Sprintf("≥ %.2f×", wantScaleVsLlama), Value: *v, Met: *v >= wantScaleVsLlama})
		}
	}
	for _, r := range rep.Rows {
		prefill, decode := r.baseline()
		base := baselineName(r.Row)
		switch {
		case r.Kind == kindModel && slices.Contains(targetModels, r.Model):
			ratioTarget(fmt.Sprintf("%s decode vs %s, %d thread(s)", r.Model, base, r.Threads), decode)
			if r.DRAMTandem != nil {
				out = append(out, Target{Name: fmt.Sprintf("%s decode, share of the DRAM bound, %d thread(s)", r.Model, r.Threads),
					Want: fmt.Sprintf("≥ %.0f%%", 100*wantDRAMShare), Value: *r.DRAMTandem, Met: *r.DRAMTandem >= wantDRAMShare})
			}
			ratioTarget(fmt.Sprintf("%s prefill vs %s, %d thread(s)", r.Model, base, r.Threads), prefill)
			ratioTarget(fmt.Sprintf("%s prefill at --cpu-precision fast (llama.cpp's int8 arithmetic) vs %s, %d thread(s)", r.Model, base, r.Threads), r.FastPrefillRatio)
		case r.Kind == kindLong && r.PromptTokens == targetLongPrompt:
			ratioTarget(fmt.Sprintf("P = %d prefill vs %s, %d thread(s)", r.PromptTokens, base, r.Threads), prefill)
			ratioTarget(fmt.Sprintf("decode at depth %d vs %s, %d thread(s)", r.PromptTokens, base, r.Threads), decode)
		}
	}
	if m := rep.Memory; m != nil {
		if m.WeightsBytes > 0 {
			v := float64(m.LoadHeapBytes) / float64(m.WeightsBytes)
			out = append(out, Target{Name: "Go heap the CPU backend adds loading the model (matrices mapped from its pack cache), share of the weights file (mapped, not copied)",
				Want: fmt.Sprintf("< %.0f%%", 100*wantLoadHeapShare), Value: v, Met: v < wantLoadHeapShare})
		}
		if v, ok := m.residentShare(); ok {
			out = append(out, Target{Name: "weights the engine holds (Go heap + resident pages of the model file and of its pack cache file), share of the weights file (resident once)",
				Want: fmt.Sprintf("< %.0f%%", 100*wantResidentShare), Value: v, Met: v < wantResidentShare})
		}
	}
	return out
}

// writeScale writes scale-DATE.json and the doc's scale section.
func writeScale(rep *ScaleReport, o options, stderr io.Writer) error {
	if err := writePhase(o, stderr, "scale", rep.Date, rep, func(doc, rel string) string {
		return spliceScale(doc, renderScale(rep, rel))
	}); err != nil {
		return err
	}
	for _, t := range rep.Targets {
		fmt.Fprintf(stderr, "target %-70s want %s got %s %s\n", t.Name, t.Want, fmtTarget(t), metWord(t.Met))
	}
	return nil
}

// fmtTarget prints a target's value as a percentage when its want is one.
func fmtTarget(t Target) string {
	if strings.Contains(t.Want, "%") {
		return fmt.Sprintf("%.0f%%", 100*t.Value)
	}
	return fmt.Sprintf("%.2f×", t.Value)
}

func fmtShare(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.0f%%", 100**v)
}

func fmtBandwidth(b *Bandwidth) string {
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(b.GBps)) {
		parts = append(parts, fmt.Sprintf("%.1f GB/s at %d thread(s)", b.GBps[t], t))
	}
	return strings.Join(parts, ", ")
}

// fmtBytes prints a byte count in MB or GB (1e6, 1e9).
func fmtBytes(b float64) string {
	if b >= 1e9 {
		return strconv.FormatFloat(b/1e9, 'f', 2, 64) + " GB"
	}
	return strconv.FormatFloat(b/1e6, 'f', 0, 64) + " MB"
}
