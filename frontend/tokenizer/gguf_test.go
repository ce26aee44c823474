package tokenizer_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

func byteIDs(s string) []int32 {
	ids := make([]int32, len(s))
	for i := range len(s) {
		ids[i] = sByte + int32(s[i])
	}
	return ids
}

func TestSentencePieceGGUF(t *testing.T) {
	tests := []struct {
		name string
		text string
		opt  tokenizer.EncodeOptions
		want []int32
	}{
		{name: "empty", text: "", want: nil},
		{name: "highest score merges first", text: "hi hi", want: []int32{sSpHi, sSpHi}},
		{name: "leading space", text: " hi", want: []int32{sSp, sSpHi}},
		{name: "byte fallback", text: "h😀", want: append([]int32{sSpH}, byteIDs("😀")...)},
		{name: "BOS", text: "hi", opt: tokenizer.EncodeOptions{AddSpecial: true}, want: []int32{sBOS, sSpHi}},
		{name: "control token parsed, prefix after it", text: "<s>hi", opt: tokenizer.EncodeOptions{ParseSpecial: true}, want: []int32{sBOS, sSpHi}},
		{name: "control token as text", text: "<s>hi", want: append(append([]int32{sSp}, byteIDs("<s>")...), sHi)},
		{name: "user-defined split either way", text: "<tool>hi", want: []int32{sTool, sSpHi}},
		{name: "unknown token parsed", text: "<unk>", opt: tokenizer.EncodeOptions{ParseSpecial: true}, want: []int32{sUnk}},
	}
	tok := spmFixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tok.EncodeWith(tt.text, tt.opt), nilIsEmpty); diff != "" {
				t.Errorf("EncodeWith(%q, %+v) (-want +got):\n%s", tt.text, tt.opt, diff)
			}
		})
	}
	decodes := []struct {
		ids         []int32
		skipSpecial bool
		want        string
	}{
		{ids: []int32{sSpHi, sSpHi}, want: "hi hi"},
		{ids: []int32{sSp, sSpHi}, want: " hi"},
		{ids: []int32{sBOS, sSpHi}, want: "<s> hi"},
		{ids: []int32{sBOS, sSpHi, sEOS}, skipSpecial: true, want: "hi"},
		{ids: append([]int32{sSpH}, byteIDs("😀")...), want: "h😀"},
		{ids: []int32{sTool, sSpHi}, skipSpecial: true, want: "<tool> hi"},
	}
	for _, d := range decodes {
		if got := tok.Decode(d.ids, d.skipSpecial); got != d.want {
			t.Errorf("Decode(%v, %v) = %q, want %q", d.ids, d.skipSpecial, got, d.want)
		}
	}
	for id, want := range map[int32]string{sSpHi: " hi", sByte + 'A': "A", sTool: "<tool>", sBOS: "<s>"} {
		if b, ok := tok.TokenBytes(id); !ok || string(b) != want {
			t.Errorf("TokenBytes(%d) = %q, %v; want %q", id, b, ok, want)
		}
	}
	if !tok.IsSpecial(sUnk) || !tok.IsSpecial(sBOS) || tok.IsSpecial(sTool) || tok.IsSpecial(sSpHi) {
		t.Error("IsSpecial: want <unk> and <s> special, <tool> and ▁hi not")
	}
	if diff := cmp.Diff([]int32{sEOS}, tok.EOS()); diff != "" {
		t.Errorf("EOS (-want +got):\n%s", diff)
	}
	if !tok.AddBOS() || tok.BOSText() != "<s>" || tok.EOSText() != "</s>" {
		t.Errorf("AddBOS = %v, BOSText = %q, EOSText = %q", tok.AddBOS(), tok.BOSText(), tok.EOSText())
	}
}

func TestSentencePieceGGUFOptions(t *testing.T) {
	md := spmMeta()
	md["tokenizer.ggml.add_space_prefix"] = false
	md["tokenizer.ggml.add_bos_token"] = false
	md["tokenizer.ggml.add_eos_token"] = true
	md["tokenizer.ggml.eot_token_id"] = int32(sTool)
	tok, err := tokenizer.FromGGUF(md)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int32{sHi, sEOS}, tok.Encode("hi", true)); diff != "" {
		t.Errorf("no space prefix, EOS added (-want +got):\n%s", diff)
	}
	if got := tok.Decode([]int32{sSpHi}, false); got != " hi" {
		t.Errorf("without a space prefix Decode keeps the space: %q", got)
	}
	if diff := cmp.Diff([]int32{sEOS, sTool}, tok.EOS()); diff != "" {
		t.Errorf("EOS with EOT (-want +got):\n%s", diff)
	}
}

// byteLevelMeta returns the byte-level fixture as GGUF metadata
// (tokenizer.ggml.model gpt2) with the given pre-tokenizer.
func byteLevelMeta(pre string) ggufMeta {
	bytes := gpt2Bytes()
	sp := bytes[' ']
	tokens := append(bytes[:], "he", "ll", "hell", "hello", sp+"t", sp+"the", "aa", "world",
		"<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>", "<think>", "<|eot_id|>", "<strip>")
	types := make([]int32, len(tokens))
	for i := range types {
		types[i] = 1
		if i >= bBOS {
			types[i] = 3
		}
	}
	types[bThink] = 4
	return ggufMeta{
		"tokenizer.ggml.model":        "gpt2",
		"tokenizer.ggml.pre":          pre,
		"tokenizer.ggml.tokens":       tokens,
		"tokenizer.ggml.token_type":   types,
		"tokenizer.ggml.merges":       []string{"h e", "l l", "he ll", "hell o", sp + " t", sp + "t he", "a a"},
		"tokenizer.ggml.bos_token_id": uint32(bBOS),
		"tokenizer.ggml.eos_token_id": uint32(bEOS),
	}
}

func TestByteLevelGGUF(t *testing.T) {
	tests := []struct {
		pre  string
		text string
		want []int32
	}{
		{pre: "llama-bpe", text: "world hello", want: []int32{bBOS, bWorld, ' ', bHello}}, // ignore_merges, add_bos
		{pre: "gpt-2", text: "world hello", want: append(bytesOf("world "), bHello)},
		{pre: "qwen2", text: "a12", want: []int32{'a', '1', '2'}},
		{pre: "smollm", text: "hello the", want: []int32{bHello, bSpThe}},
	}
	for _, tt := range tests {
		t.Run(tt.pre, func(t *testing.T) {
			tok, err := tokenizer.FromGGUF(byteLevelMeta(tt.pre))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, tok.Encode(tt.text, true)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got := tok.Decode(tok.Encode(tt.text, false), false); got != tt.text {
				t.Errorf("round trip = %q", got)
			}
		})
	}
}

func TestGGUFErrors(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(md ggufMeta)
		wantErr error
	}{
		{"no model", func(md ggufMeta) { delete(md, "tokenizer.ggml.model") }, tokenizer.ErrInvalid},
		{"model type", func(md ggufMeta) { md["tokenizer.ggml.model"] = "bert" }, tokenizer.ErrUnsupported},
		{"unknown pre", func(md ggufMeta) { md["tokenizer.ggml.pre"] = "nonsense" }, tokenizer.ErrUnsupported},
		{"pre type", func(md ggufMeta) { md["tokenizer.ggml.pre"] = 7 }, tokenizer.ErrInvalid},
		{"no merges", func(md ggufMeta) { delete(md, "tokenizer.ggml.merges") }, tokenizer.ErrInvalid},
		{"tokens not strings", func(md ggufMeta) { md["tokenizer.ggml.tokens"] = []int32{1, 2} }, tokenizer.ErrInvalid},
		{"tokens not an array", func(md ggufMeta) { md["tokenizer.ggml.tokens"] = "abc" }, tokenizer.ErrInvalid},
		{"bos id type", func(md ggufMeta) { md["tokenizer.ggml.bos_token_id"] = "1" }, tokenizer.ErrInvalid},
		{"add_bos type", func(md ggufMeta) { md["tokenizer.ggml.add_bos_token"] = 1 }, tokenizer.ErrInvalid},
		{"token types", func(md ggufMeta) { md["tokenizer.ggml.token_type"] = []string{"x"} }, tokenizer.ErrInvalid},
		{"empty vocabulary", func(md ggufMeta) { md["tokenizer.ggml.tokens"] = []string{} }, tokenizer.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := byteLevelMeta("gpt-2")
			tt.edit(md)
			if _, err := tokenizer.FromGGUF(md); !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	md := spmMeta()
	md["tokenizer.ggml.scores"] = []float32{0}
	if _, err := tokenizer.FromGGUF(md); !errors.Is(err, tokenizer.ErrInvalid) {
		t.Errorf("short scores: err = %v, want ErrInvalid", err)
	}
}
