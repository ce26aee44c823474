package tokenizer_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// Small synthetic tokenizers for tests that need no npm package.

// gpt2Bytes is GPT-2's bytes_to_unicode, written independently of the
// package's table: printable Latin-1 bytes map to themselves, the rest to
// U+0100… in byte order.
func gpt2Bytes() [256]string {
	var out [256]string
	n := 0
	for b := range 256 {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			out[b] = string(rune(b))
		} else {
			out[b] = string(rune(256 + n))
			n++
		}
	}
	return out
}

// Ids of the byte-level fixture: bytes are 0..255 (id = byte value).
const (
	bHe      = 256 + iota // "he"
	bLl                   // "ll"
	bHell                 // "hell"
	bHello                // "hello"
	bSpT                  // "Ġt"
	bSpThe                // "Ġthe"
	bAa                   // "aa"
	bWorld                // "world": in the vocabulary, no merge makes it
	bBOS                  // <|begin_of_text|>, special
	bEOS                  // <|end_of_text|>, special
	bIMStart              // <|im_start|>, special
	bIMEnd                // <|im_end|>, special
	bThink                // <think>, not special
	bEOT                  // <|eot_id|>, special
	bStrip                // <strip>, special, lstrip and rstrip
)

// byteLevelJSON returns a byte-level tokenizer.json (Llama-3 split regex,
// ByteLevel) as a map, for tests to modify before writing it.
func byteLevelJSON() map[string]any {
	bytes := gpt2Bytes()
	vocab := map[string]int{}
	for b, s := range bytes {
		vocab[s] = b
	}
	sp := bytes[' ']
	for id, s := range []string{"he", "ll", "hell", "hello", sp + "t", sp + "the", "aa", "world"} {
		vocab[s] = 256 + id
	}
	added := []map[string]any{}
	for i, a := range []struct {
		text        string
		special, lr bool
	}{
		{"<|begin_of_text|>", true, false}, {"<|end_of_text|>", true, false}, {"<|im_start|>", true, false},
		{"<|im_end|>", true, false}, {"<think>", false, false}, {"<|eot_id|>", true, false}, {"<strip>", true, true},
	} {
		added = append(added, map[string]any{"id": bBOS + i, "content": a.text, "special": a.special,
			"lstrip": a.lr, "rstrip": a.lr, "single_word": false, "normalized": false})
	}
	return map[string]any{
		"version":      "1.0",
		"added_tokens": added,
		"normalizer":   nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "behavior": "Isolated", "invert": false, "pattern": map[string]any{
				"Regex": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`}},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<|begin_of_text|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"special_tokens": map[string]any{"<|begin_of_text|>": map[string]any{"id": "<|begin_of_text|>", "ids": []int{bBOS}, "tokens": []string{"<|begin_of_text|>"}}},
		},
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab,
			// Ranks: "h e" merges first; "Ġ t" before "Ġt he"; "a a" ties go leftmost.
			"merges": []string{"h e", "l l", "he ll", "hell o", sp + " t", sp + "t he", "a a"},
		},
	}
}

// writeHFDir writes tokenizer.json and the optional config files into a new
// temporary directory and returns it. A nil config is not written.
func writeHFDir(t testing.TB, tokJSON, config, genConfig map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, v map[string]any) {
		if v == nil {
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tokenizer.json", tokJSON)
	write("tokenizer_config.json", config)
	write("generation_config.json", genConfig)
	return dir
}

// byteLevelFixture returns the byte-level fixture tokenizer with a
// tokenizer_config.json naming BOS and EOS.
func byteLevelFixture(t testing.TB) *tokenizer.BPE {
	t.Helper()
	dir := writeHFDir(t, byteLevelJSON(), map[string]any{"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}, nil)
	tok, err := tokenizer.FromHFDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Ids of the SentencePiece fixture.
const (
	sUnk  = 0
	sBOS  = 1
	sEOS  = 2
	sByte = 3 // <0x00>; byte b is sByte+b
)

const (
	sSp = 259 + iota // ▁
	sH
	sI
	sSpH
	sHi
	sSpHi
	sSpSp
	sTool // <tool>, user-defined
)

// spmMeta returns GGUF metadata of a tiny SentencePiece ("llama")
// vocabulary. Values use loose Go types ([]any, int, []float64) on purpose:
// FromGGUF must convert them.
func spmMeta() ggufMeta {
	tokens := []any{"<unk>", "<s>", "</s>"}
	types := []any{int64(2), int64(3), int64(3)}
	scores := []float64{0, 0, 0}
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, int64(6))
		scores = append(scores, 0)
	}
	for _, tok := range []struct {
		text  string
		score float64
	}{{"▁", -10}, {"h", -11}, {"i", -12}, {"▁h", -3}, {"hi", -2}, {"▁hi", -1}, {"▁▁", -5}} {
		tokens = append(tokens, tok.text)
		types = append(types, int64(1))
		scores = append(scores, tok.score)
	}
	tokens = append(tokens, "<tool>")
	types = append(types, int64(4))
	scores = append(scores, 0)
	return ggufMeta{
		"general.name":                "tiny-spm",
		"tokenizer.ggml.model":        "llama",
		"tokenizer.ggml.tokens":       tokens,
		"tokenizer.ggml.token_type":   types,
		"tokenizer.ggml.scores":       scores,
		"tokenizer.ggml.bos_token_id": 1,
		"tokenizer.ggml.eos_token_id": uint32(2),
	}
}

func spmFixture(t testing.TB) *tokenizer.BPE {
	t.Helper()
	tok, err := tokenizer.FromGGUF(spmMeta())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
