package lora_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/lora"
)

// FuzzLoad feeds arbitrary bytes as an adapter file: Load returns an
// adapter or an error, never panics, and an adapter it returns has pairs
// of the shapes the base model asked for.
func FuzzLoad(f *testing.F) {
	var b bytes.Buffer
	if err := lora.Random(&b, lora.Spec{Arch: "llama", Alpha: 4, Rank: 2, Shapes: map[string][2]int{
		"blk.0.attn_q.weight": {8, 8}, "blk.1.attn_qkv.weight": {8, 16}, "token_embd.weight": {8, 32}}, Std: 1, Seed: 1}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:len(b.Bytes())/2])
	f.Add([]byte("GGUF"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "a.gguf")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := lora.Load(p, base(0))
		if err != nil {
			return
		}
		for l := range a.Layers {
			for tg, pr := range a.Layers[l] {
				if pr == nil {
					continue
				}
				if len(pr.A) != pr.R*pr.In || len(pr.Bt) != pr.R*pr.Out || pr.R < 1 {
					t.Fatalf("layer %d %v: pair %d×%d rank %d with %d and %d values", l, lora.Target(tg), pr.Out, pr.In, pr.R, len(pr.A), len(pr.Bt))
				}
			}
		}
		if e := a.Embed; e != nil && len(e.A) != e.In*e.R {
			t.Fatalf("token_embd: %d values for %d×%d", len(e.A), e.In, e.R)
		}
	})
}
