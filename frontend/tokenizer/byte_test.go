package tokenizer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

func TestByteEncode(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		addSpecial bool
		want       []int32
	}{
		{name: "empty", text: "", want: []int32{}},
		{name: "empty with BOS", text: "", addSpecial: true, want: []int32{256}},
		{name: "ascii", text: "Hi", want: []int32{'H', 'i'}},
		{name: "ascii with BOS", text: "Hi", addSpecial: true, want: []int32{256, 'H', 'i'}},
		{name: "multi-byte", text: "é", want: []int32{0xC3, 0xA9}},
		{name: "invalid utf8 kept", text: "\xff\x00", want: []int32{0xFF, 0x00}},
		{name: "im_start split", text: "<|im_start|>user\n", want: []int32{258, 'u', 's', 'e', 'r', '\n'}},
		{name: "all named specials", text: "<|begin_of_text|><|end_of_text|><|im_start|><|im_end|>", want: []int32{256, 257, 258, 259}},
		{name: "reserved first and last", text: "<|reserved_0|>x<|reserved_59|>", want: []int32{260, 'x', 319}},
		{name: "reserved out of range is text", text: "<|reserved_60|>", want: bytesOf("<|reserved_60|>")},
		{name: "unknown special is text", text: "<|foo|>", want: bytesOf("<|foo|>")},
		{name: "unterminated", text: "<|im_start", want: bytesOf("<|im_start")},
		{name: "lone prefix at end", text: "a<|", want: bytesOf("a<|")},
		{name: "doubled prefix", text: "<|<|im_end|>", want: append(bytesOf("<|"), 259)},
		{name: "adjacent specials with text", text: "a<|im_end|>b<|im_end|>", want: []int32{'a', 259, 'b', 259}},
		{name: "case matters", text: "<|IM_END|>", want: bytesOf("<|IM_END|>")},
	}
	tok := tokenizer.NewByte()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tok.Encode(tt.text, tt.addSpecial)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Encode(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func bytesOf(s string) []int32 {
	ids := make([]int32, len(s))
	for i := range len(s) {
		ids[i] = int32(s[i])
	}
	return ids
}

func TestByteDecode(t *testing.T) {
	tests := []struct {
		name        string
		ids         []int32
		skipSpecial bool
		want        string
	}{
		{name: "nil", ids: nil, want: ""},
		{name: "bytes", ids: []int32{'o', 'k'}, want: "ok"},
		{name: "special kept", ids: []int32{256, 'a', 259}, want: "<|begin_of_text|>a<|im_end|>"},
		{name: "special skipped", ids: []int32{256, 'a', 259, 300}, skipSpecial: true, want: "a"},
		{name: "reserved kept", ids: []int32{305}, want: "<|reserved_45|>"},
		{name: "out of range skipped", ids: []int32{'a', 320, 1 << 30, 'b'}, want: "ab"},
		{name: "negative skipped", ids: []int32{-1, 'a', -2147483648}, want: "a"},
		{name: "partial utf8 kept raw", ids: []int32{0xC3}, want: "\xc3"},
	}
	tok := tokenizer.NewByte()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tok.Decode(tt.ids, tt.skipSpecial)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestByteVocab(t *testing.T) {
	tok := tokenizer.NewByte()
	if got := tok.VocabSize(); got != 320 {
		t.Errorf("VocabSize = %d, want 320", got)
	}
	if bos, ok := tok.BOS(); !ok || bos != 256 {
		t.Errorf("BOS = %d, %v; want 256, true", bos, ok)
	}
	if diff := cmp.Diff([]int32{257, 259}, tok.EOS()); diff != "" {
		t.Errorf("EOS (-want +got):\n%s", diff)
	}
	tests := []struct {
		id          int32
		wantBytes   string
		wantOK      bool
		wantSpecial bool
	}{
		{id: 0, wantBytes: "\x00", wantOK: true},
		{id: 'A', wantBytes: "A", wantOK: true},
		{id: 255, wantBytes: "\xff", wantOK: true},
		{id: 256, wantBytes: "<|begin_of_text|>", wantOK: true, wantSpecial: true},
		{id: 257, wantBytes: "<|end_of_text|>", wantOK: true, wantSpecial: true},
		{id: 258, wantBytes: "<|im_start|>", wantOK: true, wantSpecial: true},
		{id: 259, wantBytes: "<|im_end|>", wantOK: true, wantSpecial: true},
		{id: 260, wantBytes: "<|reserved_0|>", wantOK: true, wantSpecial: true},
		{id: 319, wantBytes: "<|reserved_59|>", wantOK: true, wantSpecial: true},
		{id: 320},
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
	// Every special token's text encodes back to exactly its id.
	for id := int32(256); id < 320; id++ {
		b, _ := tok.TokenBytes(id)
		if diff := cmp.Diff([]int32{id}, tok.Encode(string(b), false)); diff != "" {
			t.Errorf("Encode(%q) (-want +got):\n%s", b, diff)
		}
	}
}

func TestChatML(t *testing.T) {
	tests := []struct {
		name    string
		msgs    []tokenizer.Message
		genPr   bool
		want    string
		wantErr string
	}{
		{
			name:  "system and user with generation prompt",
			msgs:  []tokenizer.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}},
			genPr: true,
			want:  "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
		},
		{
			name: "no generation prompt",
			msgs: []tokenizer.Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello"}},
			want: "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n",
		},
		{
			name: "tool and developer roles",
			msgs: []tokenizer.Message{{Role: "developer", Content: "d"}, {Role: "tool", Content: "t"}},
			want: "<|im_start|>developer\nd<|im_end|>\n<|im_start|>tool\nt<|im_end|>\n",
		},
		{name: "empty messages", msgs: nil, genPr: true, wantErr: "messages must not be empty"},
		{name: "unknown role", msgs: []tokenizer.Message{{Role: "user", Content: "a"}, {Role: "robot", Content: "b"}}, wantErr: `messages[1] has unknown role "robot"`},
		{name: "empty role", msgs: []tokenizer.Message{{Role: "", Content: "a"}}, wantErr: `unknown role ""`},
	}
	tmpl := tokenizer.NewByte().ChatTemplate()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tmpl.Render(tt.msgs, tt.genPr, map[string]any{"enable_thinking": false})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tokenizer.ErrTemplate) {
					t.Fatalf("err = %v, want one containing %q wrapping ErrTemplate", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestChatMLEncodes(t *testing.T) {
	tok := tokenizer.NewByte()
	prompt, err := tok.ChatTemplate().Render([]tokenizer.Message{{Role: "user", Content: "Hi"}}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{256, 258, 'u', 's', 'e', 'r', '\n', 'H', 'i', 259, '\n', 258, 'a', 's', 's', 'i', 's', 't', 'a', 'n', 't', '\n'}
	if diff := cmp.Diff(want, tok.Encode(prompt, true)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func FuzzByteRoundTrip(f *testing.F) {
	for _, s := range []string{"", "hello", "é🙂", "\xff\xfe", "<|im_start|>user\nhi<|im_end|>", "<|<|im_end|>|>", "<|reserved_7|", "<|begin_of_text|>"} {
		f.Add(s)
	}
	tok := tokenizer.NewByte()
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s, false)
		if got := tok.Decode(ids, false); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
		withBOS := tok.Encode(s, true)
		if len(withBOS) != len(ids)+1 || withBOS[0] != 256 {
			t.Fatalf("Encode(%q, true) = %v, want BOS + %v", s, withBOS, ids)
		}
		if got := tok.Decode(withBOS, false); got != "<|begin_of_text|>"+s {
			t.Fatalf("Decode with BOS = %q", got)
		}
		for _, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("Encode(%q) produced out-of-range id %d", s, id)
			}
		}
		if len(ids) > len(s) {
			t.Fatalf("Encode(%q): %d ids for %d bytes", s, len(ids), len(s))
		}
	})
}

func BenchmarkByteEncode(b *testing.B) {
	tok := tokenizer.NewByte()
	text := strings.Repeat("<|im_start|>user\nSome text to encode, with é and <|not special|>.<|im_end|>\n", 64)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(text, true)
	}
}
