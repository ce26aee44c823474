package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/frontend/server"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// loraFlags are the LoRA adapter flags a frontend reads: vLLM's
// (--enable-lora, --lora-modules) and llama-server's (--lora,
// --lora-scaled, --lora-init-without-apply). Engines read theirs in
// loraEngineFlags.
type loraFlags struct {
	enable           bool
	modules          itemList // --lora-modules: name=path or {"name", "path", "base_model_name"}
	files            itemList // --lora: paths, comma-separated
	scaled           itemList // --lora-scaled: path:scale, comma-separated
	initWithoutApply bool
}

// itemList is a repeatable flag; serve passes it on as one value, its
// items joined by newlines, which Set splits again.
type itemList []string

func (l *itemList) String() string { return strings.Join(*l, "\n") }
func (l *itemList) Set(v string) error {
	for _, s := range strings.Split(v, "\n") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// TakesMore lets --lora-modules a=/x b=/y take both, as vLLM's nargs="+".
func (l *itemList) TakesMore(arg string) bool {
	return strings.Contains(arg, "=") || strings.HasPrefix(arg, "{")
}

func (l *loraFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&l.enable, "enable-lora", false, "vLLM's flag, accepted: LoRA adapters are served whenever --lora-modules, --lora or --lora-scaled name some (docs/api.md#lora-adapters)")
	fs.Var(&l.modules, "lora-modules", "vLLM's LoRA `modules`: name=path or a JSON {\"name\", \"path\", \"base_model_name\"}, several after the flag or the flag repeated; each is a model on /v1/models that requests name to apply it (a GGUF LoRA file, llama.cpp's convert_lora_to_gguf.py format)")
	fs.Var(&l.files, "lora", "llama-server's: LoRA adapter `files` (GGUF), comma-separated or repeated, applied at scale 1 to every request that names no adapter; ids 0, 1, … on /lora-adapters")
	fs.Var(&l.scaled, "lora-scaled", "llama-server's: LoRA adapters with their global scale, `FILE:SCALE`, comma-separated or repeated")
	fs.BoolVar(&l.initWithoutApply, "lora-init-without-apply", false, "llama-server's: load --lora and --lora-scaled adapters at scale 0 (POST /lora-adapters or a request's lora list applies them)")
}

// apply sets cfg's adapters from the flags (the files checked against the
// served model's architecture, read from its file only when there are
// adapters to check: --lora*, or runtime loading), the engines' max_loras
// and runtime loading (vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING).
func (l *loraFlags) apply(cfg *server.Config, info wire.Ready, runtime bool) error {
	if len(l.modules)+len(l.files)+len(l.scaled) > 0 || runtime {
		cfg.ModelArch = modelArch(info.Model)
	}
	var err error
	cfg.LoRA, err = l.adapters(cfg.ModelArch)
	cfg.RuntimeLoRAUpdating, cfg.MaxLoRAs = runtime, info.MaxLoRAs
	return err
}

// adapters parses the flags into the server's adapters, checking each
// file is a GGUF LoRA adapter for arch ("" = any): a deterministic
// start-up error otherwise. llama-server's come first (its ids), then
// vLLM's modules.
func (l *loraFlags) adapters(arch string) ([]server.LoRAAdapter, error) {
	var out []server.LoRAAdapter
	add := func(a server.LoRAAdapter, flag string) error {
		abs, err := filepath.Abs(a.Path) // the engines may run elsewhere in the tree
		if err != nil {
			return fmt.Errorf("--%s %s: %w", flag, a.Path, err)
		}
		if a.Name == a.Path {
			a.Name = abs
		}
		a.Path = abs
		if err := server.CheckLoRAFile(a.Path, arch); err != nil {
			return fmt.Errorf("--%s: %w", flag, err)
		}
		out = append(out, a)
		return nil
	}
	for _, item := range l.files {
		for _, p := range names(item) {
			if err := add(server.LoRAAdapter{Name: p, Path: p, Scale: 1}, "lora"); err != nil {
				return nil, err
			}
		}
	}
	for _, item := range l.scaled {
		for _, ps := range names(item) {
			i := strings.LastIndexByte(ps, ':')
			if i < 0 {
				return nil, fmt.Errorf("--lora-scaled %q: want FILE:SCALE", ps)
			}
			sc, err := strconv.ParseFloat(ps[i+1:], 64)
			if err != nil || sc != sc || sc > 1e6 || sc < -1e6 {
				return nil, fmt.Errorf("--lora-scaled %q: the scale %q is not a number", ps, ps[i+1:])
			}
			if err := add(server.LoRAAdapter{Name: ps[:i], Path: ps[:i], Scale: sc}, "lora-scaled"); err != nil {
				return nil, err
			}
		}
	}
	if l.initWithoutApply {
		for i := range out {
			out[i].Scale = 0
		}
	}
	seen := map[string]bool{}
	for _, item := range l.modules {
		m, err := parseLoRAModule(item)
		if err != nil {
			return nil, err
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("--lora-modules: %q is named twice", m.Name)
		}
		seen[m.Name] = true
		if err := add(m, "lora-modules"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseLoRAModule reads one of vLLM's --lora-modules items.
func parseLoRAModule(item string) (server.LoRAAdapter, error) {
	m := server.LoRAAdapter{Module: true}
	if strings.HasPrefix(item, "{") {
		var j struct {
			Name string `json:"name"`
			Path string `json:"path"`
			Base string `json:"base_model_name"`
		}
		if err := json.Unmarshal([]byte(item), &j); err != nil {
			return m, fmt.Errorf("--lora-modules %s: %w", item, err)
		}
		m.Name, m.Path, m.Base = j.Name, j.Path, j.Base
	} else {
		m.Name, m.Path, _ = strings.Cut(item, "=")
	}
	if m.Name == "" || m.Path == "" {
		return m, fmt.Errorf("--lora-modules %q: want name=path or {\"name\": …, \"path\": …}", item)
	}
	return m, nil
}

// modelArch is the architecture a GGUF model file names, for checking
// adapters against it; "" when model is not one (a Hugging Face
// directory: the engines check) and "llama" for the dummy.
func modelArch(model string) string {
	if model == "dummy" {
		return "llama"
	}
	f, err := os.Open(model)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		return ""
	}
	m, err := gguf.ParseMetadata(f, st.Size())
	if err != nil {
		return ""
	}
	a, _ := m.String("general.architecture")
	return a
}

// loraEngineFlags are the engine's: vLLM's limits.
type loraEngineFlags struct {
	maxRank, maxLoRAs, maxCPULoRAs int
}

func (l *loraEngineFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&l.maxRank, "max-lora-rank", 0, "refuse LoRA adapters of a higher `rank` (vLLM's flag); 0 = any")
	fs.IntVar(&l.maxLoRAs, "max-loras", 0, "vLLM's LoRA adapters per batch: the CPU backend applies any number in one batch, so this only raises --max-cpu-loras' floor")
	fs.IntVar(&l.maxCPULoRAs, "max-cpu-loras", 0, "LoRA adapters an engine keeps loaded (least recently used dropped; vLLM's flag); 0 = max(--max-loras, 8)")
}

// cache is how many adapters an engine keeps loaded.
func (l *loraEngineFlags) cache() int {
	if l.maxCPULoRAs > 0 {
		return max(l.maxCPULoRAs, l.maxLoRAs)
	}
	return max(l.maxLoRAs, 8)
}

// envTrue reads a vLLM boolean environment variable: "1" or "true" in
// any case (vllm/envs.py).
func envTrue(name string) bool {
	v := strings.ToLower(os.Getenv(name))
	return v == "1" || v == "true"
}
