package chattemplate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

var fixedNow = time.Date(2024, time.July, 26, 10, 30, 5, 0, time.UTC)

func mustNew(t testing.TB, source string, opts Options) *Template {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow }
	}
	tpl, err := New(source, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func testdataTemplate(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "templates", name+".jinja"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func user(content string) []tokenizer.Message {
	return []tokenizer.Message{{Role: "user", Content: content}}
}

type weather struct {
	City string  `json:"city"`
	Unit string  `json:"unit,omitempty"`
	Temp float64 `json:"temp"`
}

func TestRender(t *testing.T) {
	tests := []struct {
		name   string
		source string
		opts   Options
		msgs   []tokenizer.Message
		agp    bool
		kwargs map[string]any
		want   string
	}{
		{
			name:   "smollm2 adds its system prompt and the generation prompt",
			source: testdataTemplate(t, "smollm2"),
			msgs:   user("Hi"),
			agp:    true,
			want:   "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
		},
		{
			name:   "output is not trimmed and one trailing template newline is dropped",
			source: "  {{ messages[0].content }}  \n\n",
			msgs:   user("x"),
			want:   "  x  \n",
		},
		{
			name:   "trim_blocks and lstrip_blocks",
			source: "a\n    {% if true %}\n    b\n    {% endif %}\nc",
			msgs:   user("x"),
			want:   "a\n    b\nc",
		},
		{
			name:   "tools and documents are none unless given",
			source: "{{ 'n' if tools is none else 't' }}{{ 'n' if documents is none else 'd' }}",
			msgs:   user("x"),
			want:   "nn",
		},
		{
			name:   "an empty bos_token is undefined",
			source: "{{ 'defined' if bos_token is defined else 'undefined' }} {{ eos_token }}",
			opts:   Options{EOSToken: "</s>"},
			msgs:   user("x"),
			want:   "undefined </s>",
		},
		{
			name:   "kwargs are variables",
			source: "{{ enable_thinking }} {{ custom | join('+') }}",
			msgs:   user("x"),
			kwargs: map[string]any{"enable_thinking": false, "custom": []string{"a", "b"}},
			want:   "False a+b",
		},
		{
			name:   "Object keeps member order through tojson",
			source: "{{ tools | tojson }}",
			msgs:   user("x"),
			kwargs: map[string]any{"tools": []Object{{{Key: "z", Value: 1}, {Key: "a", Value: "<&>"}}}},
			want:   `[{"z": 1, "a": "<&>"}]`,
		},
		{
			name:   "json.RawMessage keeps member order and float spelling",
			source: "{{ args | tojson }}",
			msgs:   user("x"),
			kwargs: map[string]any{"args": json.RawMessage(`{"b": 1.0, "a": [1e20, 0.5, 3], "é": "ü\n"}`)},
			want:   `{"b": 1.0, "a": [1e+20, 0.5, 3], "é": "ü\n"}`,
		},
		{
			name:   "Go maps are sorted by key",
			source: "{{ m | tojson }} {% for k, v in m.items() %}{{ k }}{{ v }}{% endfor %}",
			msgs:   user("x"),
			kwargs: map[string]any{"m": map[string]int{"b": 2, "a": 1, "c": 3}},
			want:   `{"a": 1, "b": 2, "c": 3} a1b2c3`,
		},
		{
			name:   "structs pass as their JSON, in field order",
			source: "{{ w | tojson }}",
			msgs:   user("x"),
			kwargs: map[string]any{"w": weather{City: "Paris", Temp: 21.5}},
			want:   `{"city": "Paris", "temp": 21.5}`,
		},
		{
			name:   "strftime_now reads the injected clock",
			source: "{{ strftime_now('%d %b %Y %H:%M:%S %A %j %p %%') }}",
			msgs:   user("x"),
			want:   "26 Jul 2024 10:30:05 Friday 208 AM %",
		},
		{
			name:   "nested conditional expressions",
			source: "{{ 'a' + ('b' if messages | length > 1 else 'c') + ('d' if true) }}{% set x = 'e' if false %}{{ x }}",
			msgs:   user("x"),
			want:   "acd",
		},
		{
			name:   "negative indexes",
			source: "{{ messages[-1].content }}{{ 'a,b'.split(',')[-2] }}{{ messages[-2] is none }}",
			msgs:   user("x"),
			want:   "xaTrue",
		},
		{
			name:   "generation tags are removed",
			source: "{% generation %}{{ messages[0].content }}{%- endgeneration %}!",
			msgs:   user("x"),
			want:   "x!",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tpl := mustNew(t, tc.source, tc.opts)
			got, err := tpl.Render(tc.msgs, tc.agp, tc.kwargs)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPythonStringMethods(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{`'  a b\t\n'.strip()`, "a b"},
		{`'xxaxx'.strip('x')`, "a"},
		{`'\n\nab\n'.lstrip('\n')`, "ab\n"},
		{`' ab '.rstrip()`, " ab"},
		{`' a  b '.split() | join('|')`, "a|b"},
		{`'a,b,,c'.split(',') | join('|')`, "a|b||c"},
		{`'a,b,c'.split(',', 1) | join('|')`, "a|b,c"},
		{`'a,b,c'.rsplit(',', 1) | join('|')`, "a,b|c"},
		{`"hello wORLD it's".title()`, "Hello World It'S"},
		{`'hELLO'.capitalize()`, "Hello"},
		{`'straße'.upper()`, "STRASSE"},
		{`'ÀB'.lower()`, "àb"},
		{`'<tool>x'.startswith(('<a>', '<tool>'))`, "True"},
		{`'abc'.endswith('bc')`, "True"},
		{`'aaa'.replace('a', 'b', 2)`, "bba"},
		{`'abc'[::-1]`, "cba"},
		{`{'b': 1, 'a': 2}.keys() | join`, "ba"},
		{`{'b': 1, 'a': 2}.get('a')`, "2"},
		{`{'b': 1}.get('z', 'dflt')`, "dflt"},
		{`{'b': 1, 'a': 2} | dictsort | tojson`, `[["a", 2], ["b", 1]]`},
		{`range(3) | join(',')`, "0,1,2"},
		{`[3, 1, 2][-1]`, "2"},
		{`1.5 | tojson`, "1.5"},
		{`none`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			tpl := mustNew(t, "{{ "+tc.expr+" }}", Options{})
			got, err := tpl.Render(user("x"), false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name      string
		source    string
		msgs      []tokenizer.Message
		wantIs    error
		wantRaise string
	}{
		{
			name:      "raise_exception carries its message",
			source:    testdataTemplate(t, "mistral-instruct"),
			msgs:      []tokenizer.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}},
			wantIs:    ErrTemplate,
			wantRaise: "Conversation roles must alternate user/assistant/user/assistant/...",
		},
		{
			name:   "no messages",
			source: "{{ messages }}",
			wantIs: ErrNoMessages,
		},
		{
			name:   "unknown filter",
			source: "{{ messages | no_such_filter }}",
			msgs:   user("x"),
			wantIs: ErrTemplate,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tpl := mustNew(t, tc.source, Options{BOSToken: "<s>", EOSToken: "</s>"})
			_, err := tpl.Render(tc.msgs, false, nil)
			if !errors.Is(err, tc.wantIs) || !errors.Is(err, tokenizer.ErrTemplate) {
				t.Fatalf("err = %v, want %v wrapping tokenizer.ErrTemplate", err, tc.wantIs)
			}
			var re *RaiseError
			if got := errors.As(err, &re); got != (tc.wantRaise != "") {
				t.Fatalf("errors.As(RaiseError) = %v for %v", got, err)
			}
			if re != nil && re.Message != tc.wantRaise {
				t.Errorf("message = %q, want %q", re.Message, tc.wantRaise)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name   string
		source string
	}{
		{"unclosed tag", "{% if x %}"},
		{"include reads no files", "{% include '/etc/passwd' %}"},
		{"extends reads no files", "{% extends 'base.html' %}"},
		{"import reads no files", "{% import 'macros.j2' as m %}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.source, Options{})
			if !errors.Is(err, ErrParse) {
				t.Fatalf("err = %v, want ErrParse", err)
			}
		})
	}
}

// TestConcurrentRender renders one parsed template from many goroutines;
// with -race it checks that renders share no mutable state.
func TestConcurrentRender(t *testing.T) {
	tpl := mustNew(t, testdataTemplate(t, "qwen3"), Options{EOSToken: "<|im_end|>"})
	tools := json.RawMessage(`[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]`)
	msgs := []tokenizer.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}
	kwargs := map[string]any{"tools": tools, "enable_thinking": false}
	want, err := tpl.Render(msgs, true, kwargs)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 8 {
		wg.Go(func() {
			for range 20 {
				got, err := tpl.Render(msgs, true, kwargs)
				if err != nil || got != want {
					errs <- got
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for got := range errs {
		t.Errorf("concurrent render differs:\n%s", got)
	}
	if !strings.Contains(want, `{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}`) {
		t.Errorf("tools missing from render:\n%s", want)
	}
}

func TestParseJSON(t *testing.T) {
	got, err := ParseJSON([]byte(`{"b": [1, {"d": null, "c": true}], "a": "x", "b": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Object{{Key: "b", Value: json.Number("2")}, {Key: "a", Value: "x"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{`{"a":}`, `[1] 2`, ``} {
		if _, err := ParseJSON([]byte(bad)); err == nil {
			t.Errorf("ParseJSON(%q) succeeded", bad)
		}
	}
	var o Object
	if err := json.Unmarshal([]byte(`{"z": {"y": 1}, "a": []}`), &o); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"z":{"y":1},"a":[]}`, string(out)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func BenchmarkRender(b *testing.B) {
	tpl := mustNew(b, testdataTemplate(b, "qwen3"), Options{EOSToken: "<|im_end|>"})
	tools := json.RawMessage(`[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]`)
	msgs := []tokenizer.Message{
		{Role: "system", Content: "You are terse."},
		{Role: "user", Content: "What is 2+2?"},
		{Role: "assistant", Content: "4"},
		{Role: "user", Content: "And 3+3?"},
	}
	kwargs := map[string]any{"tools": tools}
	for b.Loop() {
		if _, err := tpl.Render(msgs, true, kwargs); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNullContentRetry: a template that calls a string method on every
// assistant content (Qwen3's content.lstrip) renders a tool-call turn
// whose content is null as if it were "", while a template that tests
// for none still sees none.
func TestNullContentRetry(t *testing.T) {
	call := Object{{"role", "assistant"}, {"content", nil}, {"tool_calls", []any{Object{{"function", Object{{"name", "f"}}}}}}}
	msgs := []Object{{{"role", "user"}, {"content", "hi"}}, call, {{"role", "tool"}, {"content", "r"}}}
	tests := []struct{ name, source, want string }{
		{"string method on null", "{% for m in messages %}[{{ m.content.lstrip('\\n') }}]{% endfor %}", "[hi][][r]"},
		{"none kept when it renders", "{% for m in messages %}{{ m.content is none }},{% endfor %}", "False,True,False,"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mustNew(t, tc.source, Options{}).RenderMessages(msgs, false, nil)
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if v, _ := msgs[1].Get("content"); v != nil {
		t.Errorf("the caller's message was changed: content %v", v)
	}
}
