package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/kvcache"
	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/enginecore/sched"
	"github.com/tandem-llm/tandem/wire"
)

// warmupDecodeSteps is how many decode steps a warm-up runs (as bench.c).
const warmupDecodeSteps = 4

// tandem is Tandem's CPU engine loaded with one thread count.
type tandem struct {
	be        *cpu.Backend
	info      runner.ModelInfo
	threads   int
	blockSize int // B, tokens per KV block
	numBlocks int
	release   func() error // unmaps the model file
}

// loadTandem loads the model at path and builds the CPU backend with
// threads threads and a KV pool of numTokens tokens in blocks of blockSize.
func loadTandem(path string, threads, blockSize, numTokens int, prec cpu.Precision) (*tandem, error) {
	m, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("tandem: %w", err)
	}
	w, err := model.FromTensors(m.Config, m.Tensors)
	if err != nil {
		_ = m.Close()
		return nil, fmt.Errorf("tandem: %s: %w", path, err)
	}
	be, err := cpu.New(m.Config, w, threads)
	if err != nil {
		_ = m.Close()
		return nil, fmt.Errorf("tandem: %w", err)
	}
	be.SetPrecision(prec)
	numBlocks := (numTokens + blockSize - 1) / blockSize
	if err := be.AllocateKV(numBlocks, blockSize); err != nil {
		_ = be.Close()
		_ = m.Close()
		return nil, fmt.Errorf("tandem: %w", err)
	}
	return &tandem{be: be, info: be.Model(), threads: threads, blockSize: blockSize, numBlocks: numBlocks, release: m.Close}, nil
}

// Close releases the backend and the model file.
func (t *tandem) Close() error {
	return errors.Join(t.be.Close(), t.release())
}

// kvTokens is the KV pool size, in tokens, that cfg needs: every stream's
// prompt and output, each rounded up to whole blocks.
func kvTokens(cfg Config, blockSize int) int {
	perStream := (cfg.PromptTokens + cfg.GenTokens + 2 + blockSize - 1) / blockSize * blockSize
	return cfg.Streams * perStream
}

// measure runs cfg: a warm-up, then cfg.Reps measured repetitions, with
// GOMAXPROCS set to the engine's thread count meanwhile.
func (t *tandem) measure(ctx context.Context, cfg Config, prompts [][]int32) (Measure, error) {
	if cfg.Threads != t.threads {
		return Measure{}, fmt.Errorf("tandem: config wants %d threads, engine has %d", cfg.Threads, t.threads)
	}
	if need := kvTokens(cfg, t.blockSize); need > t.numBlocks*t.blockSize {
		return Measure{}, fmt.Errorf("tandem: %v needs %d KV tokens, the pool holds %d", cfg, need, t.numBlocks*t.blockSize)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(t.threads))
	var m Measure
	for rep := range cfg.Reps + 1 { // rep 0 is the warm-up
		steps := cfg.GenTokens
		if rep == 0 {
			steps = min(steps, warmupDecodeSteps)
		}
		r, err := t.once(ctx, cfg, prompts, steps)
		if err != nil {
			return Measure{}, err
		}
		if rep == 0 {
			continue
		}
		m.PrefillTokS = append(m.PrefillTokS, float64(r.prefillTokens)/r.prefill.Seconds())
		m.DecodeTokS = append(m.DecodeTokS, float64(r.decodeTokens)/r.decode.Seconds())
		m.Tokens = r.tokens
	}
	m.summarize()
	return m, nil
}

// onceResult is what one repetition measured.
type onceResult struct {
	prefill, decode             time.Duration
	prefillTokens, decodeTokens int
	tokens                      []int32 // stream 0's output
}

// once serves cfg.Streams requests (prompts[s], greedy, ignore_eos,
// decodeSteps+1 output tokens: the first comes from the prefill step)
// through a fresh scheduler, KV manager and runner, one step at a time as
// the engine core's step does, and times the steps. A step that computes
// any prompt token counts as prefill; the token budget fits every prompt
// in one step, so prefill and decode never share a step.
func (t *tandem) once(ctx context.Context, cfg Config, prompts [][]int32, decodeSteps int) (onceResult, error) {
	kv, err := kvcache.New(kvcache.Config{NumBlocks: t.numBlocks, BlockSize: t.blockSize})
	if err != nil {
		return onceResult{}, fmt.Errorf("tandem: %w", err)
	}
	maxLen := cfg.PromptTokens + decodeSteps + 2
	s := sched.New(sched.Config{
		MaxNumSeqs:          cfg.Streams,
		MaxNumBatchedTokens: max(2048, cfg.Streams*cfg.PromptTokens),
		MaxModelLen:         maxLen,
		BlockSize:           t.blockSize,
	}, kv)
	run := runner.New(t.be, t.blockSize)
	params := wire.DefaultSamplingParams()
	params.Temperature = 0 // greedy
	params.IgnoreEOS = true
	params.MaxTokens = decodeSteps + 1
	for i := range cfg.Streams {
		req := sched.NewRequest(&wire.EngineCoreRequest{
			RequestID:      fmt.Sprintf("bench-%d", i),
			PromptTokenIDs: prompts[i],
			SamplingParams: params,
		}, "tandembench", t.info.EOSTokenIDs)
		if err := s.Add(req); err != nil {
			return onceResult{}, fmt.Errorf("tandem: %w", err)
		}
	}
	var res onceResult
	for s.HasWork() {
		start := time.Now()
		b := s.Schedule()
		if len(b.Items) == 0 {
			return onceResult{}, fmt.Errorf("tandem: %v: the scheduler has work but scheduled nothing (KV pool too small?)", cfg)
		}
		out, err := run.Execute(ctx, b)
		if err != nil {
			return onceResult{}, fmt.Errorf("tandem: step %d: %w", b.StepCounter, err)
		}
		outs := s.Update(b, out)
		took := time.Since(start)
		prefill := false
		for _, it := range b.Items {
			if it.Start < it.NumPrompt {
				prefill = true
				res.prefillTokens += it.Len
			}
		}
		if prefill {
			res.prefill += took
		} else {
			res.decode += took
			res.decodeTokens += len(b.Items)
		}
		for _, o := range outs {
			if o.Req.ID == "bench-0" {
				res.tokens = append(res.tokens, o.NewTokens...)
			}
		}
	}
	if want := cfg.Streams * decodeSteps; res.decodeTokens != want {
		return onceResult{}, fmt.Errorf("tandem: %v: %d decode tokens, want %d", cfg, res.decodeTokens, want)
	}
	return res, nil
}
