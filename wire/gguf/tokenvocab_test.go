package gguf_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVocab: what each token stands for, for both vocabulary styles.
func TestVocab(t *testing.T) {
	type kv = struct {
		key string
		v   any
	}
	tests := []struct {
		name        string
		model       string
		tokens      []string
		types       []int32
		wantPieces  []string
		wantSpecial []bool
	}{
		{"byte-level", "gpt2",
			[]string{"<|endoftext|>", "Ġhello", "Ã©", "x", "<0x0A>", "<extra>", "unused"},
			[]int32{3, 1, 1, 1, 6, 4, 5},
			[]string{"<|endoftext|>", " hello", "é", "x", "\n", "<extra>", ""},
			[]bool{true, false, false, false, false, false, false}},
		{"sentencepiece", "llama",
			[]string{"<unk>", "<s>", "▁the", "<0xE2>", "é"},
			[]int32{2, 3, 1, 6, 1},
			[]string{"<unk>", "<s>", " the", "\xe2", "é"},
			[]bool{true, true, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := parseKVs(t, []kv{{"tokenizer.ggml.model", tt.model}, {"tokenizer.ggml.tokens", tt.tokens}, {"tokenizer.ggml.token_type", tt.types}})
			v, err := md.Vocab()
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(v.Pieces))
			for i, p := range v.Pieces {
				got[i] = string(p)
			}
			if diff := cmp.Diff(tt.wantPieces, got); diff != "" {
				t.Errorf("pieces (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSpecial, v.Special); diff != "" {
				t.Errorf("special (-want +got):\n%s", diff)
			}
		})
	}
	md := parseKVs(t, []kv{{"tokenizer.ggml.model", "bert"}, {"tokenizer.ggml.tokens", []string{"a"}}})
	if _, err := md.Vocab(); err == nil {
		t.Error("a bert vocabulary was read")
	}
}
