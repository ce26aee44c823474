package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// LoRAAdapter is one LoRA adapter the server applies on request: from
// vLLM's --lora-modules or POST /v1/load_lora_adapter (a model name of
// its own, on /v1/models), or llama-server's --lora and --lora-scaled
// (an id on /lora-adapters, applied at its global scale to requests
// that name no adapter).
type LoRAAdapter struct {
	Name string // the model name (vLLM's lora_name); llama-server's: the file's path
	Path string // the GGUF LoRA file the engines load
	// Scale is the global scale, llama-server's: requests that name no
	// adapter (by model or by a lora list) apply every adapter whose
	// scale is not 0 (--lora: 1, --lora-scaled: its own,
	// --lora-init-without-apply and vLLM's modules: 0).
	Scale float64
	// Module makes it a model of its own: listed on /v1/models and
	// applied (at scale 1, alone) to requests whose model is its Name.
	Module bool
	// Base is the model its card names as parent (vLLM's
	// base_model_name); "" = the served model.
	Base string
}

// loraSet is the server's adapters; llama-server's id of one is its
// index. Safe for concurrent use.
type loraSet struct {
	mu     sync.RWMutex
	list   []LoRAAdapter
	ids    []int // [len(list)] each adapter's lora_int_id (≥ 1, never reused)
	nextID int
}

func newLoRASet(list []LoRAAdapter) *loraSet {
	s := &loraSet{nextID: 1}
	for _, a := range list {
		s.add(a)
	}
	return s
}

func (s *loraSet) add(a LoRAAdapter) {
	s.list = append(s.list, a)
	s.ids = append(s.ids, s.nextID)
	s.nextID++
}

func (s *loraSet) request(i int, scale float64) wire.LoRARequest {
	a := s.list[i]
	return wire.LoRARequest{Name: a.Name, ID: s.ids[i], Path: a.Path, Scale: scale}
}

// module is the adapter named model, if one is a module.
func (s *loraSet) module(model string) (int, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i := s.indexModule(model)
	return i, i >= 0
}

// indexModule is the index of the module named name, -1 if none. s.mu is
// held.
func (s *loraSet) indexModule(name string) int {
	return slices.IndexFunc(s.list, func(a LoRAAdapter) bool { return a.Module && a.Name == name })
}

// resolve is the adapters a request applies: the module its model names
// (at scale 1), else its lora list (llama-server's: the ids listed at
// their scales, the others at 0), else every adapter at its global scale.
func (s *loraSet) resolve(model string, list []openai.LoRAScale) ([]wire.LoRARequest, *openai.Error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.list) == 0 {
		if len(list) > 0 {
			return nil, openai.BadRequest("lora", "the server has no LoRA adapters (start it with --lora, --lora-scaled or --lora-modules)")
		}
		return nil, nil
	}
	if i := s.indexModule(model); i >= 0 {
		return []wire.LoRARequest{s.request(i, 1)}, nil
	}
	var out []wire.LoRARequest
	if list != nil {
		scales := map[int]float64{}
		for _, l := range list {
			if l.ID < 0 || l.ID >= len(s.list) {
				return nil, openai.BadRequest("lora", "LoRA adapter id %d: the server's ids are 0 to %d (GET /lora-adapters)", l.ID, len(s.list)-1)
			}
			scales[l.ID] = l.Scale
		}
		for i := range s.list {
			if sc := scales[i]; sc != 0 {
				out = append(out, s.request(i, sc))
			}
		}
		return out, nil
	}
	for i, a := range s.list {
		if a.Scale != 0 {
			out = append(out, s.request(i, a.Scale))
		}
	}
	return out, nil
}

// cards are the modules' /v1/models cards (vLLM's: root the path,
// parent the base model).
func (s *Server) loraCards() []openai.Model {
	s.loras.mu.RLock()
	defer s.loras.mu.RUnlock()
	var out []openai.Model
	for _, a := range s.loras.list {
		if !a.Module {
			continue
		}
		root, parent := a.Path, a.Base
		if parent == "" {
			parent = s.cfg.ServedModelName
		}
		out = append(out, openai.Model{ID: a.Name, Object: openai.ObjectModel, Created: s.created, OwnedBy: openai.OwnedBy,
			Root: &root, Parent: &parent, MaxModelLen: s.cfg.MaxModelLen,
			Permission: []openai.ModelPermission{openai.DefaultPermission(s.permissionID, s.created)}})
	}
	return out
}

// CheckLoRAFile reads what says path is a GGUF LoRA adapter for arch
// ("" = any): a frontend's check before naming it to the engines, which
// check the rest when a request first applies it.
func CheckLoRAFile(path, arch string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return checkPEFTDir(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	m, err := gguf.ParseMetadata(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	a, err := gguf.LoRAArch(m)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if arch != "" && a != arch {
		return fmt.Errorf("%s: the adapter is for architecture %q, the model is %q", path, a, arch)
	}
	return nil
}

// checkPEFTDir checks dir is a PEFT LoRA adapter (vLLM's format): an
// adapter_config.json of peft_type LORA beside adapter_model.safetensors.
func checkPEFTDir(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		return fmt.Errorf("%s: not a LoRA adapter: a directory needs a PEFT adapter_config.json: %w", dir, err)
	}
	var c struct {
		PeftType string `json:"peft_type"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("%s: adapter_config.json: %w", dir, err)
	}
	if c.PeftType != "" && c.PeftType != "LORA" {
		return fmt.Errorf("%s: not a LoRA adapter: peft_type %q", dir, c.PeftType)
	}
	if _, err := os.Stat(filepath.Join(dir, "adapter_model.safetensors")); err != nil {
		return fmt.Errorf("%s: no adapter_model.safetensors: %w", dir, err)
	}
	return nil
}

// loraAdapterInfo is one entry of llama-server's GET /lora-adapters.
type loraAdapterInfo struct {
	ID           int     `json:"id"`
	Path         string  `json:"path"`
	Scale        float64 `json:"scale"`
	TaskName     string  `json:"task_name"`
	PromptPrefix string  `json:"prompt_prefix"`
}

// getLoRAAdapters serves llama-server's GET /lora-adapters: every
// adapter by id, with its global scale.
func (s *Server) getLoRAAdapters(c echo.Context) error {
	s.loras.mu.RLock()
	defer s.loras.mu.RUnlock()
	out := make([]loraAdapterInfo, len(s.loras.list))
	for i, a := range s.loras.list {
		out[i] = loraAdapterInfo{ID: i, Path: a.Path, Scale: a.Scale}
	}
	return c.JSON(http.StatusOK, out)
}

// postLoRAAdapters serves llama-server's POST /lora-adapters: [{"id",
// "scale"}] sets the global scales, those not listed to 0.
func (s *Server) postLoRAAdapters(c echo.Context) error {
	var list []openai.LoRAScale
	if e := readBody(c, &list); e != nil {
		return writeError(c, e)
	}
	if list == nil {
		return writeError(c, openai.BadRequest("", "Request body must be an array"))
	}
	s.loras.mu.Lock()
	defer s.loras.mu.Unlock()
	scales := map[int]float64{}
	for _, l := range list {
		if e := l.Validate(); e != nil {
			return writeError(c, e)
		}
		if l.ID >= len(s.loras.list) {
			return writeError(c, openai.BadRequest("id", "LoRA adapter id %d: the server's ids are 0 to %d", l.ID, len(s.loras.list)-1))
		}
		scales[l.ID] = l.Scale
	}
	for i := range s.loras.list {
		s.loras.list[i].Scale = scales[i]
	}
	return c.JSON(http.StatusOK, map[string]bool{"success": true})
}

// loadLoRARequest is vLLM's LoadLoRAAdapterRequest.
type loadLoRARequest struct {
	LoRAName string `json:"lora_name"`
	LoRAPath string `json:"lora_path"`
}

// loadLoRAAdapter serves vLLM's POST /v1/load_lora_adapter
// (VLLM_ALLOW_RUNTIME_LORA_UPDATING): a new module, after checking the
// file is a LoRA adapter for the served model.
func (s *Server) loadLoRAAdapter(c echo.Context) error {
	var req loadLoRARequest
	if e := readBody(c, &req); e != nil {
		return writeError(c, e)
	}
	if req.LoRAName == "" || req.LoRAPath == "" {
		return writeError(c, openai.BadRequest("", "Both 'lora_name' and 'lora_path' must be provided."))
	}
	if _, ok := s.loras.module(req.LoRAName); ok || s.isModelName(req.LoRAName) {
		return writeError(c, openai.BadRequest("lora_name", "The lora adapter '%s' has already been loaded.", req.LoRAName))
	}
	if err := CheckLoRAFile(req.LoRAPath, s.cfg.ModelArch); err != nil {
		return writeError(c, openai.BadRequest("lora_path", "Failed to load LoRA adapter '%s': %v", req.LoRAName, err))
	}
	s.loras.mu.Lock()
	defer s.loras.mu.Unlock()
	if s.loras.indexModule(req.LoRAName) >= 0 { // loaded meanwhile: the file was read unlocked
		return writeError(c, openai.BadRequest("lora_name", "The lora adapter '%s' has already been loaded.", req.LoRAName))
	}
	s.loras.add(LoRAAdapter{Name: req.LoRAName, Path: req.LoRAPath, Module: true})
	s.log.Info("loaded LoRA adapter", "name", req.LoRAName, "path", req.LoRAPath)
	return c.String(http.StatusOK, fmt.Sprintf("Success: LoRA adapter '%s' added successfully.", req.LoRAName))
}

// unloadLoRAAdapter serves vLLM's POST /v1/unload_lora_adapter.
func (s *Server) unloadLoRAAdapter(c echo.Context) error {
	var req loadLoRARequest
	if e := readBody(c, &req); e != nil {
		return writeError(c, e)
	}
	if req.LoRAName == "" {
		return writeError(c, openai.BadRequest("lora_name", "'lora_name' needs to be provided."))
	}
	s.loras.mu.Lock()
	defer s.loras.mu.Unlock()
	i := s.loras.indexModule(req.LoRAName)
	if i < 0 {
		return writeError(c, openai.NotFound("lora_name", "The lora adapter '%s' cannot be found.", req.LoRAName))
	}
	s.loras.list, s.loras.ids = slices.Delete(s.loras.list, i, i+1), slices.Delete(s.loras.ids, i, i+1)
	s.log.Info("unloaded LoRA adapter", "name", req.LoRAName)
	return c.String(http.StatusOK, fmt.Sprintf("Success: LoRA adapter '%s' removed successfully.", req.LoRAName))
}

// mountLoRA adds the adapter routes: llama-server's always, vLLM's
// load and unload with RuntimeLoRAUpdating only, as vLLM does.
func (s *Server) mountLoRA(e *echo.Echo) {
	e.GET("/lora-adapters", s.getLoRAAdapters)
	e.POST("/lora-adapters", s.postLoRAAdapters)
	if s.cfg.RuntimeLoRAUpdating {
		e.POST("/v1/load_lora_adapter", s.loadLoRAAdapter)
		e.POST("/v1/unload_lora_adapter", s.unloadLoRAAdapter)
	}
}

// loraNames are the adapters' names, for vllm:lora_requests_info.
func loraNames(ls []wire.LoRARequest) []string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	return names
}
