package hfhub

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRemove(t *testing.T) {
	hub := newFakeHub(t)
	files := multiRepo()
	shared := fakeFile{path: "copy/model-Q4_0.gguf", data: files[2].data, lfs: true} // the Q4_K_M blob, under another name
	hub.add("org/multi-GGUF", append(files, shared)...)
	hub.add("org/split-GGUF", splitRepo()...)
	cache := t.TempDir()
	c := hub.client(t, cache, "")
	for _, name := range []string{"org/multi-GGUF:Q4_K_M", "org/multi-GGUF:Q8_0", "org/multi-GGUF:Q4_0", "org/split-GGUF"} {
		if _, err := c.Pull(context.Background(), name, nil); err != nil {
			t.Fatal(err)
		}
	}
	repo := filepath.Join(cache, "models--org--multi-GGUF")
	snap := filepath.Join(repo, "snapshots", commitA)
	blob := func(f fakeFile) string { return filepath.Join(repo, "blobs", f.oid()) }
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	tests := []struct {
		name  string
		ref   string
		err   error
		gone  []string
		kept  []string
		after func() error
	}{
		{"tag: its link goes, a blob another file links stays", "org/multi-GGUF:q4_k_m", nil,
			[]string{filepath.Join(snap, "model-Q4_K_M.gguf")},
			[]string{blob(files[2]), filepath.Join(snap, "copy/model-Q4_0.gguf"), filepath.Join(snap, "model-Q8_0.gguf"), blob(files[5])}, nil},
		{"tag: the last link takes its blob", "org/multi-GGUF:Q4_0", nil,
			[]string{filepath.Join(snap, "copy/model-Q4_0.gguf"), blob(files[2])}, []string{filepath.Join(snap, "model-Q8_0.gguf")}, nil},
		{"tag: projectors of the tag go too", "org/multi-GGUF:Q8_0", nil,
			[]string{filepath.Join(snap, "model-Q8_0.gguf"), blob(files[3]), filepath.Join(snap, "mmproj-model-Q8_0.gguf"), blob(files[5])},
			[]string{filepath.Join(repo, "refs", "main")}, nil},
		{"tag not cached", "org/multi-GGUF:F16", ErrNotFound, nil, nil, nil},
		{"no tag: the whole folder", "org/multi-GGUF", nil, []string{repo}, []string{filepath.Join(cache, "models--org--split-GGUF")}, nil},
		{"twice", "org/multi-GGUF", ErrNotFound, nil, nil, nil},
		{"split model", "org/split-GGUF:Q4_K_M", nil,
			[]string{filepath.Join(cache, "models--org--split-GGUF", "snapshots", commitA, "big-Q4_K_M-00003-of-00003.gguf")}, nil,
			func() error { _, err := c.Local("org/split-GGUF"); return err }},
		{"invalid name", "org/../x", ErrInvalidName, nil, nil, nil},
	}
	for _, tt := range tests {
		err := c.Remove(tt.ref)
		if !errors.Is(err, tt.err) {
			t.Fatalf("%s: Remove = %v, want %v", tt.name, err, tt.err)
		}
		for _, p := range tt.gone {
			if exists(p) {
				t.Errorf("%s: %s is still there", tt.name, p)
			}
		}
		for _, p := range tt.kept {
			if !exists(p) {
				t.Errorf("%s: %s was removed", tt.name, p)
			}
		}
		if tt.after != nil {
			if err := tt.after(); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: Local after Remove = %v, want ErrNotFound", tt.name, err)
			}
		}
	}
}

// TestRemoveKeepsOutsideFiles: a snapshot link that points out of the
// repository's blobs loses the link, never its target.
func TestRemoveKeepsOutsideFiles(t *testing.T) {
	cache := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious-Q4_K_M.gguf")
	os.WriteFile(outside, []byte("keep"), 0o644)
	snap := filepath.Join(cache, "models--o--r", "snapshots", commitA)
	os.MkdirAll(snap, 0o755)
	if err := os.Symlink(outside, filepath.Join(snap, "m-Q4_K_M.gguf")); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Endpoint: "http://unused.test", CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Remove("o/r:Q4_K_M"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("Remove deleted a file outside the cache: %v", err)
	}
}
