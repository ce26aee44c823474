package hfhub

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	tests := []struct {
		in   string
		want Ref
		ok   bool
	}{
		{"ggml-org/gemma-3-1b-it-GGUF", Ref{"ggml-org/gemma-3-1b-it-GGUF", ""}, true},
		{"unsloth/Qwen3-8B-GGUF:Q4_K_M", Ref{"unsloth/Qwen3-8B-GGUF", "Q4_K_M"}, true},
		{"unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL", Ref{"unsloth/Qwen3-8B-GGUF", "UD-Q4_K_XL"}, true},
		{"o_1/r.v2:q8_0", Ref{"o_1/r.v2", "q8_0"}, true},
		{"", Ref{}, false},
		{"repo", Ref{}, false},
		{"a/b/c", Ref{}, false},
		{"/a", Ref{}, false},
		{"a/", Ref{}, false},
		{"a//b", Ref{}, false},
		{"../a", Ref{}, false},
		{"a/..", Ref{}, false},
		{"a/.b", Ref{}, false},
		{"a/b.", Ref{}, false},
		{"a-/b", Ref{}, false},
		{"a/b--c", Ref{}, false},
		{"a b/c", Ref{}, false},
		{"a/b:", Ref{}, false},
		{"a/b:Q4:Q8", Ref{}, false},
		{"a/b:../x", Ref{}, false},
		{"a/b:Q4/K", Ref{}, false},
		{"a/b:Q4*", Ref{}, false},
		{"a/" + strings.Repeat("b", 255), Ref{}, false},
		{"a/" + strings.Repeat("b", 254), Ref{"a/" + strings.Repeat("b", 254), ""}, true},
	}
	for _, tt := range tests {
		got, err := ParseRef(tt.in)
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && (!errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), tt.in)) {
			t.Errorf("ParseRef(%q) error %v: want ErrInvalidName naming the input", tt.in, err)
		}
	}
}

// FuzzParseRef: whatever parses round-trips and makes a cache folder that
// stays in the cache.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"a/b", "a/b:Q4_K_M", "../x", "a/b:c:d", "a/b/../c", "a\x00/b", "a/b:UD-Q4.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidName) {
				t.Fatalf("ParseRef(%q): %v, want ErrInvalidName", s, err)
			}
			return
		}
		if r.String() != s {
			t.Fatalf("ParseRef(%q).String() = %q", s, r.String())
		}
		folder := repoFolder(r.Repo)
		if strings.Count(r.Repo, "/") != 1 || !filepath.IsLocal(folder) || strings.ContainsAny(folder, `/\`) || strings.Contains(r.Repo, "..") {
			t.Fatalf("ParseRef(%q) = %+v: folder %q", s, r, folder)
		}
		if strings.ContainsAny(r.Tag, ":/\\ ") {
			t.Fatalf("ParseRef(%q): tag %q", s, r.Tag)
		}
	})
}

func TestLocalPath(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"model.gguf", true}, {"Q4_K_M/model-00001-of-00002.gguf", true}, {"a/../b.gguf", true}, {"main", true}, {"feature/x", true},
		{"", false}, {"..", false}, {"../x.gguf", false}, {"a/../../x", false}, {"/etc/passwd", false}, {`..\x`, false}, {"a\x00b", false},
	} {
		if got := localPath(tt.in); got != tt.ok {
			t.Errorf("localPath(%q) = %v, want %v", tt.in, got, tt.ok)
		}
	}
}

func TestEndpointFrom(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "https://huggingface.co/"},
		{map[string]string{"HF_ENDPOINT": "https://hf-mirror.com"}, "https://hf-mirror.com/"},
		{map[string]string{"HF_ENDPOINT": "https://a/", "MODEL_ENDPOINT": "http://b:8080/hub"}, "http://b:8080/hub/"},
	} {
		if got := endpointFrom(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("endpointFrom(%v) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestCacheDirFrom(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": "/h"}, "/h/.cache/huggingface/hub"},
		{map[string]string{"HOME": "/h", "XDG_CACHE_HOME": "/x"}, "/x/huggingface/hub"},
		{map[string]string{"HOME": "/h", "HF_HOME": "/hf"}, "/hf/hub"},
		{map[string]string{"HF_HOME": "/hf", "HUGGINGFACE_HUB_CACHE": "/old"}, "/old"},
		{map[string]string{"HUGGINGFACE_HUB_CACHE": "/old", "HF_HUB_CACHE": "/new"}, "/new"},
		{map[string]string{"HF_HUB_CACHE": "/new", "LLAMA_CACHE": "/llama"}, "/llama"},
		{nil, ""},
	} {
		got, err := cacheDirFrom(func(k string) string { return tt.env[k] })
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("cacheDirFrom(%v) = %q, %v; want %q", tt.env, got, err, tt.want)
		}
	}
}

func TestNewOptions(t *testing.T) {
	t.Setenv("MODEL_ENDPOINT", "")
	t.Setenv("HF_ENDPOINT", "http://mirror.test")
	t.Setenv("HF_TOKEN", "hf_env")
	c, err := New(Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if c.endpoint != "http://mirror.test/" || c.token != "hf_env" || c.parallel != 4 {
		t.Errorf("New from env: endpoint %q token %q parallel %d", c.endpoint, c.token, c.parallel)
	}
	if _, err := New(Options{Endpoint: "file:///x", CacheDir: "/c"}); err == nil {
		t.Error("New accepted a file: endpoint")
	}
}
