package fleet

import (
	"os"
	"path/filepath"
	"testing"
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
	write(t, preset, "[*]\nctx-size = 256\n\n[mine]\nhf-repo = o/st\ndedup-cache-models = 1\nload-on-startup = true\nalias = m1\n\n[local]\nthreads = 1\n")
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
