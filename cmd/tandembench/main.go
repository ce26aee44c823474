package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/cpu/kernels"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "tandembench:", err)
		}
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	model        string
	llamaBin     string // bench.c on the prebuilt libraries
	nativeBin    string // bench.c on the native build; "" = none
	noLlama      bool
	out          string // directory for cpu-DATE.{json,png}
	doc          string // markdown file to update; "" = none
	threads      []int  // single-stream thread counts
	prompt       int    // single-stream P
	gen          int    // single-stream D
	sweep        []sweepEntry
	streamPrompt int // sweep P
	streamGen    int // sweep D
	reps         int
	seed         uint64
	kvType       string // llama.cpp's KV cache type
	ubatch       int    // llama.cpp's n_ubatch
	blockSize    int    // Tandem's KV block size
	precision    cpu.Precision
	date         string
	quick        bool
	maxOther     float64          // retry a measure when others used more of the CPU than this
	retries      int              // extra attempts per measure
	retryWait    time.Duration    // pause before a retry
	sample       func() cpuSample // nil: sampleCPU (tests fake it)
	cpuProfile   string           // write a CPU profile of the whole run here ("" = none)
	isa          string           // "" (each side's best) or an isaRuns key: both sides at one instruction set
	tag          string           // names a run on another model in file names and the doc section; "" for the default
	replot       string           // a saved cpu-DATE.json to redraw instead of measuring
	phase        string           // phaseAll, phaseCPU or phaseStructured
	// The structured phase (structured.go): stream counts, threads, D.
	structuredStreams []int
	structuredThreads int
	structuredGen     int
	// The speculative phase (speculative.go): stream counts, draft sizes,
	// D; its threads are the structured phase's.
	specStreams, specK []int
	specGen            int
	frontend           frontendOptions // the frontend phase (frontend.go)
	scale              scaleOptions    // the scale phase (scale.go)
}

// Phases of a run.
const (
	phaseAll        = "all"
	phaseCPU        = "cpu"         // Tandem vs llama.cpp: cpu-DATE.{json,png}
	phaseStructured = "structured"  // constrained vs unconstrained decode: structured-DATE.json
	phaseFrontend   = "frontend"    // the HTTP frontend with a null engine: frontend-DATE.json
	phaseScale      = "scale"       // 1B/3B models, long context, memory: scale-DATE.json
	phaseSpec       = "speculative" // n-gram speculative decoding's gain: speculative-DATE.json
)

// sweepEntry is one thread count of the concurrency sweep.
type sweepEntry struct {
	threads int
	streams []int
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("tandembench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.model, "model", "models/SmolLM2-135M-Instruct.Q4_1.gguf", "GGUF model both engines run (scripts/model.sh fetches the default), or bench:SHAPE-QUANT for a random-weight one written into --scale-model-dir (e.g. bench:moe-q4_k_m)")
	fs.StringVar(&o.llamaBin, "llamabench", ".cache/llamabench", "llama.cpp bench binary on node-llama-cpp's prebuilt libraries (scripts/llamabench/build.sh builds it)")
	fs.StringVar(&o.nativeBin, "llamabench-native", ".cache/llamabench-native", `llama.cpp bench binary on llama.cpp built for this machine (scripts/llamabench/native.sh, then build.sh; "" = none)`)
	fs.BoolVar(&o.noLlama, "no-llama", false, "measure Tandem only (no ratios, no llama.cpp targets)")
	fs.StringVar(&o.out, "out", "docs/benchmarks", "directory for cpu-DATE.json and cpu-DATE.png")
	fs.StringVar(&o.doc, "doc", "docs/benchmarks.md", `markdown file to add the dated section to ("" = none)`)
	threads := fs.String("threads", "1,2", "thread counts of the single-stream runs")
	fs.IntVar(&o.prompt, "prompt-tokens", 128, "single-stream prompt tokens P")
	fs.IntVar(&o.gen, "gen-tokens", 64, "single-stream decode tokens D")
	sweep := fs.String("sweep", "1:1,4,16 2:1,4,16,64", "concurrency sweep: space-separated THREADS:STREAMS,STREAMS,... (\"\" = none)")
	fs.IntVar(&o.streamPrompt, "stream-prompt-tokens", 32, "sweep prompt tokens P per stream")
	fs.IntVar(&o.streamGen, "stream-gen-tokens", 32, "sweep decode tokens D per stream")
	fs.IntVar(&o.reps, "reps", 3, "measured repetitions per configuration (median reported), after one warm-up")
	seed := fs.Uint64("seed", 1, "prompt id seed")
	fs.StringVar(&o.kvType, "kv-type", "f16", "llama.cpp KV cache type: f16 (llama.cpp's default) or f32 (Tandem's)")
	fs.IntVar(&o.ubatch, "ubatch", 512, "llama.cpp n_ubatch (physical batch)")
	fs.IntVar(&o.blockSize, "block-size", 16, "Tandem KV block size")
	fs.Var(&o.precision, "cpu-precision", "Tandem's --cpu-precision: prompt (the default), fast (int8 like llama.cpp) or high")
	fs.StringVar(&o.date, "date", time.Now().Format(time.DateOnly), "date in file names and the doc section (YYYY-MM-DD)")
	fs.Float64Var(&o.maxOther, "max-other-cpu", 0.1, "retry a measurement when other processes used more than this share of the CPU meanwhile")
	fs.IntVar(&o.retries, "retries", 2, "extra attempts for a measurement disturbed by other processes")
	fs.DurationVar(&o.retryWait, "retry-wait", 15*time.Second, "pause before such a retry")
	fs.StringVar(&o.replot, "replot", "", "redraw the PNG and the doc section from a saved cpu-DATE.json (with --phase structured or scale: that section from its structured-DATE.json or scale-DATE.json), measuring nothing")
	fs.StringVar(&o.phase, "phase", phaseAll, "what to measure: cpu (Tandem vs llama.cpp), structured (constrained decoding's cost), speculative (n-gram speculative decoding's gain), frontend (the HTTP frontend's own cost, null engine), scale (1B/3B models vs the DRAM bound, long context, peak memory; see --scale) or all")
	o.frontend.register(fs)
	o.scale.register(fs)
	structuredStreams := fs.String("structured-streams", "1,64", "structured phase: stream counts (all constrained, then all not)")
	specStreams := fs.String("spec-streams", "1,8", "speculative phase: stream counts")
	specK := fs.String("spec-k", "4,8", "speculative phase: draft sizes k (num_speculative_tokens)")
	fs.IntVar(&o.specGen, "spec-gen-tokens", 96, "speculative phase: decode tokens D per stream")
	fs.IntVar(&o.structuredThreads, "structured-threads", 0, "structured phase: threads (default: the largest of --threads)")
	fs.IntVar(&o.structuredGen, "structured-gen-tokens", 32, "structured phase: decode tokens D per stream")
	fs.StringVar(&o.isa, "isa", "", "cpu phase: compare at one instruction set: avx2 runs Tandem's AVX2 kernels (set TANDEM_CPU_KERNELS=avx2) against llama.cpp's haswell prebuilt variant, avxvnni Tandem's avxvnni kernels against the alderlake variant; without the native column; files and doc section are tagged with it")
	fs.StringVar(&o.tag, "tag", "", `cpu phase: a name for a run on another --model (e.g. "gemma3"): files cpu-TAG-DATE.{json,png} and a doc section of their own`)
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a pprof CPU profile of the run (Tandem's side; llama.cpp runs in its own process) to this file")
	fs.BoolVar(&o.quick, "quick", false, "smoke test: P=16 D=8, 1 rep, no retries, threads 1, sweep 1:1,2; output to a temp dir and no doc unless --out/--doc are given")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.seed = *seed
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.quick {
		quick := map[string]func(){
			"threads":               func() { *threads = "1" },
			"prompt-tokens":         func() { o.prompt = 16 },
			"gen-tokens":            func() { o.gen = 8 },
			"sweep":                 func() { *sweep = "1:1,2" },
			"structured-streams":    func() { *structuredStreams = "1,4" },
			"structured-gen-tokens": func() { o.structuredGen = 8 },
			"spec-streams":          func() { *specStreams = "1" },
			"spec-k":                func() { *specK = "4" },
			"spec-gen-tokens":       func() { o.specGen = 8 },
			"stream-prompt-tokens":  func() { o.streamPrompt = 8 },
			"stream-gen-tokens":     func() { o.streamGen = 8 },
			"reps":                  func() { o.reps = 1 },
			"retries":               func() { o.retries = 0 },
			"out":                   func() { o.out = filepath.Join(os.TempDir(), "tandembench-quick") },
			"doc":                   func() { o.doc = "" },
		}
		for name, apply := range quick {
			if !set[name] {
				apply()
			}
		}
		o.frontend.quick(set)
		o.scale.quick(set)
	}
	var err error
	if o.threads, err = parseInts(*threads); err != nil {
		return o, fmt.Errorf("--threads: %w", err)
	}
	if o.sweep, err = parseSweep(*sweep); err != nil {
		return o, fmt.Errorf("--sweep: %w", err)
	}
	if o.structuredStreams, err = parseInts(*structuredStreams); err != nil {
		return o, fmt.Errorf("--structured-streams: %w", err)
	}
	if o.specStreams, err = parseInts(*specStreams); err != nil {
		return o, fmt.Errorf("--spec-streams: %w", err)
	}
	if o.specK, err = parseInts(*specK); err != nil || len(o.specK) == 0 {
		return o, fmt.Errorf("--spec-k: want draft sizes: %v", err)
	}
	if err := o.frontend.parse(); err != nil {
		return o, err
	}
	if err := o.scale.parse(); err != nil {
		return o, err
	}
	if o.structuredThreads <= 0 {
		o.structuredThreads = slices.Max(append([]int{1}, o.threads...))
	}
	switch {
	case o.phase != phaseAll && o.phase != phaseCPU && o.phase != phaseStructured && o.phase != phaseFrontend && o.phase != phaseScale && o.phase != phaseSpec:
		return o, fmt.Errorf("--phase %q: want all, cpu, structured, frontend, scale or speculative", o.phase)
	case o.prompt < 1 || o.gen < 1 || o.streamPrompt < 1 || o.streamGen < 1 || o.structuredGen < 1:
		return o, errors.New("prompt and gen token counts must be ≥ 1")
	case o.reps < 1:
		return o, errors.New("--reps must be ≥ 1")
	case o.kvType != "f16" && o.kvType != "f32":
		return o, fmt.Errorf("--kv-type %q: want f16 or f32", o.kvType)
	case o.blockSize < 1 || o.ubatch < 1:
		return o, errors.New("--block-size and --ubatch must be ≥ 1")
	case o.retries < 0 || o.maxOther <= 0:
		return o, errors.New("--retries must be ≥ 0 and --max-other-cpu > 0")
	}
	if _, ok := isaRuns[o.isa]; o.isa != "" && !ok {
		return o, fmt.Errorf("--isa %q: want avx2 or avxvnni", o.isa)
	}
	if _, err := time.Parse(time.DateOnly, o.date); err != nil {
		return o, fmt.Errorf("--date %q: want YYYY-MM-DD", o.date)
	}
	return o, nil
}

// parseInts parses "1,2,4" into positive ints; "" is none.
func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseSweep parses "1:1,4,16 2:1,4,16,64".
func parseSweep(s string) ([]sweepEntry, error) {
	var out []sweepEntry
	for _, f := range strings.Fields(s) {
		t, streams, ok := strings.Cut(f, ":")
		if !ok {
			return nil, fmt.Errorf("%q: want THREADS:STREAMS[,STREAMS…]", f)
		}
		th, err := parseInts(t)
		if err != nil || len(th) != 1 {
			return nil, fmt.Errorf("%q: bad thread count", f)
		}
		ss, err := parseInts(streams)
		if err != nil || len(ss) == 0 {
			return nil, fmt.Errorf("%q: bad stream list", f)
		}
		out = append(out, sweepEntry{threads: th[0], streams: ss})
	}
	return out, nil
}

// configs lists every configuration in run order, grouped by thread count.
func (o options) configs() []Config {
	var out []Config
	for _, t := range o.threads {
		out = append(out, Config{Kind: kindSingle, Threads: t, Streams: 1, PromptTokens: o.prompt, GenTokens: o.gen, Reps: o.reps})
	}
	for _, e := range o.sweep {
		for _, s := range e.streams {
			out = append(out, Config{Kind: kindStreams, Threads: e.threads, Streams: s, PromptTokens: o.streamPrompt, GenTokens: o.streamGen, Reps: o.reps})
		}
	}
	slices.SortStableFunc(out, func(a, b Config) int { return a.Threads - b.Threads })
	return out
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.replot != "" {
		data, err := os.ReadFile(o.replot)
		if err != nil {
			return fmt.Errorf("%w: --replot: %w", ErrMissing, err)
		}
		if o.phase == phaseStructured {
			var rep StructuredReport
			if err := json.Unmarshal(data, &rep); err != nil {
				return fmt.Errorf("--replot %s: %w", o.replot, err)
			}
			rep.Targets = structuredTargets(rep.Rows)
			return writeStructured(&rep, o, stderr)
		}
		if o.phase == phaseScale {
			var rep ScaleReport
			if err := json.Unmarshal(data, &rep); err != nil {
				return fmt.Errorf("--replot %s: %w", o.replot, err)
			}
			rep.Targets = scaleTargets(&rep)
			return writeScale(&rep, o, stderr)
		}
		var rep Report
		if err := json.Unmarshal(data, &rep); err != nil {
			return fmt.Errorf("--replot %s: %w", o.replot, err)
		}
		return writeOutputs(&rep, o, stderr)
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if o.phase == phaseFrontend {
		return runFrontend(ctx, o, stderr)
	}
	if err := resolveBenchModel(&o, stderr); err != nil {
		return err
	}
	if err := checkFile("model", o.model, "run scripts/model.sh, or pass --model"); err != nil {
		return err
	}
	if o.phase == phaseScale {
		return runScale(ctx, o, stderr)
	}
	if o.phase == phaseSpec {
		return runSpeculative(ctx, o, stderr)
	}
	if o.phase != phaseStructured {
		if err := runCPU(ctx, o, args, stderr); err != nil {
			return err
		}
	}
	if o.phase != phaseCPU && len(o.structuredStreams) > 0 {
		if err := runStructured(ctx, o, stderr); err != nil {
			return err
		}
	}
	if o.phase == phaseAll {
		if err := runSpeculative(ctx, o, stderr); err != nil {
			return err
		}
		if err := runFrontend(ctx, o, stderr); err != nil {
			return err
		}
		return runScale(ctx, o, stderr)
	}
	return nil
}

// specFlags are the flags that reproduce the speculative phase.
func (o options) specFlags() string {
	return fmt.Sprintf("--spec-streams %s --spec-k %s --spec-gen-tokens %d --structured-threads %d --stream-prompt-tokens %d --reps %d --seed %d",
		joinInts(o.specStreams), joinInts(o.specK), o.specGen, o.structuredThreads, o.streamPrompt, o.reps, o.seed)
}

// structuredFlags are the flags that reproduce the structured phase.
func (o options) structuredFlags() string {
	streams := make([]string, len(o.structuredStreams))
	for i, s := range o.structuredStreams {
		streams[i] = strconv.Itoa(s)
	}
	return fmt.Sprintf("--structured-streams %s --structured-threads %d --structured-gen-tokens %d --stream-prompt-tokens %d --reps %d --seed %d",
		strings.Join(streams, ","), o.structuredThreads, o.structuredGen, o.streamPrompt, o.reps, o.seed)
}

// runCPU is the CPU phase: Tandem and llama.cpp (prebuilt, and native
// where built), every configuration.
func runCPU(ctx context.Context, o options, args []string, stderr io.Writer) error {
	start := time.Now()
	flags := cpuFlags()
	if err := checkISA(o.isa, kernels.Level()); err != nil {
		return err
	}
	m, err := quietMachine(ctx, o, stderr)
	if err != nil {
		return err
	}
	rep := &Report{
		ISA:         o.isa,
		Tag:         o.tag,
		Date:        o.date,
		Started:     start.Format(time.RFC3339),
		Machine:     m,
		Model:       o.model,
		Prompts:     fmt.Sprintf(promptRule, o.seed),
		Tandem:      Setup{KVType: "f32", BlockSize: o.blockSize, Kernels: kernelsInUse(), Precision: o.precision.String()},
		Quick:       o.quick,
		MaxOtherCPU: o.maxOther,
		Command:     strings.TrimSpace(goExperimentEnv() + kernelsEnv() + " go run ./cmd/tandembench " + strings.Join(args, " ")),
	}
	var llamas []*llamaBench // prebuilt first, then native
	if !o.noLlama {
		if err := checkFile("llama.cpp bench binary", o.llamaBin, "run scripts/oracle.sh && scripts/llamabench/build.sh, or pass --no-llama"); err != nil {
			return err
		}
		tmp, err := os.MkdirTemp("", "tandembench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		llamas, rep.NativeMissing = llamaSides(o, tmp)
		if o.isa != "" {
			llamas = llamas[:1]
			rep.NativeMissing = "not compared at one instruction set: built for the whole CPU"
		}
		if rep.NativeMissing != "" {
			fmt.Fprintln(stderr, "tandembench: WARNING: no native llama.cpp column: "+rep.NativeMissing+"; the targets use the prebuilt libraries")
		}
		for i, l := range llamas {
			s, err := l.probe(ctx)
			if err != nil {
				return err
			}
			if i == 0 && o.isa != "" { // again, with isa's variant alone
				if err := isaBackend(l, o.isa, s.BackendDir, tmp); err != nil {
					return err
				}
				if s, err = l.probe(ctx); err != nil {
					return err
				}
			}
			s.UBatch = l.ubatch // the probe's batch is smaller; n_ubatch is at most the batch
			if i == 0 {
				if err := checkISAVariant(&s, o.isa); err != nil {
					return err
				}
				if err := checkVariant(&s, flags); err != nil {
					return fmt.Errorf("%w\nggml's scores on this CPU (%s --variant-scores):\n%s", err, l.bin, variantScores(ctx, l.bin))
				}
				rep.Llama = &s
			} else {
				rep.Native = &s
			}
			fmt.Fprintf(stderr, "%s: %s; CPU variant %s; %s\n", l.name, s.Build, orUnknown(s.CPUVariant), s.SystemInfo)
		}
	}
	if kernels.Level() == "go" {
		fmt.Fprintln(stderr, "tandembench: warning: Tandem runs its pure-Go kernels ("+kernelsInUse()+"); build with GOEXPERIMENT=simd for the SIMD ones")
	}
	if rep.Machine.busy() {
		fmt.Fprintf(stderr, "tandembench: warning: the machine is busy (%s); the numbers will be unreliable\n", rep.Machine.busyWhy())
	}
	cfgs := o.configs()
	for i := 0; i < len(cfgs); {
		j := i
		for j < len(cfgs) && cfgs[j].Threads == cfgs[i].Threads {
			j++
		}
		rows, err := measureThreads(ctx, o, cfgs[i:j], llamas, stderr)
		if err != nil {
			return err
		}
		rep.Rows = append(rep.Rows, rows...)
		i = j
	}
	rep.Targets = targets(rep.Rows)
	rep.Seconds = time.Since(start).Seconds()
	rep.Machine.LoadAvgEnd = loadAvg()
	return writeOutputs(rep, o, stderr)
}

// writeOutputs writes cpu-DATE.json, cpu-DATE.png and the doc section.
func writeOutputs(rep *Report, o options, stderr io.Writer) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	base := filepath.Join(o.out, rep.fileBase())
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".json", append(data, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(base + ".png")
	if err != nil {
		return err
	}
	if err := writePlot(f, rep); err != nil {
		f.Close()
		return fmt.Errorf("plot: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s.json and %s.png\n", base, base)
	if o.doc != "" {
		rel, err := filepath.Rel(filepath.Dir(o.doc), o.out)
		if err != nil {
			rel = o.out
		}
		if err := updateDoc(o.doc, rep, filepath.ToSlash(rel)); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "updated %s\n", o.doc)
	}
	for _, t := range rep.Targets {
		fmt.Fprintf(stderr, "target %-55s want %s got %.2f× %s\n", t.Name, t.Want, t.Value, metWord(t.Met))
	}
	return nil
}

// kernelsInUse names the matmul kernels Tandem runs (kernels.Level) and
// the build's GOEXPERIMENT.
func kernelsInUse() string {
	exp := goExperiment()
	if exp == "" {
		exp = "none"
	}
	return fmt.Sprintf("%s (GOEXPERIMENT=%s)", kernels.Level(), exp)
}

// goExperiment is the GOEXPERIMENT this binary was built with ("" if none).
func goExperiment() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "GOEXPERIMENT" {
				return s.Value
			}
		}
	}
	return ""
}

// goExperimentEnv is "GOEXPERIMENT=..." to rebuild this binary alike, or "".
// kernelsEnv is " TANDEM_CPU_KERNELS=…" when the run capped Tandem's
// kernels, for the rerun command.
func kernelsEnv() string {
	if v := os.Getenv("TANDEM_CPU_KERNELS"); v != "" {
		return " TANDEM_CPU_KERNELS=" + v
	}
	return ""
}

func goExperimentEnv() string {
	if exp := goExperiment(); exp != "" {
		return "GOEXPERIMENT=" + exp
	}
	return ""
}

// machine reads the CPU model, its kernel ISA flags and counts.
func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), LoadAvgStart: loadAvg(), ISAFlags: presentKernelFlags(cpuFlags())}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// busyLoad is the 1-minute load average above which a run is flagged as
// measured on a busy machine, when other processes' CPU share at the start
// was not measured (Machine.OtherCPUStart).
const busyLoad = 0.5

// busy reports whether the phase started on a busy machine: other
// processes used settleShare of the CPU or more over the settle window, or
// (unmeasured, as in --quick) the load average says so. The load average
// alone lags by minutes: right after a phase of this run it is high while
// nothing else runs.
func (m Machine) busy() bool {
	if m.OtherCPUStart != nil {
		return *m.OtherCPUStart >= settleShare
	}
	return busy(m.LoadAvgStart)
}

// busyWhy says what busy went by, for the report's warning.
func (m Machine) busyWhy() string {
	if m.OtherCPUStart != nil {
		return fmt.Sprintf("other processes used %.0f%% of the CPU at the start; load average %s", 100**m.OtherCPUStart, m.LoadAvgStart)
	}
	return "load average " + m.LoadAvgStart
}

// busy reports whether loadavg (as loadAvg returns it) says other work is
// running.
func busy(loadavg string) bool {
	f := strings.Fields(loadavg)
	if len(f) == 0 {
		return false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return err == nil && v > busyLoad
}

// loadAvg is the first three fields of /proc/loadavg ("" if unreadable).
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}
