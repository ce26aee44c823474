package tokenizer_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

func TestByteLevelEncode(t *testing.T) {
	tests := []struct {
		name string
		text string
		opt  tokenizer.EncodeOptions
		want []int32
	}{
		{name: "empty", text: "", want: []int32{}},
		{name: "merged word", text: "hello", want: []int32{bHello}},
		{name: "space word", text: "hello the", want: []int32{bHello, bSpThe}},
		{name: "lowest rank merges first", text: " th", want: []int32{bSpT, 'h'}},
		{name: "equal ranks merge leftmost", text: "aaa", want: []int32{bAa, 'a'}},
		{name: "repeated pair", text: "aaaa", want: []int32{bAa, bAa}},
		{name: "no merge path", text: "world", want: bytesOf("world")},
		{name: "special tokens parsed", text: "<|im_start|>hello<|im_end|>", opt: tokenizer.EncodeOptions{ParseSpecial: true},
			want: []int32{bIMStart, bHello, bIMEnd}},
		{name: "special tokens as text", text: "<|im_end|>", want: bytesOf("<|im_end|>")},
		{name: "user-defined split either way", text: "a<think>", want: []int32{'a', bThink}},
		{name: "user-defined parsed", text: "a<think>", opt: tokenizer.EncodeOptions{ParseSpecial: true}, want: []int32{'a', bThink}},
		{name: "lstrip and rstrip absorb spaces", text: "a  <strip> \nb", opt: tokenizer.EncodeOptions{ParseSpecial: true},
			want: []int32{'a', bStrip, 'b'}},
		{name: "partial special is text", text: "hello<|im_start", opt: tokenizer.EncodeOptions{ParseSpecial: true},
			want: append([]int32{bHello}, bytesOf("<|im_start")...)},
		{name: "invalid utf8 bytes", text: "\xff\xfe", want: []int32{0xFF, 0xFE}},
		{name: "addSpecial adds BOS", text: "hello", opt: tokenizer.EncodeOptions{AddSpecial: true}, want: []int32{bBOS, bHello}},
		{name: "addSpecial on empty text", text: "", opt: tokenizer.EncodeOptions{AddSpecial: true}, want: []int32{bBOS}},
	}
	tok := byteLevelFixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tok.EncodeWith(tt.text, tt.opt)); diff != "" {
				t.Errorf("EncodeWith(%q, %+v) (-want +got):\n%s", tt.text, tt.opt, diff)
			}
		})
	}
	if diff := cmp.Diff([]int32{bBOS, bIMStart}, tok.Encode("<|im_start|>", true)); diff != "" {
		t.Errorf("Encode parses special tokens and adds BOS (-want +got):\n%s", diff)
	}
}

func TestByteLevelDecode(t *testing.T) {
	tests := []struct {
		name        string
		ids         []int32
		skipSpecial bool
		want        string
	}{
		{name: "nil", want: ""},
		{name: "words", ids: []int32{bHello, bSpThe}, want: "hello the"},
		{name: "special kept", ids: []int32{bBOS, bHello, bIMEnd}, want: "<|begin_of_text|>hello<|im_end|>"},
		{name: "special skipped, user-defined kept", ids: []int32{bBOS, bThink, bHello, bIMEnd}, skipSpecial: true, want: "<think>hello"},
		{name: "out of range skipped", ids: []int32{'a', 100000, -1, 'b'}, want: "ab"},
		{name: "partial utf8 kept raw", ids: []int32{0xC3}, want: "\xc3"},
		{name: "space byte", ids: []int32{' ', ' '}, want: "  "},
	}
	tok := byteLevelFixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tok.Decode(tt.ids, tt.skipSpecial)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestByteLevelVocab(t *testing.T) {
	tok := byteLevelFixture(t)
	if got := tok.VocabSize(); got != bStrip+1 {
		t.Errorf("VocabSize = %d, want %d", got, bStrip+1)
	}
	tests := []struct {
		id          int32
		wantBytes   string
		wantOK      bool
		wantSpecial bool
	}{
		{id: ' ', wantBytes: " ", wantOK: true},
		{id: 0, wantBytes: "\x00", wantOK: true},
		{id: bSpThe, wantBytes: " the", wantOK: true},
		{id: bBOS, wantBytes: "<|begin_of_text|>", wantOK: true, wantSpecial: true},
		{id: bThink, wantBytes: "<think>", wantOK: true},
		{id: bStrip + 1},
		{id: -1},
	}
	for _, tt := range tests {
		b, ok := tok.TokenBytes(tt.id)
		if string(b) != tt.wantBytes || ok != tt.wantOK {
			t.Errorf("TokenBytes(%d) = %q, %v; want %q, %v", tt.id, b, ok, tt.wantBytes, tt.wantOK)
		}
		if got := tok.IsSpecial(tt.id); got != tt.wantSpecial {
			t.Errorf("IsSpecial(%d) = %v, want %v", tt.id, got, tt.wantSpecial)
		}
	}
	if text, _ := tok.TokenText(bSpThe); text != "Ġthe" {
		t.Errorf("TokenText(Ġthe) = %q", text)
	}
	if bos, ok := tok.BOS(); !ok || bos != bBOS || !tok.AddBOS() || tok.BOSText() != "<|begin_of_text|>" {
		t.Errorf("BOS = %d, %v; AddBOS = %v; BOSText = %q", bos, ok, tok.AddBOS(), tok.BOSText())
	}
	if tok.EOSText() != "<|end_of_text|>" {
		t.Errorf("EOSText = %q", tok.EOSText())
	}
	// EOS first, then end-of-turn tokens found by text.
	if diff := cmp.Diff([]int32{bEOS, bEOT, bIMEnd}, tok.EOS()); diff != "" {
		t.Errorf("EOS (-want +got):\n%s", diff)
	}
	eos := tok.EOS()
	eos[0] = 7
	if tok.EOS()[0] != bEOS {
		t.Error("EOS returned the tokenizer's own slice")
	}
}

// TestHFConfig checks what tokenizer_config.json, generation_config.json,
// chat_template.jinja and tokenizer.json options change.
func TestHFConfig(t *testing.T) {
	tests := []struct {
		name       string
		edit       func(tj map[string]any)
		config     map[string]any
		gen        map[string]any
		jinja      string
		text       string
		wantIDs    []int32 // Encode(text, true)
		wantEOS    []int32
		wantChat   string
		wantAddBOS bool
	}{
		{
			name: "post-processor adds BOS", config: map[string]any{"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"},
			text: "hello", wantIDs: []int32{bBOS, bHello}, wantEOS: []int32{bEOS, bEOT, bIMEnd}, wantAddBOS: true,
		},
		{
			name: "add_bos_token false wins over the template", config: map[string]any{"bos_token": "<|begin_of_text|>", "add_bos_token": false},
			text: "hello", wantIDs: []int32{bHello}, wantEOS: []int32{bEOT, bIMEnd, bEOS},
		},
		{
			name:   "add_eos_token and AddedToken objects",
			config: map[string]any{"bos_token": map[string]any{"content": "<|begin_of_text|>"}, "eos_token": map[string]any{"content": "<|im_end|>", "special": true}, "add_eos_token": true},
			text:   "hello", wantIDs: []int32{bBOS, bHello, bIMEnd}, wantEOS: []int32{bIMEnd, bEOT, bEOS}, wantAddBOS: true,
		},
		{
			name: "no post-processor, no config", edit: func(tj map[string]any) { tj["post_processor"] = nil },
			text: "hello", wantIDs: []int32{bHello}, wantEOS: []int32{bEOT, bIMEnd, bEOS},
		},
		{
			name: "generation_config eos ids", config: map[string]any{"eos_token": nil}, gen: map[string]any{"eos_token_id": []int{bIMEnd, bThink}},
			text: "hello", wantIDs: []int32{bBOS, bHello}, wantEOS: []int32{bIMEnd, bThink, bEOT, bEOS},
		},
		{
			name: "generation_config single eos id", gen: map[string]any{"eos_token_id": bEOS, "bos_token_id": bBOS},
			text: "hello", wantIDs: []int32{bBOS, bHello}, wantEOS: []int32{bEOS, bEOT, bIMEnd}, wantAddBOS: true,
		},
		{
			name:   "chat template list takes default",
			config: map[string]any{"chat_template": []any{map[string]any{"name": "tool_use", "template": "T"}, map[string]any{"name": "default", "template": "D"}}},
			text:   "hello", wantIDs: []int32{bBOS, bHello}, wantEOS: []int32{bEOT, bIMEnd, bEOS}, wantChat: "D",
		},
		{
			name: "chat_template.jinja", jinja: "J", text: "hello", wantIDs: []int32{bBOS, bHello}, wantEOS: []int32{bEOT, bIMEnd, bEOS}, wantChat: "J",
		},
		{
			name: "ignore_merges", edit: func(tj map[string]any) { tj["model"].(map[string]any)["ignore_merges"] = true },
			text: "world hello", wantIDs: []int32{bBOS, bWorld, ' ', bHello}, wantEOS: []int32{bEOT, bIMEnd, bEOS},
		},
		{
			name: "merges as pairs", edit: func(tj map[string]any) {
				m := tj["model"].(map[string]any)
				var pairs [][2]string
				for _, l := range m["merges"].([]string) {
					a, b, _ := strings.Cut(l, " ")
					pairs = append(pairs, [2]string{a, b})
				}
				m["merges"] = pairs
			},
			text: "hello the", wantIDs: []int32{bBOS, bHello, bSpThe}, wantEOS: []int32{bEOT, bIMEnd, bEOS},
		},
		{
			name: "ByteLevel regex and prefix space", edit: func(tj map[string]any) {
				tj["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}
			},
			text: "the", wantIDs: []int32{bBOS, bSpThe}, wantEOS: []int32{bEOT, bIMEnd, bEOS},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tj := byteLevelJSON()
			if tt.edit != nil {
				tt.edit(tj)
			}
			dir := writeHFDir(t, tj, tt.config, tt.gen)
			if tt.jinja != "" {
				if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(tt.jinja), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tok, err := tokenizer.FromHFDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantIDs, tok.Encode(tt.text, true)); diff != "" {
				t.Errorf("Encode(%q, true) (-want +got):\n%s", tt.text, diff)
			}
			if diff := cmp.Diff(tt.wantEOS, tok.EOS()); diff != "" {
				t.Errorf("EOS (-want +got):\n%s", diff)
			}
			if got := tok.ChatTemplateSource(); got != tt.wantChat {
				t.Errorf("ChatTemplateSource = %q, want %q", got, tt.wantChat)
			}
			if got := tok.AddBOS(); got != tt.wantAddBOS {
				t.Errorf("AddBOS = %v, want %v", got, tt.wantAddBOS)
			}
		})
	}
}

func TestHFErrors(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(tj map[string]any)
		wantErr error
	}{
		{"model type", func(tj map[string]any) { tj["model"].(map[string]any)["type"] = "WordPiece" }, tokenizer.ErrUnsupported},
		{"pre-tokenizer type", func(tj map[string]any) { tj["pre_tokenizer"] = map[string]any{"type": "Whitespace"} }, tokenizer.ErrUnsupported},
		{"split behavior", func(tj map[string]any) {
			tj["pre_tokenizer"] = map[string]any{"type": "Split", "behavior": "Removed", "pattern": map[string]any{"Regex": "a"}}
		}, tokenizer.ErrUnsupported},
		{"bad regex", func(tj map[string]any) {
			tj["pre_tokenizer"] = map[string]any{"type": "Split", "behavior": "Isolated", "pattern": map[string]any{"Regex": "(a"}}
		}, tokenizer.ErrUnsupported},
		{"pre-tokenizer after ByteLevel", func(tj map[string]any) {
			tj["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "ByteLevel"}, map[string]any{"type": "Digits"}}}
		}, tokenizer.ErrUnsupported},
		{"no decoder", func(tj map[string]any) { tj["decoder"] = nil }, tokenizer.ErrUnsupported},
		{"decoder mismatch", func(tj map[string]any) { tj["decoder"] = map[string]any{"type": "Metaspace"} }, tokenizer.ErrUnsupported},
		{"normalizer type", func(tj map[string]any) { tj["normalizer"] = map[string]any{"type": "BertNormalizer"} }, tokenizer.ErrUnsupported},
		{"merge not a pair", func(tj map[string]any) { tj["model"].(map[string]any)["merges"] = []string{"abc"} }, tokenizer.ErrInvalid},
		{"subword prefix", func(tj map[string]any) { tj["model"].(map[string]any)["continuing_subword_prefix"] = "##" }, tokenizer.ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tj := byteLevelJSON()
			tt.edit(tj)
			_, err := tokenizer.FromHFDir(writeHFDir(t, tj, nil, nil))
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	if _, err := tokenizer.FromHFDir(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing tokenizer.json: err = %v, want ErrNotExist", err)
	}
	dir := writeHFDir(t, byteLevelJSON(), nil, nil)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tokenizer.FromHFDir(dir); !errors.Is(err, tokenizer.ErrInvalid) {
		t.Errorf("bad tokenizer_config.json: err = %v, want ErrInvalid", err)
	}
}

// TestSentencePieceHF checks a Llama-2 style tokenizer.json: Prepend and
// Replace normalizers, BPE with byte fallback and <unk>, and the
// Replace/ByteFallback/Fuse/Strip decoder.
func TestSentencePieceHF(t *testing.T) {
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := range 256 {
		vocab[byteTokenText(b)] = 3 + b
	}
	for i, s := range []string{"▁", "h", "i", "▁h", "hi", "▁hi"} {
		vocab[s] = 259 + i
	}
	tj := map[string]any{
		"added_tokens": []any{
			map[string]any{"id": 0, "content": "<unk>", "special": true},
			map[string]any{"id": 1, "content": "<s>", "special": true},
			map[string]any{"id": 2, "content": "</s>", "special": true},
		},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		}},
		"pre_tokenizer": nil,
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": map[string]any{"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
			"vocab": vocab, "merges": []string{"h i", "▁ h", "▁ hi"}},
	}
	tok, err := tokenizer.FromHFDir(writeHFDir(t, tj, map[string]any{"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true}, nil))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		text string
		want []int32
	}{
		{"prefix space", "hi hi", []int32{264, 264}},
		{"byte fallback", "h😀", []int32{262, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80}},
		{"special resets prefix", "hi<s>hi", []int32{264, 1, 264}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tok.Encode(tt.text, false)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !strings.Contains(tt.text, "<s>") {
				if got := tok.Decode(tok.Encode(tt.text, true), true); got != tt.text {
					t.Errorf("round trip = %q", got)
				}
			}
		})
	}
	if got := tok.Decode([]int32{1, 264}, false); got != "<s> hi" {
		t.Errorf("Decode with BOS = %q, want %q", got, "<s> hi")
	}

	// The same vocabulary with a Metaspace pre-tokenizer and decoder
	// (prepend_scheme first: only the start of the input gets ▁).
	tj["normalizer"] = nil
	tj["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false}
	tj["decoder"] = map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false}
	meta, err := tokenizer.FromHFDir(writeHFDir(t, tj, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int32{264, 264, 1, 263}, meta.Encode("hi hi<s>hi", false)); diff != "" {
		t.Errorf("Metaspace Encode (-want +got):\n%s", diff)
	}
	if got := meta.Decode([]int32{264, 264}, false); got != "hi hi" {
		t.Errorf("Metaspace Decode = %q, want %q", got, "hi hi")
	}
}

func byteTokenText(b int) string {
	const hex = "0123456789ABCDEF"
	return "<0x" + string(hex[b>>4]) + string(hex[b&15]) + ">"
}

func TestChatTemplate(t *testing.T) {
	msgs := []tokenizer.Message{{Role: "user", Content: "Hi"}}
	// No template source: ChatML.
	tok := byteLevelFixture(t)
	if tok.ChatTemplateSource() != "" {
		t.Fatalf("source = %q", tok.ChatTemplateSource())
	}
	if got, err := tok.ChatTemplate().Render(msgs, true, nil); err != nil || got != "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("ChatML Render = %q, %v", got, err)
	}
	// A source that was not compiled fails instead of rendering ChatML.
	md := spmMeta()
	md["tokenizer.chat_template"] = "{{ messages }}"
	spm, err := tokenizer.FromGGUF(md)
	if err != nil {
		t.Fatal(err)
	}
	if spm.ChatTemplateSource() != "{{ messages }}" {
		t.Errorf("source = %q", spm.ChatTemplateSource())
	}
	_, err = spm.ChatTemplate().Render(msgs, true, nil)
	if !errors.Is(err, tokenizer.ErrTemplate) || !errors.Is(err, tokenizer.ErrNoTemplate) {
		t.Errorf("Render before SetChatTemplate: err = %v, want ErrTemplate and ErrNoTemplate", err)
	}
	spm.SetChatTemplate(fixedTemplate("rendered"))
	if got, err := spm.ChatTemplate().Render(msgs, true, nil); err != nil || got != "rendered" {
		t.Errorf("Render after SetChatTemplate = %q, %v", got, err)
	}
}

type fixedTemplate string

func (f fixedTemplate) Render([]tokenizer.Message, bool, map[string]any) (string, error) {
	return string(f), nil
}

// TestConcurrentEncode runs Encode from several goroutines (the word cache
// is shared); run with -race.
func TestConcurrentEncode(t *testing.T) {
	tok := byteLevelFixture(t)
	want := tok.Encode("hello the world aaaa", false)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				text := strings.Repeat("hello the world aaaa ", 1+(g+i)%3)
				got := tok.Encode(text, false)
				if len(got) < len(want) || !cmp.Equal(want, got[:len(want)]) {
					t.Errorf("goroutine %d: Encode(%q) = %v", g, text, got)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestLoad(t *testing.T) {
	dir := writeHFDir(t, byteLevelJSON(), nil, nil)
	for _, path := range []string{dir, filepath.Join(dir, "tokenizer.json")} {
		tok, err := tokenizer.Load(path)
		if err != nil {
			t.Fatalf("Load(%s): %v", path, err)
		}
		if diff := cmp.Diff([]int32{bHello}, tok.Encode("hello", false)); diff != "" {
			t.Errorf("Load(%s) Encode (-want +got):\n%s", path, diff)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "other.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		wantErr error
	}{
		{"model.gguf", os.ErrNotExist},
		{"missing", os.ErrNotExist},
		{"other.txt", tokenizer.ErrUnsupported},
	}
	for _, tt := range tests {
		if _, err := tokenizer.Load(filepath.Join(dir, tt.name)); !errors.Is(err, tt.wantErr) {
			t.Errorf("Load(%s): err = %v, want %v", tt.name, err, tt.wantErr)
		}
	}
}

// TestLoadGGUF loads a real llama.cpp vocab GGUF through Load (which reads
// only the metadata with wire/gguf) and checks it tokenizes like the
// golden test's FromGGUF path.
func TestLoadGGUF(t *testing.T) {
	src := os.Getenv("TANDEM_LLAMA_CPP_SRC")
	path := filepath.Join(src, "models", "ggml-vocab-gpt-2.gguf")
	if _, err := os.Stat(path); src == "" || err != nil {
		t.Skip("TANDEM_LLAMA_CPP_SRC unset or without models/ggml-vocab-gpt-2.gguf (make test extracts it with scripts/oracle.sh)")
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	text := "Hello world, it's 2026!"
	if got := tok.Decode(tok.Encode(text, false), false); got != text {
		t.Fatalf("round trip %q → %q", text, got)
	}
	if n := len(tok.Encode(text, false)); n < 4 || n > len(text) {
		t.Fatalf("%d tokens for %q", n, text)
	}
}
