package chattemplate

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nikolalohinski/gonja/v2/exec"
)

func TestPyJSON(t *testing.T) {
	nested := Object{
		{Key: "name", Value: "f"},
		{Key: "args", Value: Object{{Key: "q", Value: "a\"b\\c\n\t\x01</x>&é😀"}, {Key: "n", Value: []any{1, 2.5, true, nil}}}},
		{Key: "empty", Value: Object{}},
		{Key: "list", Value: []any{}},
	}
	tests := []struct {
		name string
		in   any
		opts func(*jsonOptions)
		want string
	}{
		{"python separators, order, no HTML escaping", nested, nil,
			`{"name": "f", "args": {"q": "a\"b\\c\n\t\u0001</x>&é😀", "n": [1, 2.5, true, null]}, "empty": {}, "list": []}`},
		{"indent", nested, func(o *jsonOptions) { o.hasIndent, o.indent, o.itemSep = true, "  ", "," },
			"{\n  \"name\": \"f\",\n  \"args\": {\n    \"q\": \"a\\\"b\\\\c\\n\\t\\u0001</x>&é😀\",\n    \"n\": [\n      1,\n      2.5,\n      true,\n      null\n    ]\n  },\n  \"empty\": {},\n  \"list\": []\n}"},
		{"ensure_ascii", "é😀\x7f", func(o *jsonOptions) { o.ensureASCII = true }, `"\u00e9\ud83d\ude00\u007f"`},
		{"sort_keys and compact separators", Object{{Key: "b", Value: 1}, {Key: "a", Value: 2}},
			func(o *jsonOptions) { o.sortKeys, o.itemSep, o.keySep = true, ",", ":" }, `{"a":2,"b":1}`},
		{"floats as Python repr", []any{1.0, 0.1, 1e16, 1e15, 1.5e-7, 0.0001, math.Copysign(0, -1), math.Inf(1), math.NaN()}, nil,
			`[1.0, 0.1, 1e+16, 1000000000000000.0, 1.5e-07, 0.0001, -0.0, Infinity, NaN]`},
		{"invalid UTF-8 becomes U+FFFD", "a\xffb", nil, "\"a\ufffdb\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := defaultJSONOptions()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			in, err := toTemplate(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pyJSON(exec.AsValue(in), opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTojsonArguments(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{`{'a': [1]} | tojson(indent=2)`, "{\n  \"a\": [\n    1\n  ]\n}"},
		{`{'a': [1, 2]} | tojson(separators=(',', ':'))`, `{"a":[1,2]}`},
		{`{'b': 1, 'a': 2} | tojson(sort_keys=true)`, `{"a": 2, "b": 1}`},
		{`'é' | tojson(ensure_ascii=true)`, `"\u00e9"`},
		{`'é' | tojson(ensure_ascii=false)`, `"é"`},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := mustNew(t, "{{ "+tc.expr+" }}", Options{}).Render(user("x"), false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStrftime(t *testing.T) {
	tm := time.Date(2025, time.February, 3, 0, 7, 9, 0, time.UTC)
	tests := []struct {
		format string
		want   string
	}{
		{"%d %b %Y", "03 Feb 2025"},
		{"%B %e, %Y", "February  3, 2025"},
		{"%Y-%m-%d %H:%M:%S", "2025-02-03 00:07:09"},
		{"%I %p %a %A %j %y", "12 AM Mon Monday 034 25"},
		{"100%% %q %", "100% %q %"},
	}
	for _, tc := range tests {
		if got := strftime(tm, tc.format); got != tc.want {
			t.Errorf("strftime(%q) = %q, want %q", tc.format, got, tc.want)
		}
	}
}

func TestPreprocess(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"one trailing newline dropped", "a\n\n", "a\n"},
		{"lstrip before block and comment tags only", "  {% x %}\n\t{# c #}\n  {{ y }}", "{% x %}{# c #}  {{ y }}"},
		{"no lstrip after text on the line", "a {% x %}", "a {% x %}"},
		{"trim after block tags", "{% x %}\nA{{ y }}\nB{#c#}\nC-%}\n", "{% x %}A{{ y }}\nB{#c#}C-%}"},
		{"generation tags", "a {%- generation -%} b {% endgeneration %}\n", "ab "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, preprocess(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRewriteTernaries(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"top-level output", "{{ a if c else b }}", "{{ (((c) and [(a)]) or [(b)])[0] }}"},
		{"in parentheses", "{{- x + (a if c else b) -}}", "{{- x + ((((c) and [(a)]) or [(b)])[0]) -}}"},
		{"chained", "{{ f(a if c else b if d else e) }}", "{{ f((((c) and [(a)]) or [((((d) and [(b)]) or [(e)])[0])])[0]) }}"},
		{"missing else", "{% set x = a if c %}", "{% set x = (((c) and [(a)]) or [(none)])[0] %}"},
		{"keyword argument", "{{ ns(k=a if c else b) }}", "{{ ns(k=(((c) and [(a)]) or [(b)])[0]) }}"},
		{"for filter untouched", "{% for x in xs if x %}", "{% for x in xs if x %}"},
		{"strings untouched", "{{ f('a if c else b', \"}}\") }}", "{{ f('a if c else b', \"}}\") }}"},
		{"text and comments untouched", "a if b else c {# (x if y else z) #}", "a if b else c {# (x if y else z) #}"},
		{"raw untouched", "{% raw %}{{ (a if b else c) }}{% endraw %}", "{% raw %}{{ (a if b else c) }}{% endraw %}"},
		{"method on parentheses", "{{ (a | d).strip() }}", "{{ [(a | d)][0].strip() }}"},
		{"call then method untouched", "{{ f(a).strip() }}", "{{ f(a).strip() }}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, first(rewriteTernaries(tc.in))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// hostile are message contents that look like template code, break JSON,
// or are large.
var hostile = []string{
	"{{ raise_exception('pwned') }}",
	"{% for m in messages %}{{ m }}{% endfor %}",
	"{# comment #} {%- raw %} }} %} #}",
	"\x00\x01\x1b[31m\r\n\u2028\u2029\ufeff\xff\xfe",
	"' \" \\ {{'",
	strings.Repeat("{{", 1000) + strings.Repeat("x", 1<<20),
}

func FuzzRenderContent(f *testing.F) {
	for _, h := range hostile {
		f.Add(h, "user")
	}
	tpl := mustNew(f, testdataTemplate(f, "smollm2"), Options{})
	f.Fuzz(func(t *testing.T, content, role string) {
		msgs := []Object{{{Key: "role", Value: role}, {Key: "content", Value: content}}}
		got, err := tpl.RenderMessages(msgs, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The content comes back byte for byte: it is data, never code.
		var want string
		if role != "system" {
			want = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
		}
		want += "<|im_start|>" + role + "\n" + content + "<|im_end|>\n<|im_start|>assistant\n"
		if got != want {
			t.Fatalf("render of %q differs:\n got %q\nwant %q", content, got, want)
		}
	})
}

func FuzzRewrite(f *testing.F) {
	f.Add(testdataTemplate(f, "mistral-instruct"))
	f.Add("{%- for m in messages %}{{- '<|' + m['role'] + '|>' ~ (m.content | trim) }}{% if loop.last %}{{ x.y.z(1, k=2) }}{% endif %}{% endfor %}")
	f.Add("{{ (a if b) }}{% set x = [1 if c else 2, {'k': v if d}] %}{{ (x).y() }}")
	f.Fuzz(func(t *testing.T, src string) {
		// Neither may panic; New turns gonja's parser panics into errors.
		_, _ = rewriteTernaries(preprocess(src))
		_, _ = New(src, Options{})
	})
}

func first(s string, _ int) string { return s }
