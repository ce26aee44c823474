package tokenizer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

var roundTripSeeds = []string{
	"", "hello the world", " aaaa", "<|im_start|>user\nhi<|im_end|>", "<think>x</think>", "a <strip> b",
	"\xff\xfe\xc3", "é🙂 日本", "latest\n```\n\n##", "  \t\n\n  x  ", "hi<s>hi", "<tool> ▁x", "'S 'll 123456",
}

// FuzzRoundTrip checks that encoding never panics, yields only valid ids,
// and that byte-level BPE is lossless for any bytes (SentencePiece: for valid
// UTF-8 without ▁ and added tokens). It uses the synthetic tokenizers, and the
// llama-bpe and qwen2 vocabs when TANDEM_LLAMA_CPP_SRC is set.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range roundTripSeeds {
		f.Add(s)
	}
	byteLevel := []*tokenizer.BPE{byteLevelFixture(f)}
	if src := os.Getenv("TANDEM_LLAMA_CPP_SRC"); src != "" {
		for _, v := range []string{"llama-bpe", "qwen2"} {
			byteLevel = append(byteLevel, loadGGUF(f, src, filepath.Join("models", "ggml-vocab-"+v+".gguf")))
		}
	}
	spm := spmFixture(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range byteLevel {
			plain := tok.EncodeWith(s, tokenizer.EncodeOptions{})
			checkIDs(t, tok, s, plain)
			if got := tok.Decode(plain, false); got != s {
				t.Fatalf("byte-level Decode(EncodeWith(%q)) = %q", s, got)
			}
			parsed := tok.Encode(s, true)
			checkIDs(t, tok, s, parsed)
			want := s
			if tok.AddBOS() {
				want = tok.BOSText() + s
			}
			if got := tok.Decode(parsed, false); !strings.Contains(s, "<strip>") && got != want {
				t.Fatalf("byte-level Decode(Encode(%q, true)) = %q", s, got)
			}
		}
		ids := spm.EncodeWith(s, tokenizer.EncodeOptions{})
		checkIDs(t, spm, s, ids)
		// SentencePiece splits text into UTF-8 characters; with invalid UTF-8 a
		// character can swallow part of a ▁, which then decodes as raw bytes.
		lossless := utf8.ValidString(s) && !strings.Contains(s, "▁") && !strings.Contains(s, "<tool>")
		if got := spm.Decode(ids, false); lossless && got != s {
			t.Fatalf("SentencePiece Decode(EncodeWith(%q)) = %q", s, got)
		}
		checkIDs(t, spm, s, spm.Encode(s, true))
	})
}

func checkIDs(t *testing.T, tok *tokenizer.BPE, s string, ids []int32) {
	t.Helper()
	for _, id := range ids {
		if id < 0 || int(id) >= tok.VocabSize() {
			t.Fatalf("Encode(%q) gave id %d outside [0, %d)", s, id, tok.VocabSize())
		}
	}
	// At most one id per byte of the normalized text (each space may become a
	// 3-byte ▁), plus BOS and EOS.
	if len(ids) > 3*len(s)+len("▁")+2 {
		t.Fatalf("Encode(%q): %d ids for %d bytes", s, len(ids), len(s))
	}
}
