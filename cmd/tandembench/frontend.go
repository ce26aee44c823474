package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// The frontend phase (issue 16, part 6): the HTTP frontend's own cost.
// A real `tandem engine --device null` (scheduler, KV manager, sampler,
// ZeroMQ and msgpack real; no forward pass) serves a real `tandem
// frontend`, each its own process. At each stream count S, S clients
// stream chat completions back to back over HTTP, then the same prompts
// go straight to the engine through the Go engine client
// (frontend/engineclient). Reported per S: streamed tok/s, the frontend
// process's CPU seconds (utime + stime, /proc/PID/stat) and so tok/s per
// frontend core, TTFT p50/p99 both ways and their difference (the TTFT the
// frontend adds), and the frontend's allocations per token (its
// go_memstats counters on /metrics). Then the added TTFT behind an engine
// that steps every --frontend-step-time, where above one stream each
// request goes both ways at once (measurePaced). Then the msgpack codec
// alone: encode and decode ns per message (frontend_wire.go).

// Acceptance targets (issue 16, part 6).
const (
	wantTokSPerCore   = 50000 // streamed tokens/s per frontend core, at targetStreams and above
	wantAddedTTFTms   = 1.0   // added TTFT p50 < 1 ms at targetStreams
	targetFEStreams   = 64
	feKVBytesPerToken = 1024 // the null backend's nominal KV cost (enginecore/null)
)

// frontendOptions are the frontend phase's flags.
type frontendOptions struct {
	tandem    string // the tandem binary; "" = go build one into a temp dir
	streams   []int
	gen       int // D: max_tokens of every request
	minTokens int // tokens streamed per stream count at least (requests per stream follow)
	wireIters int // iterations per codec measurement
	rawStream string
	// The paced runs, for added TTFT: the null engine steps every
	// stepTime, each stream sends ttftRequests requests of ttftGen tokens.
	stepTime     time.Duration
	ttftGen      int
	ttftRequests int
}

func (f *frontendOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tandem, "frontend-tandem", "", `frontend phase: the tandem binary to run ("" = go build ./cmd/tandem into a temp dir)`)
	fs.StringVar(&f.rawStream, "frontend-streams", "1,64,512", "frontend phase: concurrent HTTP streams")
	fs.IntVar(&f.gen, "frontend-gen-tokens", 128, "frontend phase: max_tokens D of every request")
	fs.IntVar(&f.minTokens, "frontend-tokens", 131072, "frontend phase: tokens streamed at each stream count, at least")
	fs.IntVar(&f.wireIters, "frontend-wire-iters", 20000, "frontend phase: iterations of each msgpack measurement")
	fs.DurationVar(&f.stepTime, "frontend-step-time", 10*time.Millisecond, "frontend phase: the null engine's step time in the paced runs that measure added TTFT (0 = no paced runs)")
	fs.IntVar(&f.ttftGen, "frontend-ttft-gen-tokens", 16, "frontend phase: max_tokens of the paced runs' requests")
	fs.IntVar(&f.ttftRequests, "frontend-ttft-requests", 20, "frontend phase: requests per stream in the paced runs")
}

// quick shrinks what set does not name, for --quick.
func (f *frontendOptions) quick(set map[string]bool) {
	if !set["frontend-streams"] {
		f.rawStream = "1,4"
	}
	if !set["frontend-gen-tokens"] {
		f.gen = 8
	}
	if !set["frontend-tokens"] {
		f.minTokens = 64
	}
	if !set["frontend-wire-iters"] {
		f.wireIters = 100
	}
	if !set["frontend-ttft-gen-tokens"] {
		f.ttftGen = 4
	}
	if !set["frontend-ttft-requests"] {
		f.ttftRequests = 2
	}
	if !set["frontend-step-time"] {
		f.stepTime = time.Millisecond
	}
}

// parse checks the flags once parsed.
func (f *frontendOptions) parse() error {
	var err error
	if f.streams, err = parseInts(f.rawStream); err != nil {
		return fmt.Errorf("--frontend-streams: %w", err)
	}
	if f.gen < 1 || f.minTokens < 1 || f.wireIters < 1 || f.ttftGen < 1 || f.ttftRequests < 1 {
		return fmt.Errorf("--frontend-gen-tokens, --frontend-tokens, --frontend-wire-iters, --frontend-ttft-gen-tokens and --frontend-ttft-requests must be ≥ 1")
	}
	if f.stepTime < 0 {
		return fmt.Errorf("--frontend-step-time must be ≥ 0")
	}
	return nil
}

// flags are the flags that reproduce the phase.
func (f *frontendOptions) flags() string {
	return fmt.Sprintf("--frontend-streams %s --frontend-gen-tokens %d --frontend-tokens %d --frontend-wire-iters %d --frontend-step-time %s --frontend-ttft-gen-tokens %d --frontend-ttft-requests %d",
		f.rawStream, f.gen, f.minTokens, f.wireIters, f.stepTime, f.ttftGen, f.ttftRequests)
}

// FrontendReport is what the phase writes to frontend-DATE.json.
type FrontendReport struct {
	Date      string  `json:"date"`
	Started   string  `json:"started"`
	Seconds   float64 `json:"seconds"`
	Machine   Machine `json:"machine"`
	Engine    string  `json:"engine"`   // the engine's command line
	Frontend  string  `json:"frontend"` // the frontend's
	GenTokens int     `json:"gen_tokens"`
	// The paced runs: the engine's command line, its step time, and the
	// requests' max_tokens and count per stream.
	PacedEngine   string        `json:"paced_engine,omitempty"`
	StepTimeMs    float64       `json:"step_time_ms"`
	TTFTGenTokens int           `json:"ttft_gen_tokens"`
	TTFTRequests  int           `json:"ttft_requests_per_stream"`
	Rows          []FrontendRow `json:"rows"`
	Wire          []WireMeasure `json:"wire"`
	Targets       []Target      `json:"targets"`
	Quick         bool          `json:"quick,omitempty"`
	Command       string        `json:"command"`
	PromptToken   int           `json:"prompt_tokens"` // of stream 0's prompt, after the chat template
}

// FrontendRow is one stream count.
type FrontendRow struct {
	Streams  int `json:"streams"`
	Requests int `json:"requests"` // over HTTP, and as many direct
	// Over HTTP through the frontend.
	Tokens         int         `json:"tokens"` // completion tokens, from usage
	Seconds        float64     `json:"seconds"`
	TokS           float64     `json:"tok_s"`
	FrontendCPU    float64     `json:"frontend_cpu_s"` // utime + stime of the frontend process
	EngineCPU      float64     `json:"engine_cpu_s"`
	TokSPerCore    float64     `json:"tok_s_per_frontend_core"` // Tokens / FrontendCPU
	AllocsPerToken float64     `json:"allocs_per_token"`        // frontend mallocs / Tokens
	BytesPerToken  float64     `json:"bytes_per_token"`         // frontend bytes allocated / Tokens
	TTFT           Percentiles `json:"ttft_us"`
	TTFB           Percentiles `json:"ttfb_us"` // to the response headers, flushed with the role chunk before any token
	// The frontend's own view (its /metrics histograms, means over the
	// run): TTFT from the request's submission to its first token, and
	// the engine's queue time (WAITING, from the engine's timestamps).
	FrontendTTFTus float64 `json:"frontend_ttft_mean_us"`
	QueueUs        float64 `json:"engine_queue_mean_us"`
	// Straight to the engine through the Go engine client.
	DirectTokS  float64     `json:"direct_tok_s"`
	DirectTTFT  Percentiles `json:"direct_ttft_us"`
	AddedTTFTus Percentiles `json:"added_ttft_us"` // TTFT − DirectTTFT, per percentile
	// The paced run (the engine steps every StepTimeMs): TTFT over HTTP
	// and direct, and the difference, the TTFT the frontend adds.
	Paced *FrontendPaced `json:"paced,omitempty"`
}

// FrontendPaced is one stream count's paced run.
type FrontendPaced struct {
	Requests    int         `json:"requests"`
	TokS        float64     `json:"tok_s"`
	TTFT        Percentiles `json:"ttft_us"`
	TTFB        Percentiles `json:"ttfb_us"`
	DirectTTFT  Percentiles `json:"direct_ttft_us"`
	AddedTTFTus Percentiles `json:"added_ttft_us"`
	// Paired: each request went over HTTP and, at the same moment, as a
	// direct twin (measurePaced); PairAddedUs are then the percentiles of
	// each pair's difference (HTTP TTFT − its twin's).
	Paired      bool        `json:"paired,omitempty"`
	PairAddedUs Percentiles `json:"pair_added_ttft_us"`
	// The frontend's own mean TTFT (submission to first token), to split
	// the added TTFT into before and after the engine client.
	FrontendTTFTus float64 `json:"frontend_ttft_mean_us"`
}

// runFrontend measures the frontend phase and writes its outputs.
func runFrontend(ctx context.Context, o options, stderr io.Writer) error {
	start := time.Now()
	f := o.frontend
	bin := f.tandem
	if bin == "" {
		dir, err := os.MkdirTemp("", "tandembench-frontend-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if bin, err = buildTandem(ctx, dir, stderr); err != nil {
			return err
		}
	}
	maxStreams := 1
	for _, s := range f.streams {
		maxStreams = max(maxStreams, s)
	}
	st, err := startStack(ctx, bin, "null", maxStreams, f.gen, stderr)
	if err != nil {
		return err
	}
	defer st.close()
	m, err := quietMachine(ctx, o, stderr)
	if err != nil {
		return err
	}
	rep := &FrontendReport{
		Date: o.date, Started: start.Format(time.RFC3339), Machine: m,
		Engine: st.args(st.engineArgs), Frontend: st.args(st.frontendArgs),
		GenTokens: f.gen, Quick: o.quick,
		Command: strings.TrimSpace(goExperimentEnv() + " go run ./cmd/tandembench --phase frontend " + f.flags()),
	}
	prompts, err := st.prompts(ctx, maxStreams)
	if err != nil {
		return err
	}
	rep.PromptToken = len(prompts[0].ids)
	for _, s := range f.streams {
		perStream := max(1, (f.minTokens+s*f.gen-1)/(s*f.gen))
		row, err := st.measure(ctx, prompts[:s], perStream, f.gen)
		if err != nil {
			return fmt.Errorf("frontend %d streams: %w", s, err)
		}
		fmt.Fprintf(stderr, "frontend S=%-4d %8.0f tok/s  %8.0f tok/s/core  TTFT p50 %s (direct %s; frontend's mean %s, queue %s)  %.1f allocs/token\n",
			s, row.TokS, row.TokSPerCore, fmtUS(row.TTFT.P50), fmtUS(row.DirectTTFT.P50), fmtUS(row.FrontendTTFTus), fmtUS(row.QueueUs), row.AllocsPerToken)
		rep.Rows = append(rep.Rows, row)
	}
	st.close()
	if f.stepTime > 0 {
		if err := runPaced(ctx, bin, f, prompts, rep, stderr); err != nil {
			return err
		}
	}
	rep.Wire = measureWire(f.wireIters)
	rep.Targets = frontendTargets(rep.Rows)
	rep.Seconds = time.Since(start).Seconds()
	rep.Machine.LoadAvgEnd = loadAvg()
	return writeFrontend(rep, o, stderr)
}

// runPaced measures TTFT at every stream count behind an engine that
// steps every f.stepTime.
func runPaced(ctx context.Context, bin string, f frontendOptions, prompts []fePrompt, rep *FrontendReport, stderr io.Writer) error {
	// Above one stream each stream has two requests in flight (measurePaced's
	// twins): the engine is sized for both.
	st, err := startStack(ctx, bin, "null:"+f.stepTime.String(), 2*len(prompts), f.ttftGen, stderr)
	if err != nil {
		return err
	}
	defer st.close()
	st.jitter = f.stepTime
	rep.PacedEngine = st.args(st.engineArgs)
	rep.StepTimeMs = float64(f.stepTime.Microseconds()) / 1e3
	rep.TTFTGenTokens, rep.TTFTRequests = f.ttftGen, f.ttftRequests
	for i := range rep.Rows {
		r := &rep.Rows[i]
		m, err := st.measurePaced(ctx, prompts[:r.Streams], f.ttftRequests, f.ttftGen)
		if err != nil {
			return fmt.Errorf("frontend paced, %d streams: %w", r.Streams, err)
		}
		r.Paced = &m
		pair := ""
		if m.Paired {
			pair = fmt.Sprintf("; per pair p50 %s mean %s", fmtSignedUS(m.PairAddedUs.P50), fmtSignedUS(m.PairAddedUs.Mean))
		}
		fmt.Fprintf(stderr, "frontend paced %s S=%-4d TTFT p50 %s p99 %s, TTFB p50 %s (direct %s, %s; frontend's mean %s): added p50 %s p99 %s%s\n", f.stepTime, r.Streams,
			fmtUS(m.TTFT.P50), fmtUS(m.TTFT.P99), fmtUS(m.TTFB.P50), fmtUS(m.DirectTTFT.P50), fmtUS(m.DirectTTFT.P99), fmtUS(m.FrontendTTFTus),
			fmtSignedUS(m.AddedTTFTus.P50), fmtSignedUS(m.AddedTTFTus.P99), pair)
	}
	return nil
}

// frontendTargets checks tok/s per core at every stream count ≥
// targetFEStreams and the added TTFT p50 at targetFEStreams.
func frontendTargets(rows []FrontendRow) []Target {
	var out []Target
	for _, r := range rows {
		if r.Streams >= targetFEStreams {
			out = append(out, Target{Name: fmt.Sprintf("streamed tok/s per frontend core, %d streams", r.Streams),
				Want: "≥ " + strconv.Itoa(wantTokSPerCore), Value: r.TokSPerCore, Met: r.TokSPerCore >= wantTokSPerCore})
		}
		if r.Streams == targetFEStreams && r.Paced != nil {
			ms := r.Paced.AddedTTFTus.P50 / 1e3
			out = append(out, Target{Name: fmt.Sprintf("added TTFT p50 (ms), %d streams, paced engine", r.Streams),
				Want: fmt.Sprintf("< %g", wantAddedTTFTms), Value: ms, Met: ms < wantAddedTTFTms})
		}
	}
	return out
}

// writeFrontend writes frontend-DATE.json and the doc's frontend section.
func writeFrontend(rep *FrontendReport, o options, stderr io.Writer) error {
	if err := writePhase(o, stderr, "frontend", rep.Date, rep, func(doc, rel string) string {
		return spliceFrontend(doc, renderFrontend(rep, rel))
	}); err != nil {
		return err
	}
	for _, t := range rep.Targets {
		fmt.Fprintf(stderr, "target %-60s want %s got %.2f %s\n", t.Name, t.Want, t.Value, metWord(t.Met))
	}
	return nil
}
