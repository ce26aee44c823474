package structured_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/structured"
)

func TestGBNFToLark(t *testing.T) {
	for _, tc := range []struct{ gbnf, lark string }{
		{`root ::= "a" | "b"`, "start: r_root\nr_root: \"a\" | \"b\"\n"},
		// A body runs over lines until the next rule; comments go.
		{"root ::= item+ # items\n\nitem ::=\n  \"- \" [^\\n]+\n  \"\\n\"", "start: r_root\nr_root: r_item+\nr_item: \"- \" /[^\\x{A}]/+ \"\\n\"\n"},
		// Names: upper case and dashes cannot reach Lark as they are.
		{`root ::= en-char Foo foo
en-char ::= [a-z]
Foo ::= "F"
foo ::= "f"`, "start: r_root\nr_root: r_en_d_char r_u_foo r_foo\nr_en_d_char: /[a-z]/\nr_u_foo: \"F\"\nr_foo: \"f\"\n"},
		// Repetitions, groups, any character, an empty alternative.
		{`root ::= ("x" [0-9]{1,3}) . ws
ws ::= | " "`, "start: r_root\nr_root: (\"x\" /[0-9]/{1,3}) /(?s:.)/ r_ws\nr_ws: | \" \"\n"},
		// Escapes: control characters become a regex, / and ] are escaped.
		{`root ::= "\x01\"" [\]/\x00-\x1F-] "a/b"`, "start: r_root\nr_root: /\\x{1}\"/ /[\\]\\x{2F}\\x{0}-\\x{1F}\\-]/ \"a/b\"\n"},
	} {
		got, err := structured.GBNFToLark(tc.gbnf)
		if err != nil {
			t.Fatalf("%q: %v", tc.gbnf, err)
		}
		if got != tc.lark {
			t.Errorf("%q:\n got %q\nwant %q", tc.gbnf, got, tc.lark)
		}
	}
	for _, bad := range []string{`root ::= "a`, `root ::= (a`, `root ::= a)`, `item ::= "a"`, `root ::= [`, `root ::= "\q"`, `root ::= a{x}`, `root = "a"`} {
		if _, err := structured.GBNFToLark(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestGBNFGrammars compiles GBNF through the grammar constraint (told
// apart from Lark as vLLM does) and forces strings through it: the
// grammars in llama.cpp's grammars/ directory and a few of our own.
func TestGBNFGrammars(t *testing.T) {
	v, _ := byteVocab(t)
	cases := []struct {
		file, gbnf string
		valid      []string
		bad        []string
	}{
		{file: "json.gbnf", valid: []string{`{"a": [1, 2.5, "x\n"], "b": {"c": null}}`, `{}`}, bad: []string{`[1]`, `{"a" 1}`}},
		{file: "arithmetic.gbnf", valid: []string{"1+2*(y-3)=x\n"}, bad: []string{"x=1+2\n"}},
		{file: "list.gbnf", valid: []string{"- milk\n- eggs\n"}, bad: []string{"milk\n"}},
		{file: "chess.gbnf", valid: []string{"1. e4 e5\n2. Nf3 Nc6\n"}, bad: []string{"1. e9 e5\n"}},
		{file: "english.gbnf", valid: []string{"Hello, world!"}},
		{file: "c.gbnf", valid: []string{"int main(){return 0;}"}},
		{gbnf: "root ::= answer\nanswer ::= \"yes\" | \"no\"", valid: []string{"yes", "no"}, bad: []string{"maybe", "yesno"}},
	}
	src := os.Getenv("TANDEM_LLAMA_CPP_SRC")
	for _, tc := range cases {
		name := tc.file
		if name == "" {
			name = "inline"
		}
		t.Run(name, func(t *testing.T) {
			gbnf := tc.gbnf
			if tc.file != "" {
				if src == "" {
					t.Skip("TANDEM_LLAMA_CPP_SRC is not set (make test sets it to llama.cpp's sources in .cache)")
				}
				raw, err := os.ReadFile(filepath.Join(src, "grammars", tc.file))
				if err != nil {
					t.Fatal(err)
				}
				gbnf = string(raw)
			}
			checkStrings(t, v, structured.Constraint{Kind: structured.Grammar, Data: gbnf}, tc.valid, tc.bad, false)
		})
	}
	t.Run("lark stays lark", func(t *testing.T) {
		// ::= inside a Lark string is not a GBNF rule.
		m, err := v.Compile(structured.Constraint{Kind: structured.Grammar, Data: `start: "a ::= b"`})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if n := feed(t, v, m, "a ::= b"); n != 7 || !m.Accepting() {
			t.Fatalf("the Lark grammar was not used as Lark (%d bytes)", n)
		}
	})
}

func FuzzGBNFToLark(f *testing.F) {
	for _, s := range []string{`root ::= "a" | [b-c]+ (d)*`, "root ::=\n  x{2,}\nx ::= .", `root ::= "\u00e9\x7f" [^\]]`, "#c\nroot ::= ", `root ::= "`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := structured.GBNFToLark(s)
		if err == nil && !strings.HasPrefix(out, "start: r_root\n") {
			t.Fatalf("%q: %q", s, out)
		}
	})
}
