package enginecore

import (
	"fmt"
	"log/slog"
	"math"

	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/wire"
)

// DefaultMaxLoRAs is how many LoRA adapters an engine keeps loaded when
// Config.MaxLoRAs is 0 (vLLM's --max-cpu-loras defaults to --max-loras).
const DefaultMaxLoRAs = 8

// loraLoader is a backend that applies LoRA adapters: it loads one for
// its model, refusing ranks above maxRank (0: any).
type loraLoader interface {
	LoadLoRA(path string, maxRank int) (*lora.Adapter, error)
}

// loras keeps the adapters requests named, by file, the least recently
// used dropped past max. A dropped adapter lives on in the requests
// that hold it, so memory is bounded by max plus the running requests'.
type loras struct {
	load    func(path string) (*lora.Adapter, error) // nil: requests with adapters are refused
	max     int
	byPath  map[string]*loraEntry
	tick    uint64
	log     *slog.Logger
	refused string
}

type loraEntry struct {
	a        *lora.Adapter
	lastUsed uint64
}

func newLoras(cfg Config, be any, log *slog.Logger) *loras {
	c := &loras{max: cmpOr(cfg.MaxLoRAs, DefaultMaxLoRAs), byPath: map[string]*loraEntry{}, log: log}
	switch {
	case cfg.LoadLoRA != nil:
		c.load = cfg.LoadLoRA
	default:
		for {
			u, ok := be.(interface{ Unwrap() runner.Backend })
			if _, loads := be.(loraLoader); loads || !ok {
				break
			}
			be = u.Unwrap() // a shell's wrapper (cmd/tandem's closer) around the backend
		}
		if l, ok := be.(loraLoader); ok {
			c.load = func(path string) (*lora.Adapter, error) { return l.LoadLoRA(path, cfg.MaxLoRARank) }
		} else {
			c.refused = "this engine's device applies no LoRA adapters (the CPU backend does)"
		}
	}
	return c
}

func cmpOr(a, b int) int { // cmp.Or for counts: a unless it is 0 or negative
	if a > 0 {
		return a
	}
	return b
}

// resolve loads (or finds) each adapter of reqs; an error says why the
// request cannot run.
func (c *loras) resolve(reqs []wire.LoRARequest) ([]lora.Use, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	if c.load == nil {
		return nil, fmt.Errorf("LoRA adapter %q: %s", reqs[0].Name, c.refused)
	}
	uses := make([]lora.Use, 0, len(reqs))
	for _, r := range reqs {
		if math.IsNaN(r.Scale) || math.IsInf(r.Scale, 0) || math.Abs(r.Scale) > 1e6 {
			return nil, fmt.Errorf("LoRA adapter %q: scale %v", r.Name, r.Scale)
		}
		if r.Path == "" {
			return nil, fmt.Errorf("LoRA adapter %q: no lora_path", r.Name)
		}
		c.tick++
		e, ok := c.byPath[r.Path]
		if !ok {
			a, err := c.load(r.Path)
			if err != nil {
				return nil, fmt.Errorf("LoRA adapter %q: %w", r.Name, err)
			}
			c.log.Info("loaded LoRA adapter", "name", r.Name, "path", r.Path, "tensors", len(a.Tensor), "alpha", a.Alpha,
				"MiB", fmt.Sprintf("%.1f", float64(4*a.Floats)/(1<<20)))
			e = &loraEntry{a: a, lastUsed: c.tick}
			c.byPath[r.Path] = e
			c.evict()
		}
		e.lastUsed = c.tick
		uses = append(uses, lora.Use{Adapter: e.a, Scale: float32(r.Scale)})
	}
	return uses, nil
}

// evict drops the least recently used adapters past max.
func (c *loras) evict() {
	for len(c.byPath) > c.max {
		oldest, at := "", uint64(math.MaxUint64)
		for p, e := range c.byPath {
			if e.lastUsed < at {
				oldest, at = p, e.lastUsed
			}
		}
		delete(c.byPath, oldest)
	}
}
