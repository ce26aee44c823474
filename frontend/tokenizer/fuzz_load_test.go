package tokenizer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// fuzzTexts are encoded by every tokenizer a fuzzer manages to build.
var fuzzTexts = []string{"", "hello the world", "<|im_start|>x<|im_end|>", "\xff\xfe é🙂", "  \n\t"}

// checkBuilt encodes fuzzTexts with a tokenizer built from hostile input: ids stay in
// the vocabulary and decoding them does not panic.
func checkBuilt(t *testing.T, tok *tokenizer.BPE) {
	t.Helper()
	for _, s := range fuzzTexts {
		ids := tok.Encode(s, true)
		checkIDs(t, tok, s, ids)
		_ = tok.Decode(ids, false)
		_ = tok.Decode(ids, true)
	}
}

// FuzzFromHFDir builds tokenizers from hostile tokenizer.json and tokenizer_config.json
// files (huge or negative ids, missing merges, bad regexes, wrong types): FromHFDir
// returns an error or a tokenizer whose ids stay in its vocabulary. Never a panic, and
// never an allocation sized by an id instead of by the file.
func FuzzFromHFDir(f *testing.F) {
	good, err := json.Marshal(byteLevelJSON())
	if err != nil {
		f.Fatal(err)
	}
	cfg := []byte(`{"bos_token":"<|begin_of_text|>","eos_token":"<|end_of_text|>","add_bos_token":true,"chat_template":"{{ messages }}"}`)
	f.Add(good, cfg)
	f.Add(good[:len(good)/2], cfg)
	f.Add(good, []byte(`{"bos_token":{"content":"<s>"},"eos_token":5,"add_bos_token":"yes"}`))
	hostile := []func(m map[string]any){
		func(m map[string]any) { m["model"].(map[string]any)["vocab"].(map[string]int)["zz"] = 2147483647 },
		func(m map[string]any) { m["model"].(map[string]any)["vocab"].(map[string]int)["zz"] = 1<<24 + 5 },
		func(m map[string]any) { m["model"].(map[string]any)["vocab"].(map[string]int)["zz"] = -5 },
		func(m map[string]any) { m["model"].(map[string]any)["merges"] = []string{"q q", "x", "a a a"} },
		func(m map[string]any) { m["added_tokens"] = []map[string]any{{"id": 1 << 30, "content": "<big>"}} },
		func(m map[string]any) { m["added_tokens"] = []map[string]any{{"id": 3, "content": ""}} },
		func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "(?<=x"}, "behavior": "Isolated"}
		},
		func(m map[string]any) { m["model"].(map[string]any)["type"] = "Unigram" },
		func(m map[string]any) { m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{7}} },
	}
	for _, edit := range hostile {
		m := byteLevelJSON()
		edit(m)
		b, err := json.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, cfg)
	}
	// Without add_bos_token the post_processor's ids are added to every prompt:
	// ids it names outside the vocabulary are refused.
	for _, edit := range []func(m map[string]any){
		func(m map[string]any) { m["added_tokens"] = []map[string]any{} },
		func(m map[string]any) {
			m["post_processor"].(map[string]any)["special_tokens"].(map[string]any)["<|begin_of_text|>"].(map[string]any)["ids"] = []int{-7, 1 << 30}
		},
	} {
		m := byteLevelJSON()
		edit(m)
		b, err := json.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte(`{}`))
	}
	f.Fuzz(func(t *testing.T, tokJSON, configJSON []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokJSON, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), configJSON, 0o644); err != nil {
			t.Fatal(err)
		}
		tok, err := tokenizer.FromHFDir(dir)
		if err != nil {
			return
		}
		checkBuilt(t, tok)
	})
}

// FuzzFromGGUF builds tokenizers from hostile GGUF metadata: the token list, token
// types, merges and special ids come from the fuzzer (ids out of range, counts that
// disagree, unknown models). FromGGUF returns an error or a working tokenizer.
func FuzzFromGGUF(f *testing.F) {
	spm := spmMeta()
	toks := spm["tokenizer.ggml.tokens"].([]any)
	var texts []string
	for _, x := range toks {
		texts = append(texts, x.(string))
	}
	var types []byte
	for _, x := range spm["tokenizer.ggml.token_type"].([]any) {
		types = append(types, byte(x.(int64)))
	}
	joined := strings.Join(texts, "\x00")
	f.Add("llama", "", joined, types, "", int64(1), int64(2))
	f.Add("gpt2", "llama-bpe", "a\x00b\x00ab\x00Ġ", []byte{1, 1, 1, 1}, "a b\x00ab Ġ", int64(0), int64(99))
	f.Add("gpt2", "qwen2", "x", []byte{}, "x x x", int64(-1), int64(1<<40))
	f.Add("bert", "", "", []byte{7}, "", int64(0), int64(0))
	f.Fuzz(func(t *testing.T, model, pre, tokens string, tokenTypes []byte, merges string, bos, eos int64) {
		md := ggufMeta{"tokenizer.ggml.model": model}
		if pre != "" {
			md["tokenizer.ggml.pre"] = pre
		}
		tl := strings.Split(tokens, "\x00")
		if len(tl) > 4096 {
			tl = tl[:4096]
		}
		list := make([]any, len(tl))
		scores := make([]float64, len(tl))
		for i, s := range tl {
			list[i], scores[i] = s, float64(-i)
		}
		md["tokenizer.ggml.tokens"] = list
		md["tokenizer.ggml.scores"] = scores
		tt := make([]any, len(tokenTypes))
		for i, b := range tokenTypes {
			tt[i] = int64(b % 8)
		}
		md["tokenizer.ggml.token_type"] = tt
		if merges != "" {
			md["tokenizer.ggml.merges"] = strings.Split(merges, "\x00")
		}
		md["tokenizer.ggml.bos_token_id"] = bos
		md["tokenizer.ggml.eos_token_id"] = eos
		tok, err := tokenizer.FromGGUF(md)
		if err != nil {
			return
		}
		checkBuilt(t, tok)
	})
}
