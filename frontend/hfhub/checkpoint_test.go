package hfhub

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPullCheckpoint: a Transformers repository comes into the cache as
// the loader reads it (the small files, then the weights it opens, no
// README or duplicate weights), and LocalCheckpoint finds it again.
func TestPullCheckpoint(t *testing.T) {
	hub := newFakeHub(t)
	config := fakeFile{path: "config.json", data: []byte(`{"architectures":["LlamaForCausalLM"]}`)}
	tok := fakeFile{path: "tokenizer.json", data: []byte(`{}`)}
	index := fakeFile{path: indexFile, data: []byte(`{"weight_map":{"a":"model-00002-of-00002.safetensors","b":"model-00001-of-00002.safetensors","c":"model-00001-of-00002.safetensors"}}`)}
	hub.add("org/sharded", config, tok, index, fakeFile{path: "README.md", data: []byte("# x")},
		fakeFile{path: "model-00001-of-00002.safetensors", data: bytesOf(400, 1), lfs: true},
		fakeFile{path: "model-00002-of-00002.safetensors", data: bytesOf(300, 2), lfs: true},
		fakeFile{path: "consolidated.safetensors", data: bytesOf(700, 3), lfs: true},
		fakeFile{path: "original/params.json", data: []byte(`{}`)})
	hub.add("org/single", config, fakeFile{path: "chat_template.jinja", data: []byte("{{x}}")},
		fakeFile{path: "model.safetensors", data: bytesOf(500, 4), lfs: true},
		fakeFile{path: "consolidated.safetensors", data: bytesOf(500, 5), lfs: true})
	hub.add("org/bad-index", config, fakeFile{path: indexFile, data: []byte(`{"weight_map":{"a":"gone.safetensors"}}`)},
		fakeFile{path: "model.safetensors", data: bytesOf(50, 6), lfs: true})
	hub.add("org/m-GGUF", multiRepo()...)
	tests := []struct {
		name, repo string
		files      []string // under the snapshot
		err        error
	}{
		{"index shards", "org/sharded", []string{"config.json", "tokenizer.json", indexFile,
			"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}, nil},
		{"model.safetensors over the rest", "org/single", []string{"config.json", "chat_template.jinja", "model.safetensors"}, nil},
		{"the index names a missing shard", "org/bad-index", nil, ErrNoCheckpoint},
		{"a GGUF repository", "org/m-GGUF", nil, ErrNoCheckpoint},
		{"a tag", "org/sharded:Q8_0", nil, ErrInvalidName},
		{"missing repository", "org/missing", nil, ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			c := hub.client(t, cache, "")
			m, err := c.PullCheckpoint(context.Background(), tt.repo, nil)
			if !errors.Is(err, tt.err) {
				t.Fatalf("PullCheckpoint(%q) err = %v, want %v", tt.repo, err, tt.err)
			}
			if err != nil {
				return
			}
			snap := filepath.Join(cache, repoFolder(tt.repo), "snapshots", commitA)
			var want []string
			for _, f := range tt.files {
				want = append(want, filepath.Join(snap, f))
			}
			if m.Path != snap || !slices.Equal(m.Files, want) || m.Name != tt.repo {
				t.Errorf("PullCheckpoint = %+v\nwant dir %s files %v", m, snap, want)
			}
			var got []string
			filepath.WalkDir(snap, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					got = append(got, p)
				}
				return nil
			})
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("the snapshot holds %v, want %v", got, want)
			}
			local, err := c.LocalCheckpoint(tt.repo)
			if err != nil || local.Path != m.Path || len(local.Files) != len(m.Files) {
				t.Errorf("LocalCheckpoint = %+v, %v; want %+v", local, err, m)
			}
			if err := os.Remove(m.Files[len(m.Files)-1]); err != nil { // a weight file
				t.Fatal(err)
			}
			if _, err := c.LocalCheckpoint(tt.repo); !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrNoCheckpoint) {
				t.Errorf("LocalCheckpoint without a weight file: %v, want ErrNotFound or ErrNoCheckpoint", err)
			}
		})
	}
}
