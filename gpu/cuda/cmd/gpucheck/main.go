//go:build cuda

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/gpu/cuda"
	"github.com/tandem-llm/tandem/wire/gguf"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gpucheck bench|shrink …")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "bench":
		err = bench(ctx, os.Args[2:])
	case "shrink":
		err = shrink(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpucheck:", err)
		os.Exit(1)
	}
}

// Model shapes for the decode suite (weights are random bf16: speed does
// not depend on their values).
var (
	smolLM2 = model.Config{Name: "SmolLM2-135M", Arch: "llama", VocabSize: 49152, Dim: 576, NumLayers: 30, NumHeads: 9,
		NumKVHeads: 3, HeadDim: 64, FFNDim: 1536, RopeTheta: 100000, NormEps: 1e-5, MaxContextLen: 8192, TiedEmbeddings: true}
	llama1B = model.Config{Name: "Llama-3.2-1B", Arch: "llama", VocabSize: 128256, Dim: 2048, NumLayers: 16, NumHeads: 32,
		NumKVHeads: 8, HeadDim: 64, FFNDim: 8192, RopeTheta: 500000, NormEps: 1e-5, MaxContextLen: 8192, TiedEmbeddings: true}
)

func bench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gpucheck bench", flag.ContinueOnError)
	out := fs.String("out", ".", "directory for bench.json and summary.md")
	suites := fs.String("suites", "ceilings,kernels,decode,prefill", "suites to run")
	batches := fs.String("batches", "1,32,128", "decode batch sizes")
	context := fs.Int("context", 512, "tokens of context per sequence when decode is timed")
	steps := fs.Int("steps", 32, "timed decode steps per batch size")
	prompt := fs.Int("prompt", 2048, "prefill's prompt, tokens")
	device := fs.Int("device", 0, "CUDA device")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var bs []int
	for _, f := range strings.Split(*batches, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("-batches: %w", err)
		}
		bs = append(bs, n)
	}
	if ok, why := cuda.Available(); !ok {
		return errors.New(why)
	}
	o := cuda.BenchOptions{Device: *device, Suites: strings.Split(*suites, ","), Batches: bs, Context: *context, Steps: *steps, Prompt: *prompt,
		Log: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }}
	if strings.Contains(*suites, "decode") || strings.Contains(*suites, "prefill") {
		for i, cfg := range []model.Config{smolLM2, llama1B} {
			start := time.Now()
			w, err := cuda.RandomBF16(cfg, uint64(i+1))
			if err != nil {
				return err
			}
			fmt.Printf("random weights for %s in %v\n", cfg.Name, time.Since(start).Round(time.Millisecond))
			o.Models = append(o.Models, cuda.BenchModel{Name: cfg.Name + " (random bf16)", Cfg: cfg, W: w})
		}
	}
	rep, err := cuda.RunBench(ctx, o)
	if werr := write(*out, rep, o); werr != nil && err == nil {
		err = werr
	}
	return err
}

// write saves the report as JSON and as a Markdown summary.
func write(dir string, rep cuda.BenchReport, o cuda.BenchOptions) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(struct {
		Date    string `json:"date"`
		Context int    `json:"decode_context"`
		cuda.BenchReport
	}{time.Now().UTC().Format(time.RFC3339), o.Context, rep}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), js, 0o644); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GPU check %s on %s (%s, %d SMs), driver CUDA %d.%d, kernels: %s\n\n", time.Now().UTC().Format("2006-01-02"),
		rep.Device, rep.Compute, rep.SMs, rep.DriverVersion/1000, rep.DriverVersion%1000/10, rep.Kernels)
	fmt.Fprintln(&b, "| suite | benchmark | result | ms | notes |")
	fmt.Fprintln(&b, "|---|---|---:|---:|---|")
	for _, r := range rep.Results {
		note := ""
		if r.Suite == "decode" {
			note = fmt.Sprintf("%.0f%% of the bandwidth bound (%.3f ms); %.3f ms/step with one logits row (%.0f%%)",
				100*r.Extra["fraction_of_bound"], r.Extra["bound_ms"], r.Extra["ms_step_one_logits_row"], 100*r.Extra["fraction_of_bound_one"])
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f %s | %.3f | %s |\n", r.Suite, r.Name, r.Value, r.Unit, r.Median, note)
	}
	fmt.Print("\n" + b.String())
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(b.String()), 0o644)
}

// shrink writes IN with only its first N layers (every other tensor and
// the metadata kept, but for the tokenizer's vocabulary arrays unless
// -keep-vocab; token_embd in Q4_0 with -embed-q4), updating
// <arch>.block_count.
func shrink(args []string) error {
	fs := flag.NewFlagSet("gpucheck shrink", flag.ContinueOnError)
	layers := fs.Int("layers", 8, "layers to keep")
	keepVocab := fs.Bool("keep-vocab", false, "keep the tokenizer's vocabulary arrays (the engine's loader does not need them)")
	embedQ4 := fs.Bool("embed-q4", false, "re-quantize token_embd to Q4_0 (half of Q8_0's bytes: more layers fit the transfer; the tied LM head reads it too)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New("usage: gpucheck shrink -layers N IN.gguf OUT.gguf")
	}
	f, err := gguf.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	arch, _ := f.String("general.architecture")
	w := gguf.NewWriter()
	for _, k := range f.Keys() {
		v, _ := f.KV(k)
		switch {
		case k == arch+".block_count":
			v = uint32(*layers)
		case !*keepVocab && (k == "tokenizer.ggml.tokens" || k == "tokenizer.ggml.merges" ||
			k == "tokenizer.ggml.token_type" || k == "tokenizer.ggml.scores"):
			continue
		}
		if err := w.AddKV(k, v); err != nil {
			return err
		}
	}
	for _, ti := range f.Tensors() {
		var n int
		if _, err := fmt.Sscanf(ti.Name, "blk.%d.", &n); err == nil && n >= *layers {
			continue
		}
		data, err := f.TensorData(ti)
		if err != nil {
			return err
		}
		typ := ti.Type
		if *embedQ4 && ti.Name == "token_embd.weight" && model.DType(typ) != model.Q4_0 {
			if data, err = requantize(model.DType(typ), data, ti.Shape, model.Q4_0); err != nil {
				return fmt.Errorf("%s: %w", ti.Name, err)
			}
			typ = uint32(model.Q4_0)
		}
		if err := w.AddTensor(ti.Name, typ, ti.Shape, data); err != nil {
			return err
		}
	}
	out, err := os.Create(fs.Arg(1))
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// requantize decodes data (typ, shape in ggml order) and encodes it in
// to, row by row.
func requantize(typ model.DType, data []byte, shape []uint64, to model.DType) ([]byte, error) {
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	v := make([]float32, n)
	if err := model.Dequantize(typ, data, v); err != nil {
		return nil, err
	}
	return model.Quantize(to, v)
}
