package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/tandem-llm/tandem/enginecore"
	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
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
	numBlocks := (numTokens + blockSize - 1) / blockSize // each repetition's Engine allocates the pool
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
// through a fresh enginecore.Engine, the engine core the server runs,
// one Step at a time, and times the steps. A step that brings a stream
// its first token is its prefill; the token budget fits every prompt in
// one step, so prefill and decode never share a step.
func (t *tandem) once(ctx context.Context, cfg Config, prompts [][]int32, decodeSteps int) (onceResult, error) {
	const client = "tandembench"
	e, err := enginecore.NewEngine(enginecore.Config{
		MaxModelLen:         cfg.PromptTokens + decodeSteps + 2,
		BlockSize:           t.blockSize,
		NumBlocks:           t.numBlocks,
		MaxNumSeqs:          cfg.Streams,
		MaxNumBatchedTokens: max(2048, cfg.Streams*cfg.PromptTokens),
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, t.be)
	if err != nil {
		return onceResult{}, fmt.Errorf("tandem: %w", err)
	}
	now := time.Now()
	e.Handle(now, client, &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: client})
	params := wire.DefaultSamplingParams()
	params.Temperature = 0 // greedy
	params.IgnoreEOS = true
	params.MaxTokens = decodeSteps + 1
	promptLen := map[string]int{}
	for i := range cfg.Streams {
		id := fmt.Sprintf("bench-%d", i)
		promptLen[id] = len(prompts[i])
		if outs := e.Handle(now, client, &wire.EngineCoreRequest{RequestID: id, PromptTokenIDs: prompts[i], SamplingParams: params}); len(outs) > 0 {
			return onceResult{}, fmt.Errorf("tandem: %s refused: %v", id, outs[0].Payload.(*wire.EngineCoreOutputs).Outputs[0].StopReason)
		}
	}
	var res onceResult
	started := map[string]bool{}
	for e.HasWork() {
		start := time.Now()
		outs, err := e.Step(ctx, start)
		if err != nil {
			return onceResult{}, fmt.Errorf("tandem: %w", err)
		}
		took := time.Since(start)
		if len(outs) == 0 {
			return onceResult{}, fmt.Errorf("tandem: %v: the engine has work but a step produced nothing (KV pool too small?)", cfg)
		}
		prefill, decoded := false, 0
		for _, o := range outs {
			for _, eo := range o.Payload.(*wire.EngineCoreOutputs).Outputs {
				if !started[eo.RequestID] {
					started[eo.RequestID], prefill = true, true
					res.prefillTokens += promptLen[eo.RequestID]
				} else {
					decoded++
				}
				if eo.RequestID == "bench-0" {
					res.tokens = append(res.tokens, eo.NewTokenIDs...)
				}
			}
		}
		if prefill {
			res.prefill += took
		} else {
			res.decode += took
			res.decodeTokens += decoded
		}
	}
	if want := cfg.Streams * decodeSteps; res.decodeTokens != want {
		return onceResult{}, fmt.Errorf("tandem: %v: %d decode tokens, want %d", cfg, res.decodeTokens, want)
	}
	return res, nil
}
