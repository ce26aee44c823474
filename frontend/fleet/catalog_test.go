package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSourcesLoad(t *testing.T) {
	d := t.TempDir()
	cache, dir := filepath.Join(d, "cache"), filepath.Join(d, "dir")
	write(t, filepath.Join(cache, "models--o--tiny-GGUF", "snapshots", "r1", "tiny-Q8_0.gguf"), "")
	write(t, filepath.Join(cache, "models--o--tiny-GGUF", "snapshots", "r1", "mmproj-tiny-F16.gguf"), "")
	write(t, filepath.Join(cache, "models--o--st", "snapshots", "r1", "st-f32.gguf"), "")
	write(t, filepath.Join(dir, "local.gguf"), "")
	write(t, filepath.Join(dir, "split", "m-00001-of-00002.gguf"), "")
	write(t, filepath.Join(dir, "split", "m-00002-of-00002.gguf"), "")
	preset := filepath.Join(d, "p.ini")
	write(t, preset, "[*]\nctx-size = 256\n\n[mine]\nhf = o/st\ndedup-cache-models = 1\nload-on-startup = true\nalias = m1\n\n[local]\nthreads = 1\n")
	specs, err := Sources{Dir: dir, Cache: cache, Preset: preset}.Load()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Spec{}
	for _, s := range specs {
		got[s.Name] = s
	}
	tests := []struct {
		name, source, path string
		hidden, startup    bool
	}{
		{"o/tiny-GGUF:Q8_0", "cache", filepath.Join(cache, "models--o--tiny-GGUF", "snapshots", "r1", "tiny-Q8_0.gguf"), false, false},
		{"o/st:F32", "cache", filepath.Join(cache, "models--o--st", "snapshots", "r1", "st-f32.gguf"), true, false},
		{"local", "preset", filepath.Join(dir, "local.gguf"), false, false},
		{"split", "models_dir", filepath.Join(dir, "split", "m-00001-of-00002.gguf"), false, false},
		{"mine", "preset", filepath.Join(cache, "models--o--st", "snapshots", "r1", "st-f32.gguf"), false, true},
	}
	if len(got) != len(tests) {
		t.Errorf("got %d models, want %d: %+v", len(got), len(tests), specs)
	}
	for _, tt := range tests {
		s, ok := got[tt.name]
		if !ok {
			t.Errorf("%s missing", tt.name)
			continue
		}
		if s.Source != tt.source || s.Path != tt.path || s.Hidden != tt.hidden || s.Startup != tt.startup {
			t.Errorf("%s = %+v, want source %s path %s hidden %v startup %v", tt.name, s, tt.source, tt.path, tt.hidden, tt.startup)
		}
		if v, _ := s.Option("ctx-size"); v != "256" {
			t.Errorf("%s: the [*] option missing: %v", tt.name, s.Options)
		}
	}
	if a := got["mine"].Aliases; len(a) != 1 || a[0] != "m1" {
		t.Errorf("mine's aliases = %v", a)
	}
}

// TestScanCache: llama.cpp's cache listing, subfolders of a snapshot
// included, the commit refs/main names read first.
func TestScanCache(t *testing.T) {
	cache := t.TempDir()
	a, b := strings.Repeat("a1", 20), strings.Repeat("b2", 20)
	snap := func(repo, commit, rel string) string {
		return filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"), "snapshots", commit, filepath.FromSlash(rel))
	}
	for _, f := range []string{
		snap("o/sub", a, "Q4_K_M/m-Q4_K_M-00001-of-00002.gguf"),
		snap("o/sub", a, "Q4_K_M/m-Q4_K_M-00002-of-00002.gguf"),
		snap("o/sub", a, "BF16/m-BF16.gguf"),
		snap("o/sub", a, "Q8_0/m-00001-of-00002.gguf"), // no tag in its own path: not listed, as llama.cpp
		snap("o/sub", a, "mmproj/mmproj-m-F16.gguf"),
		snap("o/sub", a, "README.md"),
		snap("o/two", a, "m-Q4_0.gguf"),
		snap("o/two", b, "m-Q4_0.gguf"),
		snap("o/two", b, "deep/er/n.Q5_K.gguf"),
		filepath.Join(cache, "models--o--two", "blobs", "x.incomplete"),
		snap("a/b/c", a, "m-Q4_0.gguf"), // models--a--b--c is no repository
	} {
		write(t, f, "")
	}
	write(t, filepath.Join(cache, "models--o--two", "refs", "main"), b)
	got, err := scanCache(cache)
	if err != nil {
		t.Fatal(err)
	}
	want := []cached{
		{"o/sub", "BF16", snap("o/sub", a, "BF16/m-BF16.gguf")},
		{"o/sub", "Q4_K_M", snap("o/sub", a, "Q4_K_M/m-Q4_K_M-00001-of-00002.gguf")},
		{"o/two", "Q5_K", snap("o/two", b, "deep/er/n.Q5_K.gguf")},
		{"o/two", "Q4_0", snap("o/two", b, "m-Q4_0.gguf")},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(cached{})); diff != "" {
		t.Errorf("scanCache (-want +got):\n%s", diff)
	}
}

func TestCacheTag(t *testing.T) {
	tests := []struct {
		rel, tag string
		ok       bool
	}{
		{"m-Q4_K_M.gguf", "Q4_K_M", true},
		{"m.q8_0.gguf", "Q8_0", true},
		{"UD-Q4_K_XL/m-UD-Q4_K_XL-00001-of-00003.gguf", "Q4_K_XL", true},
		{"m-Q4_K_M-00002-of-00003.gguf", "", false},
		{"Q4_K_M/m-00001-of-00003.gguf", "", false},
		{"mtp-m-Q8_0.gguf", "", false},
		{"sub/mmproj-F16.gguf", "", false},
		{"m-Q4_K_M.bin", "", false},
	}
	for _, tt := range tests {
		if tag, ok := cacheTag(tt.rel); tag != tt.tag || ok != tt.ok {
			t.Errorf("cacheTag(%q) = %q, %v; want %q, %v", tt.rel, tag, ok, tt.tag, tt.ok)
		}
	}
}
