package detok_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/detok"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// ids returns the byte-token ids of s.
func ids(s string) []int32 {
	out := make([]int32, len(s))
	for i := range len(s) {
		out[i] = int32(s[i])
	}
	return out
}

func TestDetokenizerAdd(t *testing.T) {
	const (
		bos   = 256
		imEnd = 259
	)
	tests := []struct {
		name        string
		skipSpecial bool
		steps       [][]int32 // ids per Add call
		want        []string  // Add results, then the Flush result
	}{
		{name: "ascii per token", steps: [][]int32{ids("H"), ids("i")}, want: []string{"H", "i", ""}},
		{name: "é split across two tokens", steps: [][]int32{{0xC3}, {0xA9}}, want: []string{"", "é", ""}},
		{name: "emoji split across four tokens", steps: [][]int32{{0xF0}, {0x9F}, {0x99}, {0x82}}, want: []string{"", "", "", "🙂", ""}},
		{name: "emoji split 1+3 with text", steps: [][]int32{append(ids("a"), 0xF0), {0x9F, 0x99, 0x82, 'b'}}, want: []string{"a", "🙂b", ""}},
		{name: "invalid lead byte at once", steps: [][]int32{{'a', 0xFF, 'b'}}, want: []string{"a\uFFFDb", ""}},
		{name: "stray continuation", steps: [][]int32{{0x80}}, want: []string{"\uFFFD", ""}},
		{name: "incomplete then invalid", steps: [][]int32{{0xC3}, {'x'}}, want: []string{"", "\uFFFDx", ""}},
		{name: "maximal subpart: E2 82 then x is one FFFD", steps: [][]int32{{0xE2, 0x82}, {'x'}}, want: []string{"", "\uFFFDx", ""}},
		{name: "overlong E0 80 is two FFFD", steps: [][]int32{{0xE0, 0x80}}, want: []string{"\uFFFD\uFFFD", ""}},
		{name: "surrogate ED A0 80 is three FFFD", steps: [][]int32{{0xED, 0xA0, 0x80}}, want: []string{"\uFFFD\uFFFD\uFFFD", ""}},
		{name: "above U+10FFFF F4 90 is FFFD each", steps: [][]int32{{0xF4, 0x90}}, want: []string{"\uFFFD\uFFFD", ""}},
		{name: "C0 overlong", steps: [][]int32{{0xC0, 0xAF}}, want: []string{"\uFFFD\uFFFD", ""}},
		{name: "flush incomplete", steps: [][]int32{{'a', 0xF0, 0x9F}}, want: []string{"a", "\uFFFD"}},
		{name: "specials kept", steps: [][]int32{{bos, 'a'}, {imEnd}}, want: []string{"<|begin_of_text|>a", "<|im_end|>", ""}},
		{name: "specials skipped", skipSpecial: true, steps: [][]int32{{bos, 'a'}, {imEnd}}, want: []string{"a", "", ""}},
		{name: "special interrupts sequence", steps: [][]int32{{0xC3}, {imEnd}}, want: []string{"", "\uFFFD<|im_end|>", ""}},
		{name: "skipped special inside sequence", skipSpecial: true, steps: [][]int32{{0xC3}, {imEnd}, {0xA9}}, want: []string{"", "", "é", ""}},
		{name: "out of vocab skipped", steps: [][]int32{{'a', 999, -5, 'b'}}, want: []string{"ab", ""}},
		{name: "empty add", steps: [][]int32{nil, {}}, want: []string{"", "", ""}},
	}
	tok := tokenizer.NewByte()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := detok.New(tok, tt.skipSpecial)
			var got []string
			for _, s := range tt.steps {
				got = append(got, d.Add(s))
			}
			got = append(got, d.Flush())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDetokenizerMatchesStdlib checks that the output equals the bytes with
// invalid subparts replaced, for valid input exactly the input.
func TestDetokenizerMatchesStdlib(t *testing.T) {
	tok := tokenizer.NewByte()
	for _, s := range []string{"héllo wörld", "日本語テキスト", "🙂🚀 mixed ascii", ""} {
		d := detok.New(tok, false)
		var b strings.Builder
		for _, id := range ids(s) {
			b.WriteString(d.Add([]int32{id}))
		}
		b.WriteString(d.Flush())
		if b.String() != s {
			t.Errorf("got %q, want %q", b.String(), s)
		}
	}
}

func TestText(t *testing.T) {
	tok := tokenizer.NewByte()
	got := detok.Text(tok, append(ids("ok \xff"), 257, 0xE2), true)
	if want := "ok \uFFFD\uFFFD"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
}

func FuzzDetokenizer(f *testing.F) {
	f.Add([]byte("hello"), uint8(1))
	f.Add([]byte("é🙂\xff\xe2\x82x"), uint8(3))
	f.Add([]byte{0xF0, 0x9F, 0x99}, uint8(2))
	tok := tokenizer.NewByte()
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		n := int(chunk%8) + 1
		all := ids(string(data))
		d := detok.New(tok, false)
		var b strings.Builder
		for i := 0; i < len(all); i += n {
			s := d.Add(all[i:min(i+n, len(all))])
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 delta %q", s)
			}
			b.WriteString(s)
		}
		b.WriteString(d.Flush())
		got := b.String()
		if got != detok.Text(tok, all, false) {
			t.Fatalf("chunked %q != one-shot %q", got, detok.Text(tok, all, false))
		}
		if utf8.Valid(data) && got != string(data) {
			t.Fatalf("valid input %q changed to %q", data, got)
		}
		if !utf8.Valid(data) && !strings.Contains(got, "\uFFFD") {
			t.Fatalf("invalid input %q gave no U+FFFD: %q", data, got)
		}
	})
}

func BenchmarkAdd(b *testing.B) {
	tok := tokenizer.NewByte()
	text := strings.Repeat("The quick brown fox — jumps over the lazy dog 🙂. ", 40)
	all := ids(text)
	for _, per := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("ids=%d", per), func(b *testing.B) {
			b.SetBytes(int64(len(all)))
			for b.Loop() {
				d := detok.New(tok, true)
				for i := 0; i < len(all); i += per {
					d.Add(all[i:min(i+per, len(all))])
				}
				d.Flush()
			}
		})
	}
}
