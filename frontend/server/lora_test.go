package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// writeAdapterHeader writes a GGUF whose header says it is a LoRA
// adapter for arch (no tensors: the frontend reads only the header).
func writeAdapterHeader(t *testing.T, path, typ, arch string) {
	t.Helper()
	w := gguf.NewWriter()
	for _, kv := range [][2]string{{"general.architecture", arch}, {"general.type", typ}, {"adapter.type", "lora"}} {
		if err := w.AddKV(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoRARequests: which adapters each way of asking puts on the engine
// request: vLLM's model names, llama-server's ids and global scales.
func TestLoRARequests(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok", wire.FinishLength) }}
	ts := newTestServerWith(t, f, func(c *Config) {
		c.LoRA = []LoRAAdapter{{Name: "/a/shakespeare.gguf", Path: "/a/shakespeare.gguf", Scale: 1}, {Name: "sql", Path: "/a/sql.gguf", Module: true}}
	}, tokenizer.NewByte())
	last := func() []wire.LoRARequest {
		r := f.requests()
		return r[len(r)-1].LoRA
	}
	shakespeare := func(s float64) wire.LoRARequest {
		return wire.LoRARequest{Name: "/a/shakespeare.gguf", ID: 1, Path: "/a/shakespeare.gguf", Scale: s}
	}
	sql := func(s float64) wire.LoRARequest {
		return wire.LoRARequest{Name: "sql", ID: 2, Path: "/a/sql.gguf", Scale: s}
	}
	steps := []struct {
		name, method, path, body string
		status                   int
		want                     []wire.LoRARequest // the next engine request's; checked when status is 200 and path generates
	}{
		{"the base model: the global scales", "POST", "/v1/completions", `{"model":"dummy","prompt":"hi","max_tokens":1}`, 200, []wire.LoRARequest{shakespeare(1)}},
		{"a module by its model name, alone at 1", "POST", "/v1/chat/completions", `{"model":"sql","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`, 200, []wire.LoRARequest{sql(1)}},
		{"llama-server's lora list: those listed, the others 0", "POST", "/completion", `{"prompt":"hi","n_predict":1,"lora":[{"id":1,"scale":0.5}]}`, 200, []wire.LoRARequest{sql(0.5)}},
		{"an empty list: none", "POST", "/v1/completions", `{"prompt":"hi","max_tokens":1,"lora":[]}`, 200, nil},
		{"an unknown id", "POST", "/completion", `{"prompt":"hi","lora":[{"id":2,"scale":1}]}`, 400, nil},
		{"an entry without id", "POST", "/v1/completions", `{"prompt":"hi","lora":[{"scale":1}]}`, 400, nil},
		{"not a list", "POST", "/v1/completions", `{"prompt":"hi","lora":{"id":0}}`, 400, nil},
		{"global scales set, the others 0", "POST", "/lora-adapters", `[{"id":1,"scale":0.25}]`, 200, nil},
		{"the base model: the new global scales", "POST", "/v1/completions", `{"prompt":"hi","max_tokens":1}`, 200, []wire.LoRARequest{sql(0.25)}},
		{"a body that is not a list", "POST", "/lora-adapters", `{"id":1}`, 400, nil},
		{"an id out of range", "POST", "/lora-adapters", `[{"id":5,"scale":1}]`, 400, nil},
		{"an unknown model is still a 404", "POST", "/v1/completions", `{"model":"nosuch","prompt":"hi"}`, 404, nil},
		{"Ollama's chat by the module's name", "POST", "/api/chat", `{"model":"sql:latest","messages":[{"role":"user","content":"hi"}],"stream":false}`, 200, []wire.LoRARequest{sql(1)}},
		{"Ollama's generate with the served model: the global scales", "POST", "/api/generate", `{"model":"dummy","prompt":"hi","stream":false}`, 200, []wire.LoRARequest{sql(0.25)}},
		{"Ollama: an unknown model", "POST", "/api/chat", `{"model":"nosuch","messages":[{"role":"user","content":"hi"}]}`, 404, nil},
	}
	for _, s := range steps {
		n := len(f.requests())
		code, body := do(t, ts, s.method, s.path, s.body, nil)
		if code != s.status {
			t.Fatalf("%s: %d %s, want %d", s.name, code, body, s.status)
		}
		if code == http.StatusOK && s.path != "/lora-adapters" {
			if len(f.requests()) != n+1 {
				t.Fatalf("%s: no engine request", s.name)
			}
			if diff := cmp.Diff(s.want, last()); diff != "" {
				t.Errorf("%s: LoRA (-want +got):\n%s", s.name, diff)
			}
		}
	}
	_, body := do(t, ts, "GET", "/lora-adapters", "", nil)
	var got []loraAdapterInfo
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := []loraAdapterInfo{{ID: 0, Path: "/a/shakespeare.gguf", Scale: 0}, {ID: 1, Path: "/a/sql.gguf", Scale: 0.25}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /lora-adapters (-want +got):\n%s", diff)
	}
	_, body = do(t, ts, "GET", "/v1/models", "", nil)
	var models struct {
		Data []struct {
			ID     string  `json:"id"`
			Root   *string `json:"root"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &models); err != nil {
		t.Fatal(err)
	}
	if len(models.Data) != 2 || models.Data[1].ID != "sql" || *models.Data[1].Root != "/a/sql.gguf" || *models.Data[1].Parent != "dummy" || models.Data[0].Parent != nil {
		t.Errorf("/v1/models: %s", body)
	}
	if code, body := do(t, ts, "GET", "/v1/models/sql", "", nil); code != 200 || !strings.Contains(body, `"parent":"dummy"`) {
		t.Errorf("GET /v1/models/sql: %d %s", code, body)
	}
	if code, body := do(t, ts, "GET", "/api/tags", "", nil); code != 200 || !strings.Contains(body, `"name":"sql"`) {
		t.Errorf("Ollama's /api/tags does not list the module: %d %s", code, body)
	}
}

func TestLoRANoAdapters(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	if code, body := do(t, ts, "POST", "/completion", `{"prompt":"hi","lora":[{"id":0,"scale":1}]}`, nil); code != 400 || !strings.Contains(body, "no LoRA adapters") {
		t.Errorf("a lora list without adapters: %d %s", code, body)
	}
	if code, body := do(t, ts, "GET", "/lora-adapters", "", nil); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("GET /lora-adapters: %d %s", code, body)
	}
	if code, _ := do(t, ts, "POST", "/v1/load_lora_adapter", `{"lora_name":"x","lora_path":"/x"}`, nil); code != 404 {
		t.Errorf("load_lora_adapter without VLLM_ALLOW_RUNTIME_LORA_UPDATING: %d, want 404 as vLLM", code)
	}
}

// TestLoadUnloadLoRA: vLLM's runtime adapter routes.
func TestLoadUnloadLoRA(t *testing.T) {
	dir := t.TempDir()
	good, model, other := filepath.Join(dir, "good.gguf"), filepath.Join(dir, "model.gguf"), filepath.Join(dir, "other.gguf")
	writeAdapterHeader(t, good, "adapter", "llama")
	writeAdapterHeader(t, model, "model", "llama")
	writeAdapterHeader(t, other, "adapter", "qwen2")
	peft, bare := filepath.Join(dir, "peft"), filepath.Join(dir, "bare")
	for _, d := range []string{peft, bare} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(peft, "adapter_config.json"), []byte(`{"peft_type": "LORA", "r": 8}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(peft, "adapter_model.safetensors"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok", wire.FinishLength) }}
	ts := newTestServerWith(t, f, func(c *Config) { c.RuntimeLoRAUpdating, c.ModelArch = true, "llama" }, tokenizer.NewByte())
	load := func(name, path string) string { return `{"lora_name":"` + name + `","lora_path":"` + path + `"}` }
	steps := []struct {
		name, path, body string
		status           int
		text             string
	}{
		{"no path", "/v1/load_lora_adapter", `{"lora_name":"x"}`, 400, "Both 'lora_name' and 'lora_path' must be provided."},
		{"a missing file", "/v1/load_lora_adapter", load("x", filepath.Join(dir, "none.gguf")), 400, "Failed to load LoRA adapter 'x'"},
		{"a model, not an adapter", "/v1/load_lora_adapter", load("x", model), 400, "not a LoRA adapter"},
		{"another architecture", "/v1/load_lora_adapter", load("x", other), 400, `\"qwen2\"`},
		{"the served model's name", "/v1/load_lora_adapter", load("dummy", good), 400, "has already been loaded"},
		{"loaded", "/v1/load_lora_adapter", load("sql", good), 200, "Success: LoRA adapter 'sql' added successfully."},
		{"twice", "/v1/load_lora_adapter", load("sql", good), 400, "The lora adapter 'sql' has already been loaded."},
		{"used", "/v1/completions", `{"model":"sql","prompt":"hi","max_tokens":1}`, 200, ""},
		{"unloaded", "/v1/unload_lora_adapter", `{"lora_name":"sql"}`, 200, "Success: LoRA adapter 'sql' removed successfully."},
		{"gone", "/v1/unload_lora_adapter", `{"lora_name":"sql"}`, 404, "The lora adapter 'sql' cannot be found."},
		{"no longer a model", "/v1/completions", `{"model":"sql","prompt":"hi","max_tokens":1}`, 404, "does not exist"},
		{"a PEFT directory", "/v1/load_lora_adapter", load("peft", peft), 200, "Success"},
		{"a directory without adapter_config.json", "/v1/load_lora_adapter", load("bare", bare), 400, "adapter_config.json"},
	}
	for _, s := range steps {
		code, body := do(t, ts, "POST", s.path, s.body, nil)
		if code != s.status || !strings.Contains(body, s.text) {
			t.Errorf("%s: %d %s, want %d with %q", s.name, code, body, s.status, s.text)
		}
	}
	r := f.requests()
	if len(r) != 1 || len(r[0].LoRA) != 1 || r[0].LoRA[0].Path != good || r[0].LoRA[0].Name != "sql" {
		t.Errorf("engine requests %+v", r)
	}
}
