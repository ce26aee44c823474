package testmodel

import (
	"fmt"
	"os"
	"strings"

	"github.com/tandem-llm/tandem/wire/gguf"
)

// Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
const (
	tokenNormal  int32 = 1
	tokenUnknown int32 = 2
	tokenControl int32 = 3
	tokenUnused  int32 = 5
	tokenByte    int32 = 6
)

// ByteVocab is a SentencePiece-style ("llama" model) byte-fallback
// vocabulary of n tokens, as tokenizer.* metadata: 0 <unk>, 1 <s> (BOS),
// 2 </s> (EOS), 3..258 the bytes <0x00>..<0xFF>, then "▁", the printable
// ASCII characters and <unused_N> fillers, as many as fit. It is nil when
// n < 259 (no room for the bytes).
func ByteVocab(n int) map[string]any {
	if n < 259 {
		return nil
	}
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{tokenUnknown, tokenControl, tokenControl}
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, tokenByte)
	}
	tokens = append(tokens, "\u2581")
	types = append(types, tokenNormal)
	for c := byte(0x21); c < 0x7f; c++ {
		tokens = append(tokens, string(c))
		types = append(types, tokenNormal)
	}
	for i := 0; len(tokens) < n; i++ {
		tokens = append(tokens, fmt.Sprintf("<unused_%d>", i))
		types = append(types, tokenUnused)
	}
	tokens, types = tokens[:n], types[:n]
	scores := make([]float32, n)
	for i := range scores {
		if types[i] == tokenNormal {
			scores[i] = -float32(i) / 100 // earlier pieces win
		}
	}
	return map[string]any{
		"tokenizer.ggml.model":            "llama",
		"tokenizer.ggml.tokens":           tokens,
		"tokenizer.ggml.scores":           scores,
		"tokenizer.ggml.token_type":       types,
		"tokenizer.ggml.bos_token_id":     uint32(1),
		"tokenizer.ggml.eos_token_id":     uint32(2),
		"tokenizer.ggml.unknown_token_id": uint32(0),
		"tokenizer.ggml.add_bos_token":    true,
		"tokenizer.ggml.add_eos_token":    false,
	}
}

// ReadTokenizer returns the tokenizer.* metadata of the GGUF file at path
// (e.g. llama.cpp's models/ggml-vocab-llama-bpe.gguf), for Spec.Tokenizer.
func ReadTokenizer(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("testmodel: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("testmodel: %w", err)
	}
	md, err := gguf.ParseMetadata(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("testmodel: %s: %w", path, err)
	}
	tok := map[string]any{}
	for _, k := range md.Keys() {
		if strings.HasPrefix(k, "tokenizer.") {
			tok[k], _ = md.KV(k)
		}
	}
	return tok, nil
}
