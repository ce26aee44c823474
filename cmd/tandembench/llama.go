package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrMissing is returned when the model or the llama.cpp bench binary is
// not where the flags say.
var ErrMissing = errors.New("tandembench: missing input")

// llamaOutput is bench.c's JSON object (the fields we read).
type llamaOutput struct {
	Engine      string    `json:"engine"`
	Build       string    `json:"build"`
	BackendDir  string    `json:"backend_dir"`
	Threads     int       `json:"threads"`
	Streams     int       `json:"streams"`
	Prompt      int       `json:"prompt_tokens"`
	Gen         int       `json:"gen_tokens"`
	KVType      string    `json:"kv_type"`
	FlashAttn   bool      `json:"flash_attn"`
	UBatch      int       `json:"n_ubatch"`
	PrefillTokS []float64 `json:"prefill_tok_s"`
	DecodeTokS  []float64 `json:"decode_tok_s"`
	Tokens      []int32   `json:"tokens"`
	CPUVariant  string    `json:"cpu_variant"`
	SystemInfo  string    `json:"system_info"`
	WeightBufs  []string  `json:"weight_buffers"`
	VmHWMKiB    int64     `json:"vm_hwm_kib"`
	RssAnonKiB  int64     `json:"rss_anon_kib"`
	RssFileKiB  int64     `json:"rss_file_kib"`
}

// llamaBench runs one llama.cpp bench binary.
type llamaBench struct {
	name   string // the column: "llama.cpp prebuilt" or "llama.cpp native"
	bin    string // path to .cache/llamabench or .cache/llamabench-native
	model  string
	kvType string // f16 or f32
	ubatch int
	tmp    string // directory for prompt files
	// backendDir overrides the directory the prebuilt libraries load
	// their CPU variant from ("" = bench.c's own; see isaBackend).
	backendDir string
}

// measure runs bin for cfg with prompts passed as a file, and returns its
// measure and settings.
func (l *llamaBench) measure(ctx context.Context, cfg Config, prompts [][]int32) (Measure, Setup, error) {
	out, err := l.output(ctx, cfg, prompts)
	if err != nil {
		return Measure{}, Setup{}, err
	}
	return parseLlama(out, cfg)
}

// run is measure's whole output, with extra flags for bench.c.
func (l *llamaBench) run(ctx context.Context, cfg Config, prompts [][]int32, extra ...string) (llamaOutput, error) {
	data, err := l.output(ctx, cfg, prompts, extra...)
	if err != nil {
		return llamaOutput{}, err
	}
	var o llamaOutput
	if err := json.Unmarshal(data, &o); err != nil {
		return llamaOutput{}, fmt.Errorf("%s: decode output: %w", l.name, err)
	}
	return o, nil
}

// output runs bin for cfg and returns its stdout.
func (l *llamaBench) output(ctx context.Context, cfg Config, prompts [][]int32, extra ...string) ([]byte, error) {
	pf := filepath.Join(l.tmp, fmt.Sprintf("prompt-s%d-p%d.txt", cfg.Streams, cfg.PromptTokens))
	if err := writePromptFile(pf, prompts); err != nil {
		return nil, err
	}
	args := []string{
		"--model", l.model,
		"--threads", strconv.Itoa(cfg.Threads),
		"--streams", strconv.Itoa(cfg.Streams),
		"--prompt-tokens", strconv.Itoa(cfg.PromptTokens),
		"--gen-tokens", strconv.Itoa(cfg.GenTokens),
		"--reps", strconv.Itoa(cfg.Reps),
		"--prompt-file", pf,
		"--kv-type", l.kvType,
		"--ubatch", strconv.Itoa(l.ubatch),
	}
	if l.backendDir != "" {
		args = append(args, "--backend-dir", l.backendDir)
	}
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, l.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %s %s: %w: %s", l.name, l.bin, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// probe runs bin once on a tiny configuration for its setup: which build
// and CPU variant it runs, before anything is measured.
func (l *llamaBench) probe(ctx context.Context) (Setup, error) {
	cfg := Config{Kind: kindSingle, Threads: 1, Streams: 1, PromptTokens: 8, GenTokens: 1, Reps: 1}
	_, s, err := l.measure(ctx, cfg, promptIDs(1, 1, cfg.PromptTokens, 100)) // ids < 100 suit any vocabulary
	return s, err
}

// parseLlama decodes bench.c's output and checks it answers cfg.
func parseLlama(data []byte, cfg Config) (Measure, Setup, error) {
	var o llamaOutput
	if err := json.Unmarshal(data, &o); err != nil {
		return Measure{}, Setup{}, fmt.Errorf("llama.cpp: decode output: %w", err)
	}
	switch {
	case o.Engine != "llama.cpp":
		return Measure{}, Setup{}, fmt.Errorf("llama.cpp: output names engine %q", o.Engine)
	case o.Threads != cfg.Threads || o.Streams != cfg.Streams || o.Prompt != cfg.PromptTokens || o.Gen != cfg.GenTokens:
		return Measure{}, Setup{}, fmt.Errorf("llama.cpp: output is for threads=%d streams=%d P=%d D=%d, want %v", o.Threads, o.Streams, o.Prompt, o.Gen, cfg)
	case len(o.PrefillTokS) != cfg.Reps || len(o.DecodeTokS) != cfg.Reps:
		return Measure{}, Setup{}, fmt.Errorf("llama.cpp: %d/%d repetitions, want %d", len(o.PrefillTokS), len(o.DecodeTokS), cfg.Reps)
	}
	m := Measure{PrefillTokS: o.PrefillTokS, DecodeTokS: o.DecodeTokS, Tokens: o.Tokens}
	m.summarize()
	return m, Setup{
		KVType: o.KVType, FlashAttn: o.FlashAttn, UBatch: o.UBatch,
		Build: o.Build, BackendDir: o.BackendDir, CPUVariant: o.CPUVariant,
		SystemInfo: strings.TrimSpace(o.SystemInfo), WeightBuffers: o.WeightBufs,
	}, nil
}

// checkFile fails with ErrMissing and hint when path does not exist.
func checkFile(what, path, hint string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%w: %s %s not found (%s)", ErrMissing, what, path, hint)
	}
	return nil
}

// llamaSides is the llama.cpp side of a run, scratch files in tmp: the
// prebuilt libraries, then the native build where there is one; missing
// says why there is not.
func llamaSides(o options, tmp string) (llamas []*llamaBench, missing string) {
	llamas = []*llamaBench{{name: "llama.cpp prebuilt", bin: o.llamaBin, model: o.model, kvType: o.kvType, ubatch: o.ubatch, tmp: tmp}}
	if missing = nativeMissing(o.nativeBin); missing != "" {
		return llamas, missing
	}
	return append(llamas, &llamaBench{name: "llama.cpp native", bin: o.nativeBin, model: o.model, kvType: o.kvType, ubatch: o.ubatch, tmp: tmp}), ""
}
