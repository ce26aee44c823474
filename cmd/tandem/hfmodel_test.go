package main

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/hfhub"
	"github.com/tandem-llm/tandem/frontend/hfhub/hubtest"
)

// TestHubWanted: which of serve's flags ask the hub for a model, and
// which stay local paths or router mode.
func TestHubWanted(t *testing.T) {
	exists := map[string]bool{"models/m.gguf": true, "Qwen/local-dir": true}
	stat := func(p string) (fs.FileInfo, error) {
		if exists[p] {
			return nil, nil
		}
		return nil, fs.ErrNotExist
	}
	tests := []struct {
		name  string
		rf    routerFlags
		model string   // --model's value
		set   []string // flags on the command line
		env   map[string]string
		want  hubRequest
		ok    bool
		err   string
	}{
		{"-hf", routerFlags{hfRepo: "o/r:Q8_0"}, "dummy", []string{"hf"}, nil, hubRequest{flag: "-hf", name: "o/r:Q8_0"}, true, ""},
		{"-hfr with -hff", routerFlags{hfRepo: "o/r", hfFile: "d/m.gguf"}, "dummy", []string{"hfr", "hff"}, nil, hubRequest{flag: "-hf", name: "o/r", file: "d/m.gguf"}, true, ""},
		{"env repo and file", routerFlags{}, "dummy", nil, map[string]string{"LLAMA_ARG_HF_REPO": "o/r", "LLAMA_ARG_HF_FILE": "m.gguf"},
			hubRequest{flag: "-hf", name: "o/r", file: "m.gguf"}, true, ""},
		{"--model wins over the env repo", routerFlags{}, "models/m.gguf", []string{"model"}, map[string]string{"LLAMA_ARG_HF_REPO": "o/r"}, hubRequest{}, false, ""},
		{"-hf and --model", routerFlags{hfRepo: "o/r"}, "models/m.gguf", []string{"hf-repo", "model"}, nil, hubRequest{}, false, "give one"},
		{"-hff alone", routerFlags{hfFile: "m.gguf"}, "dummy", []string{"hf-file"}, nil, hubRequest{}, false, "give -hf too"},
		{"no model", routerFlags{}, "dummy", nil, nil, hubRequest{}, false, ""},
		{"dummy", routerFlags{}, "dummy", []string{"model"}, nil, hubRequest{}, false, ""},
		{"a local GGUF", routerFlags{}, "models/m.gguf", []string{"model"}, nil, hubRequest{}, false, ""},
		{"a missing GGUF path stays a path", routerFlags{}, "models/gone.gguf", []string{"model"}, nil, hubRequest{}, false, ""},
		{"a local directory shaped like a repository", routerFlags{}, "Qwen/local-dir", []string{"model"}, nil, hubRequest{}, false, ""},
		{"a repository id, as vllm serve takes it", routerFlags{}, "Qwen/Qwen3-0.6B", []string{"model"}, nil,
			hubRequest{flag: "--model", name: "Qwen/Qwen3-0.6B", checkpoint: true}, true, ""},
		{"a repository id with a tag is a GGUF", routerFlags{}, "o/r-GGUF:Q4_K_M", []string{"model"}, nil,
			hubRequest{flag: "--model", name: "o/r-GGUF:Q4_K_M"}, true, ""},
		{"a missing path that is no repository id", routerFlags{}, "/no/such/dir", []string{"model"}, nil, hubRequest{}, false, ""},
		{"a relative path of three parts", routerFlags{}, "a/b/c", []string{"model"}, nil, hubRequest{}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := map[string]bool{}
			for _, n := range tt.set {
				set[n] = true
			}
			getenv := func(k string) string { return tt.env[k] }
			got, ok, err := hubWanted(&tt.rf, tt.model, set, getenv, stat)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || ok != tt.ok {
				t.Fatalf("hubWanted = %+v, %v, %v; want ok %v", got, ok, err, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(hubRequest{})); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHubHint: failures a user can fix say how.
func TestHubHint(t *testing.T) {
	hubErr := func(kind error) error { return &hfhub.Error{Ref: hfhub.Ref{Repo: "o/r"}, Err: kind} }
	tests := []struct {
		name    string
		err     error
		offline bool
		want    string
	}{
		{"offline, not cached", hubErr(hfhub.ErrNotFound), true, "offline mode"},
		{"offline, no such tag cached", hubErr(hfhub.ErrNoGGUF), true, "lacks it"},
		{"private", hubErr(hfhub.ErrUnauthorized), false, "--hf-token or HF_TOKEN"},
		{"online, not found", hubErr(hfhub.ErrNotFound), false, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hubHint(tt.err, tt.offline, "/cache").Error()
			if !strings.Contains(got, tt.want) || !errors.Is(hubHint(tt.err, tt.offline, "/cache"), tt.err) {
				t.Errorf("hubHint = %q, want it to say %q and wrap the cause", got, tt.want)
			}
		})
	}
}

// TestPullHub: --model OWNER/REPO takes a safetensors checkpoint's
// directory, else the repository's GGUF; -hf takes the GGUF; offline
// finds them in the cache or fails.
func TestPullHub(t *testing.T) {
	hub := hubtest.New(t)
	hub.Add("o/ckpt", map[string][]byte{"config.json": []byte(`{}`), "tokenizer.json": []byte(`{}`),
		"model.safetensors": []byte("weights"), "README.md": []byte("# r"), "m-Q8_0.gguf": []byte("gguf")})
	hub.Add("o/r-GGUF", map[string][]byte{"m-Q8_0.gguf": []byte("gguf"), "m-F16.gguf": []byte("gguf16")})
	snap := func(cache, repo, file string) string {
		return filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"), "snapshots", hubtest.Commit, file)
	}
	tests := []struct {
		name string
		req  hubRequest
		want string // the path under the snapshot; "" for the snapshot directory
		err  error
	}{
		{"a checkpoint", hubRequest{name: "o/ckpt", checkpoint: true}, "", nil},
		{"no checkpoint: the GGUF", hubRequest{name: "o/r-GGUF", checkpoint: true}, "m-Q8_0.gguf", nil},
		{"-hf takes the GGUF", hubRequest{name: "o/ckpt"}, "m-Q8_0.gguf", nil},
		{"-hff", hubRequest{name: "o/r-GGUF", file: "m-F16.gguf"}, "m-F16.gguf", nil},
		{"missing", hubRequest{name: "o/missing", checkpoint: true}, "", hfhub.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			c, err := hfhub.New(hfhub.Options{Endpoint: hub.URL, CacheDir: cache, NoMMProj: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pullHub(context.Background(), c, tt.req, true, nil); err == nil {
				t.Errorf("offline before the download: no error")
			}
			for _, offline := range []bool{false, true} {
				m, err := pullHub(context.Background(), c, tt.req, offline, nil)
				if !errors.Is(err, tt.err) {
					t.Fatalf("offline %v: err = %v, want %v", offline, err, tt.err)
				}
				if want := snap(cache, strings.Split(tt.req.name, ":")[0], tt.want); err == nil && m.Path != want {
					t.Errorf("offline %v: path %s, want %s", offline, m.Path, want)
				}
			}
		})
	}
}
