package inproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"

	"github.com/tandem-llm/tandem/enginecore"
	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/wire/zmq"
)

// Config is an in-process engine's settings; zero values take the
// defaults of `tandem engine`'s flags of the same names.
type Config struct {
	Model               string        // a GGUF file, a Hugging Face directory, or "dummy"
	ServedModelName     string        // default: the model's base name
	Threads             int           // CPU threads for the forward pass; default every CPU
	Precision           cpu.Precision // --cpu-precision; default prompt
	Rank                int           // data-parallel rank
	MaxModelLen         int           // tokens per request; default min(4096, the model's context)
	MaxNumSeqs          int           // requests running at once; default 256
	MaxNumBatchedTokens int           // tokens per step; default 2048
	BlockSize           int           // tokens per KV block; default 16
	// KVCacheBytes is the KV cache's size; default 1 GiB, capped at what
	// MaxNumSeqs requests of MaxModelLen tokens can use.
	KVCacheBytes         int64
	DisablePrefixCaching bool
	MaxLogprobs          *int         // --max-logprobs: logprobs per token at most, -1 = the vocabulary; default 20
	WarmUpTokens         int          // prompt tokens of the warm-up step before serving; default 64, negative for none
	Logger               *slog.Logger // default: discard
}

// Engine is a running in-process engine core.
type Engine struct {
	endpoint string
	dir      string
	cancel   context.CancelFunc
	done     chan error // Serve's result, then closed
	closeErr error
	closed   bool
}

// Start loads cfg.Model, warms the engine up and serves it until Close or
// until ctx ends.
func Start(ctx context.Context, cfg Config) (*Engine, error) {
	cfg = withDefaults(cfg)
	log := cfg.Logger
	served, err := loader.Open(cfg.Model, cfg.MaxModelLen)
	if err != nil {
		return nil, fmt.Errorf("inproc: %w", err)
	}
	release := served.Release
	be, err := cpu.New(served.Config, served.Weights, cfg.Threads)
	if err != nil {
		if release != nil {
			_ = release()
		}
		return nil, fmt.Errorf("inproc: %w", err)
	}
	be.SetPrecision(cfg.Precision)
	cleanup := func() {
		_ = be.Close()
		if release != nil {
			_ = release()
		}
	}
	info := be.Model()
	maxLen := min(cfg.MaxModelLen, info.MaxContextLen)
	perBlock := be.KVBytesPerBlock(cfg.BlockSize)
	useful := (maxLen + cfg.BlockSize - 1) / cfg.BlockSize * cfg.MaxNumSeqs
	numBlocks := min(int(cfg.KVCacheBytes/perBlock), useful)
	if numBlocks < 1 {
		cleanup()
		return nil, fmt.Errorf("inproc: KVCacheBytes %d holds no KV block of %d bytes", cfg.KVCacheBytes, perBlock)
	}
	core, err := enginecore.New(enginecore.Config{
		EngineIndex:         cfg.Rank,
		Model:               cfg.Model,
		ServedModelName:     cfg.ServedModelName,
		MaxModelLen:         maxLen,
		BlockSize:           cfg.BlockSize,
		NumBlocks:           numBlocks,
		MaxNumSeqs:          cfg.MaxNumSeqs,
		MaxNumBatchedTokens: cfg.MaxNumBatchedTokens,
		EnablePrefixCaching: !cfg.DisablePrefixCaching,
		MaxLogprobs:         cfg.MaxLogprobs,
		Vocab:               served.Vocab,
		Version:             "inproc",
		Logger:              log,
	}, be)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("inproc: %w", err)
	}
	if cfg.WarmUpTokens > 0 {
		if _, err := core.WarmUp(ctx, cfg.WarmUpTokens); err != nil {
			cleanup()
			return nil, fmt.Errorf("inproc: warm-up: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "tandem-inproc-") // mode 0700
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("inproc: %w", err)
	}
	router, err := zmq.BindRouter("ipc://" + filepath.Join(dir, "engine.sock"))
	if err != nil {
		cleanup()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("inproc: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	e := &Engine{endpoint: router.Endpoint(), dir: dir, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := core.Serve(ctx, router, nil)
		_ = router.Close()
		cleanup()
		_ = os.RemoveAll(dir)
		e.done <- err
		close(e.done)
	}()
	log.Info("in-process engine serving", "endpoint", e.endpoint, "model", cfg.Model, "blocks", numBlocks, "threads", cfg.Threads)
	return e, nil
}

// Endpoint is the engine's ROUTER endpoint, for engineclient.Config.
func (e *Engine) Endpoint() string { return e.endpoint }

// Close stops the engine (frontends are told it is shutting down), frees
// the model and removes the socket. It returns the engine's failure, if
// it failed before.
func (e *Engine) Close() error {
	if !e.closed {
		e.closed = true
		e.cancel()
		if err := <-e.done; err != nil && !errors.Is(err, context.Canceled) {
			e.closeErr = err
		}
	}
	return e.closeErr
}

// Done is closed once the engine stopped (after Close, or when its
// context ended or it failed).
func (e *Engine) Done() <-chan error { return e.done }

func withDefaults(c Config) Config {
	if c.Model == "" {
		c.Model = "dummy"
	}
	if c.Threads <= 0 {
		c.Threads = runtime.NumCPU()
	}
	if c.MaxModelLen <= 0 {
		c.MaxModelLen = 4096
	}
	if c.MaxNumSeqs <= 0 {
		c.MaxNumSeqs = 256
	}
	if c.MaxNumBatchedTokens <= 0 {
		c.MaxNumBatchedTokens = 2048
	}
	if c.BlockSize <= 0 {
		c.BlockSize = 16
	}
	if c.KVCacheBytes <= 0 {
		c.KVCacheBytes = 1 << 30
	}
	if c.WarmUpTokens == 0 {
		c.WarmUpTokens = 64
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}
