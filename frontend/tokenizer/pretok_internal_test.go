package tokenizer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The scanners must split exactly as the regexes they replace. regexp2 (a
// backtracking engine with lookahead) is the reference.

var scannerPatterns = []struct {
	name    string
	pattern string
	sc      splitter
}{
	{"gpt2", reGPT2Full, scanGPT2},
	{"gpt2 llama.cpp", reGPT2, scanGPT2},
	{"llama3", reLlama3, scanLlama3},
	{"llama3 llama.cpp", reLlama3CPP, scanLlama3},
	{"qwen2", reQwen2, scanQwen2},
	{"qwen35", reQwen35, scanQwen35},
	{"digits", `\p{N}`, digitSplitter{individual: true}},
}

var scannerSeeds = []string{
	"", "Hello world", " Hello", "  Hello", "I'm sure they'd say it's what we've done, you'll see they're right",
	"DON'T SHOUT IT'S RUDE 'S 'Ll 'rE", "'ſ it'ſ", "'hello 'x '' ''s", "123 1234 12345 ½² ١٢٣", "a1b22c333",
	"a  b   c\t\td\n\ne \n f  \n\n  g   ", "     ", "\t\n\r\n\r \t \n", "latest\n```\n\n##", "x\n\n\n", " \n",
	"def f(x):\n    return x  # ok\n", "{\"a\": [1, 2]}", "日本語のテキスト、中文", "👋 🧑‍💻 👨‍👩‍👧‍👦 🏳️‍🌈",
	"De\u0301ja\u0300 a\u0301\u0302 \u0301x \u0301 1\u0301", "a\u00a0b\u2003c\u3000d\u200be\u2028f\u0085g",
	"https://example.com/a?b=1&c=%20#x", "!!! ... ?! (x)", " !x", " \u0301", "\xff\xfe ab\xc3", "a\xe2\x82",
	"\u0301abc", "x \u0300\u0301y", "\r\rx", " \r\n x", "1 2  3", "_start <|im_end|>",
}

// regexSplit splits s with regexp2, the reference.
func regexSplit(t testing.TB, pattern, s string) []string {
	r, err := newRegexSplitter(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return r.split(nil, s, true)
}

func TestScannersMatchRegex(t *testing.T) {
	for _, p := range scannerPatterns {
		t.Run(p.name, func(t *testing.T) {
			for _, s := range scannerSeeds {
				want := regexSplit(t, p.pattern, s)
				if diff := cmp.Diff(want, p.sc.split(nil, s, true)); diff != "" {
					t.Errorf("split(%q) (-regexp2 +scanner):\n%s", s, diff)
				}
			}
		})
	}
}

func TestScannerWords(t *testing.T) {
	tests := []struct {
		name string
		sc   splitter
		in   string
		want []string
	}{
		{"gpt2 words", scanGPT2, "Hello world's  end", []string{"Hello", " world", "'s", " ", " end"}},
		{"gpt2 numbers", scanGPT2, "a 1234", []string{"a", " 1234"}},
		{"llama3 digits by three", scanLlama3, "12345", []string{"123", "45"}},
		{"llama3 code fence", scanLlama3, "latest\n```\n\n##", []string{"latest", "\n", "```\n\n", "##"}},
		{"llama3 upper contraction", scanLlama3, "IT'S", []string{"IT", "'S"}},
		{"gpt2 upper contraction", scanGPT2, "IT'S", []string{"IT", "'", "S"}},
		{"qwen2 single digits", scanQwen2, "2026", []string{"2", "0", "2", "6"}},
		{"qwen35 marks join letters", scanQwen35, "e\u0301t\u00e9", []string{"e\u0301t\u00e9"}},
		{"llama3 marks split letters", scanLlama3, "e\u0301t", []string{"e", "\u0301t"}},
		{"trailing spaces kept whole", scanLlama3, "a   ", []string{"a", "   "}},
		{"invalid bytes kept", scanGPT2, "a\xffb", []string{"a", "\xff", "b"}},
		{"digits isolated", digitSplitter{individual: true}, "ab12c", []string{"ab", "1", "2", "c"}},
		{"digit runs", digitSplitter{}, "ab12c3", []string{"ab", "12", "c", "3"}},
		{"metaspace first", metaspace{prepend: "first", splitOnSpace: true}, "a b  c", []string{"▁a", "▁b", "▁", "▁c"}},
		{"metaspace never", metaspace{prepend: "never", splitOnSpace: false}, "a b", []string{"a▁b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.sc.split(nil, tt.in, true)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzScannersMatchRegex(f *testing.F) {
	for _, s := range scannerSeeds {
		f.Add(s)
	}
	refs := make([]*regexSplitter, len(scannerPatterns))
	for i, p := range scannerPatterns {
		r, err := newRegexSplitter(p.pattern)
		if err != nil {
			f.Fatal(err)
		}
		refs[i] = r
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, p := range scannerPatterns {
			want := refs[i].split(nil, s, true)
			if diff := cmp.Diff(want, p.sc.split(nil, s, true)); diff != "" {
				t.Fatalf("%s: split(%q) (-regexp2 +scanner):\n%s", p.name, s, diff)
			}
		}
	})
}

// TestGGUFPresCompile checks that every tokenizer.ggml.pre in the table has
// splitters (regexp2 compiles the patterns without a scanner).
func TestGGUFPresCompile(t *testing.T) {
	for name, p := range ggufPres {
		for _, re := range p.regexes {
			if _, err := newSplitter(re); err != nil {
				t.Errorf("pre %q: %v", name, err)
			}
		}
	}
	sp, err := newSplitter(reTekken)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Hello", "World", " ABCdef", "XYZ", "1", "2"}, sp.split(nil, "HelloWorld ABCdefXYZ12", true)); diff != "" {
		t.Errorf("tekken split (-want +got):\n%s", diff)
	}
}
