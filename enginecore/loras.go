package enginecore

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"slices"

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
	ids     map[int]string  // lora_int_id → path, as requests and add_lora named them
	pinned  map[string]bool // paths pin_lora keeps loaded
	tick    uint64
	log     *slog.Logger
	refused string
}

type loraEntry struct {
	a        *lora.Adapter
	lastUsed uint64
}

func newLoras(cfg Config, be runner.Backend, log *slog.Logger) *loras {
	c := &loras{max: cmp.Or(max(cfg.MaxLoRAs, 0), DefaultMaxLoRAs), byPath: map[string]*loraEntry{}, ids: map[int]string{},
		pinned: map[string]bool{}, log: log, load: cfg.LoadLoRA}
	if c.load == nil {
		if l, ok := backendAs[loraLoader](be); ok {
			c.load = func(path string) (*lora.Adapter, error) { return l.LoadLoRA(path, cfg.MaxLoRARank) }
		} else {
			c.refused = "this engine's device applies no LoRA adapters (the CPU backend does)"
		}
	}
	return c
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
		if r.ID > 0 {
			c.ids[r.ID] = r.Path
		}
		uses = append(uses, lora.Use{Adapter: e.a, Scale: float32(r.Scale)})
	}
	return uses, nil
}

// evict drops the least recently used adapters past max, never a
// pinned one.
func (c *loras) evict() {
	for len(c.byPath) > c.max {
		oldest, at := "", uint64(math.MaxUint64)
		for p, e := range c.byPath {
			if e.lastUsed < at && !c.pinned[p] {
				oldest, at = p, e.lastUsed
			}
		}
		if oldest == "" {
			return // all pinned
		}
		delete(c.byPath, oldest)
	}
}

// The LoRA utilities, vLLM's EngineCore methods of the same names (a
// vLLM frontend calls them; Tandem's frontends name adapters per
// request): add_lora [lora] loads an adapter ahead of its requests, where
// lora is vLLM's LoRARequest array [lora_name, lora_int_id, lora_path,
// …] or wire.LoRARequest's map; list_loras [] lists the ids of the
// adapters loaded; remove_lora [id] and pin_lora [id] drop one or keep
// it loaded past --max-cpu-loras. Each answers true when it did.
func (c *loras) call(method string, args []any) (any, error) {
	switch method {
	case "add_lora":
		if len(args) != 1 {
			return nil, fmt.Errorf("add_lora takes one LoRA request")
		}
		r, err := loraArg(args[0])
		if err != nil {
			return nil, fmt.Errorf("add_lora: %w", err)
		}
		if _, err := c.resolve([]wire.LoRARequest{r}); err != nil {
			return nil, err
		}
		return true, nil
	case "list_loras":
		ids := []int{}
		for id, p := range c.ids {
			if c.byPath[p] != nil {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids, nil
	case "remove_lora", "pin_lora":
		id, ok := 0, len(args) == 1
		if ok {
			id, ok = intArg(args[0])
		}
		if !ok {
			return nil, fmt.Errorf("%s takes one adapter id", method)
		}
		p, known := c.ids[id]
		if !known || c.byPath[p] == nil {
			return false, nil
		}
		if method == "pin_lora" {
			c.pinned[p] = true
		} else {
			delete(c.byPath, p)
			delete(c.pinned, p)
		}
		return true, nil
	}
	return nil, fmt.Errorf("unknown utility method %q", method)
}

// loraArg reads one adapter of a utility call: vLLM's LoRARequest array
// or wire.LoRARequest's map (scale 1 unless given).
func loraArg(a any) (wire.LoRARequest, error) {
	r := wire.LoRARequest{Scale: 1}
	var ok bool
	switch v := a.(type) {
	case []any:
		if len(v) < 3 {
			return r, fmt.Errorf("a LoRA request [lora_name, lora_int_id, lora_path, …] of %d fields", len(v))
		}
		r.Name, ok = v[0].(string)
		if ok {
			r.ID, ok = intArg(v[1])
		}
		if ok {
			r.Path, ok = v[2].(string)
		}
	case map[string]any:
		r.Name, ok = v["lora_name"].(string)
		if ok {
			r.ID, ok = intArg(v["lora_int_id"])
		}
		if ok {
			r.Path, ok = v["lora_path"].(string)
		}
	}
	if !ok || r.ID < 1 || r.Path == "" {
		return r, fmt.Errorf("want a LoRA request with lora_name, lora_int_id ≥ 1 and lora_path, got %v", a)
	}
	return r, nil
}
