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
	"github.com/tandem-llm/tandem/enginecore/spec"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/gguf"
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
	vocab     *gguf.Vocab  // the GGUF's vocabulary, for constrained runs (nil: none)
	release   func() error // unmaps the model file
}

// variant is how one of a measurement's runs decodes: every stream
// constrained by so (nil: none), speculating with spec (nil: not), and
// sampling at temperature 1 seeded by stream when sampled (else greedy).
type variant struct {
	so      *wire.StructuredOutputs
	spec    *spec.Config
	sampled bool
}

// loadTandem loads the model at path and builds the CPU backend with
// threads threads and a KV pool of numTokens tokens in blocks of blockSize
// (packing its matrices into memory unless opts says otherwise).
func loadTandem(path string, threads, blockSize, numTokens int, prec cpu.Precision, opts ...cpu.Option) (*tandem, error) {
	m, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("tandem: %w", err)
	}
	w, err := model.FromTensors(m.Config, m.Tensors)
	if err != nil {
		_ = m.Close()
		return nil, fmt.Errorf("tandem: %s: %w", path, err)
	}
	be, err := cpu.New(m.Config, w, threads, opts...)
	if err != nil {
		_ = m.Close()
		return nil, fmt.Errorf("tandem: %w", err)
	}
	be.SetPrecision(prec)
	numBlocks := (numTokens + blockSize - 1) / blockSize // each repetition's Engine allocates the pool
	return &tandem{be: be, info: be.Model(), threads: threads, blockSize: blockSize, numBlocks: numBlocks, vocab: m.Vocab, release: m.Close}, nil
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
	ms, _, err := t.measureEach(ctx, cfg, prompts, []variant{{}})
	return ms[0], err
}

// measureEach is measure for several variants of cfg, taking turns: every
// repetition runs each variant once, so that whatever else the machine
// does meanwhile weighs on all of them alike. It also returns each
// variant's last repetition (its compile time, every stream's output).
func (t *tandem) measureEach(ctx context.Context, cfg Config, prompts [][]int32, vs []variant) ([]Measure, []onceResult, error) {
	if cfg.Threads != t.threads {
		return nil, nil, fmt.Errorf("tandem: config wants %d threads, engine has %d", cfg.Threads, t.threads)
	}
	if need := kvTokens(cfg, t.blockSize); need > t.numBlocks*t.blockSize {
		return nil, nil, fmt.Errorf("tandem: %v needs %d KV tokens, the pool holds %d", cfg, need, t.numBlocks*t.blockSize)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(t.threads))
	ms := make([]Measure, len(vs))
	last := make([]onceResult, len(vs))
	for rep := range cfg.Reps + 1 { // rep 0 is the warm-up
		steps := cfg.GenTokens
		if rep == 0 {
			steps = min(steps, warmupDecodeSteps)
		}
		for i, v := range vs {
			r, err := t.once(ctx, cfg, prompts, steps, v)
			if err != nil {
				return nil, nil, err
			}
			if rep == 0 {
				continue
			}
			m := &ms[i]
			m.PrefillTokS = append(m.PrefillTokS, float64(r.prefillTokens)/r.prefill.Seconds())
			m.DecodeTokS = append(m.DecodeTokS, float64(r.decodeTokens)/r.decode.Seconds())
			m.Tokens = r.tokens
			last[i] = r
		}
	}
	for i := range ms {
		ms[i].summarize()
	}
	return ms, last, nil
}

// onceResult is what one repetition measured.
type onceResult struct {
	prefill, decode             time.Duration
	prefillTokens, decodeTokens int
	tokens                      []int32       // stream 0's output
	compile                     time.Duration // constrained: compiling the constraint (once for all streams)
	outputs                     [][]int32     // constrained: every stream's output
	spec                        *wire.SpecDecodingStats
}

// once serves cfg.Streams requests (prompts[s], greedy, ignore_eos,
// decodeSteps+1 output tokens: the first comes from the prefill step)
// through a fresh enginecore.Engine, the engine core the server runs,
// one Step at a time, and times the steps. A step that brings a stream
// its first token is its prefill; the token budget fits every prompt in
// one step, so prefill and decode never share a step. With so, every
// stream is constrained by it (and EOS ends a stream only where so
// allows it): the constraint is compiled once, before the first step, as
// the engine's compile worker would.
func (t *tandem) once(ctx context.Context, cfg Config, prompts [][]int32, decodeSteps int, v variant) (onceResult, error) {
	so := v.so
	const client = "tandembench"
	ecfg := enginecore.Config{
		MaxModelLen:         cfg.PromptTokens + decodeSteps + 2,
		BlockSize:           t.blockSize,
		NumBlocks:           t.numBlocks,
		MaxNumSeqs:          cfg.Streams,
		MaxNumBatchedTokens: max(2048, cfg.Streams*cfg.PromptTokens),
		Speculative:         v.spec,
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if so != nil {
		if t.vocab == nil {
			return onceResult{}, errors.New("tandem: the model's GGUF has no vocabulary Tandem reads: no structured outputs")
		}
		ecfg.Vocab = t.vocab
	}
	e, err := enginecore.NewEngine(ecfg, t.be)
	if err != nil {
		return onceResult{}, fmt.Errorf("tandem: %w", err)
	}
	now := time.Now()
	e.Handle(now, client, &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: client})
	params := wire.DefaultSamplingParams()
	params.Temperature = 0 // greedy
	if v.sampled {
		params.Temperature = 1
	}
	params.IgnoreEOS = so == nil
	params.MaxTokens = decodeSteps + 1
	params.StructuredOutputs = so
	promptLen := map[string]int{}
	stream := map[string]int{}
	refused := func(outs []enginecore.Out) error {
		if len(outs) == 0 {
			return nil
		}
		o := outs[0].Payload.(*wire.EngineCoreOutputs).Outputs[0]
		return fmt.Errorf("tandem: %s refused: %v", o.RequestID, o.StopReason)
	}
	for i := range cfg.Streams {
		id := fmt.Sprintf("bench-%d", i)
		promptLen[id], stream[id] = len(prompts[i]), i
		sp := params
		if v.sampled {
			seed := int64(i)
			sp.Seed = &seed
		}
		if err := refused(e.Handle(now, client, &wire.EngineCoreRequest{RequestID: id, PromptTokenIDs: prompts[i], SamplingParams: sp})); err != nil {
			return onceResult{}, err
		}
	}
	var res onceResult
	if so != nil {
		res.outputs = make([][]int32, cfg.Streams)
	}
	for {
		j, ok := e.NextCompile()
		if !ok {
			break
		}
		start := time.Now()
		r := j.Run()
		res.compile += time.Since(start)
		if err := refused(e.Compiled(now, r)); err != nil {
			return onceResult{}, err
		}
	}
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
					decoded += len(eo.NewTokenIDs) // more than one with speculative decoding
				}
				if eo.RequestID == "bench-0" {
					res.tokens = append(res.tokens, eo.NewTokenIDs...)
				}
				if res.outputs != nil {
					i := stream[eo.RequestID]
					res.outputs[i] = append(res.outputs[i], eo.NewTokenIDs...)
				}
				if eo.FinishReason == wire.FinishError {
					return onceResult{}, fmt.Errorf("tandem: %v: %s failed: %v", cfg, eo.RequestID, eo.StopReason)
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
	res.spec = e.Load().SpecDecoding
	return res, nil
}
