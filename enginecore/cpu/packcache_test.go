package cpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// packModel is a tiny model with every packed family: Q4_K matrices, Q6_K
// ffn_down and attn_v, an F16 output.
var packModel = randomModel(model.RandomTypes{Matrix: model.Q4_K, Down: model.Q6_K, V: model.Q6_K, Embed: model.Q8_0, Output: model.F16}, noEdit)

// cacheFiles lists the pack cache files under dir.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+packExt))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// logitsOf prefills a fixed prompt and decodes two tokens greedily,
// returning every logits row.
func logitsOf(t *testing.T, be *Backend) [][]float32 {
	t.Helper()
	if err := be.AllocateKV(8, 16); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, be: be, bs: 16}
	for i := range 8 {
		h.free = append(h.free, int32(i))
	}
	var s seqState
	rows := [][]float32{slices.Clone(h.feed(&s, prompt(21, 4)))}
	for range 2 {
		rows = append(rows, slices.Clone(h.feed(&s, []int32{argmax32(rows[len(rows)-1])})))
	}
	return rows
}

func newBackend(t *testing.T, cfg model.Config, w *model.Weights, opts ...Option) *Backend {
	t.Helper()
	be, err := New(cfg, w, 2, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	return be
}

// TestPackCache: the first backend writes the cache file, the second maps
// it without packing, and both compute the same bits as a backend packed
// into memory.
func TestPackCache(t *testing.T) {
	cfg, w := packModel()
	dir := filepath.Join(t.TempDir(), "packed") // created by New
	want := logitsOf(t, newBackend(t, cfg, w))

	first := newBackend(t, cfg, w, WithPackCache(dir))
	info := first.PackInfo()
	if info.Err != nil || info.Hit || info.File == "" || info.Bytes == 0 {
		t.Fatalf("first start: %+v, want a new cache file", info)
	}
	if files := cacheFiles(t, dir); len(files) != 1 || files[0] != info.File {
		t.Fatalf("cache holds %v, want only %s", files, info.File)
	}
	second := newBackend(t, cfg, w, WithPackCache(dir))
	if i2 := second.PackInfo(); i2.Err != nil || !i2.Hit || i2.File != info.File || i2.Bytes != info.Bytes {
		t.Fatalf("second start: %+v, want a hit on %s", i2, info.File)
	}
	for name, be := range map[string]*Backend{"written": first, "mapped": second} {
		if got := logitsOf(t, be); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s cache: logits differ from the backend packed in memory", name)
		}
	}

	// Other weights: another key, another file; the first stays.
	cfg2, w2 := randomModel(model.RandomTypes{Matrix: model.Q4_0, Embed: model.Q4_0, Output: model.Q4_0}, noEdit)()
	other := newBackend(t, cfg2, w2, WithPackCache(dir))
	if oi := other.PackInfo(); oi.Hit || oi.File == info.File || len(cacheFiles(t, dir)) != 2 {
		t.Fatalf("other model: %+v, cache %v", oi, cacheFiles(t, dir))
	}
}

// TestPackCacheDamaged: a truncated, rewritten or foreign cache file is
// not used; it is packed and written again, with the same results.
func TestPackCacheDamaged(t *testing.T) {
	cfg, w := packModel()
	dir := t.TempDir()
	want := logitsOf(t, newBackend(t, cfg, w))
	path := newBackend(t, cfg, w, WithPackCache(dir)).PackInfo().File
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func([]byte) []byte{
		"truncated":     func(b []byte) []byte { return b[:len(b)-packPage] },
		"short":         func(b []byte) []byte { return b[:100] },
		"key":           func(b []byte) []byte { b[10] ^= 1; return b },
		"offset":        func(b []byte) []byte { b[48+8] ^= 0x10; return b },
		"matrix header": func(b []byte) []byte { b[packPage+4] ^= 1; return b },
		"empty":         func([]byte) []byte { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, edit(slices.Clone(good)), 0o644); err != nil {
				t.Fatal(err)
			}
			be := newBackend(t, cfg, w, WithPackCache(dir))
			if info := be.PackInfo(); info.Err != nil || info.Hit || info.File != path {
				t.Fatalf("%+v, want %s rewritten", info, path)
			}
			if got := logitsOf(t, be); !slices.EqualFunc(got, want, slices.Equal) {
				t.Error("logits differ after repacking")
			}
			if b, _ := os.ReadFile(path); !slices.Equal(b, good) {
				t.Error("the rewritten file differs from the first one written")
			}
		})
	}
}

// TestPackCacheUnusable: where the cache cannot be written the backend
// packs into memory and says why.
func TestPackCacheUnusable(t *testing.T) {
	cfg, w := packModel()
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := logitsOf(t, newBackend(t, cfg, w))
	be := newBackend(t, cfg, w, WithPackCache(notDir))
	if info := be.PackInfo(); info.Err == nil || info.File != "" || info.Bytes == 0 {
		t.Fatalf("%+v, want packed into memory with the cache's error", info)
	}
	if got := logitsOf(t, be); !slices.EqualFunc(got, want, slices.Equal) {
		t.Error("logits differ")
	}
}

// TestEvictPacked: beyond PackCacheMaxFiles the least recently used files
// go (never the one in use), and stale temporary files with them.
func TestEvictPacked(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	var paths []string
	for i := range PackCacheMaxFiles + 3 {
		p := filepath.Join(dir, fmt.Sprintf("%02d%s", i, packExt))
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := now.Add(-time.Duration(i) * time.Minute) // 00 newest
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	oldTmp := filepath.Join(dir, "ab"+packExt+".tmp123")
	newTmp := filepath.Join(dir, "cd"+packExt+".tmp456")
	for _, p := range []string{oldTmp, newTmp} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(oldTmp, now.Add(-2*time.Hour), now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	keep := paths[len(paths)-1] // the oldest, but just mapped
	evictPacked(dir, keep)
	exists := func(p string) bool { _, err := os.Stat(p); return !errors.Is(err, os.ErrNotExist) }
	for i, p := range paths {
		want := i < PackCacheMaxFiles-1 || p == keep // keep counts against the limit
		if exists(p) != want {
			t.Errorf("%s exists %v, want %v", filepath.Base(p), exists(p), want)
		}
	}
	if exists(oldTmp) || !exists(newTmp) {
		t.Errorf("temporary files: old exists %v (want false), new exists %v (want true)", exists(oldTmp), exists(newTmp))
	}
}

// TestSleepReleasesMemory: sleep mode's releases (enginecore's sleep
// levels). Without a KV cache Forward refuses; after ReleaseWeights the
// mapped matrices fault back in; a new pool computes the same bits.
func TestSleepReleasesMemory(t *testing.T) {
	cfg, w := packModel()
	be := newBackend(t, cfg, w, WithPackCache(t.TempDir()))
	want := logitsOf(t, be)
	be.ReleaseKV()
	step := &runner.Step{TokenIDs: []int32{1}, Positions: []int32{0}, SlotMapping: []int32{0},
		Seqs: []runner.Seq{{Start: 0, Len: 1, ContextLen: 1, BlockTable: []int32{0}, Logits: true}}}
	if err := be.Forward(context.Background(), step, make([]float32, cfg.VocabSize)); !errors.Is(err, ErrNoKVCache) {
		t.Fatalf("Forward after ReleaseKV: %v, want ErrNoKVCache", err)
	}
	be.ReleaseWeights()
	if got := logitsOf(t, be); !slices.EqualFunc(got, want, slices.Equal) {
		t.Error("logits after the releases differ from before")
	}
}
