package servertools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fixture makes a small tree and returns its root.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"a.txt":           "line1\nline2\nline3\n",
		"sub/b.go":        "package b\n// MARKER here\n",
		"sub/deep/c.go":   "x\n",
		"build/junk.go":   "// MARKER in junk\n",
		"big.txt":         strings.Repeat("0123456789abcdef\n", 1100), // over read_file's 16 KB
		"paren.txt":       "f(x)\n",
		"notes/README.md": "r\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// identity is an isolate whose commands run right here: the isolate's
// code paths (sh, cat, wc, find) checked against this machine.
func identity(cwd string) fsys {
	return isolate{cwd: cwd, wrap: func(inner []string, _ bool) []string { return inner }}
}

// invoke runs one tool by name on fs.
func invoke(t *testing.T, fs fsys, env Env, name, params string) (map[string]any, error) {
	t.Helper()
	var tool *Tool
	for _, tl := range all() {
		if tl.Name == name {
			tool = tl
		}
	}
	res, err := tool.invoke(context.Background(), call{fs: fs, env: env, params: json.RawMessage(params)})
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(res)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out, nil
}

func TestTools(t *testing.T) {
	dir := fixture(t)
	tests := []struct {
		name, tool, params string
		field              string   // the result field checked
		want               []string // substrings of it, in order
		not                string   // a substring it must not hold
	}{
		{"read", "read_file", `{"path":"a.txt"}`, "plain_text_response", []string{"line1\nline2\nline3\n"}, ""},
		{"read range with numbers", "read_file", `{"path":"a.txt","start_line":2,"end_line":2,"append_loc":true}`,
			"plain_text_response", []string{"2\u2192line2\n"}, "line3"},
		{"read absolute", "read_file", `{"path":"` + dir + `/sub/b.go"}`, "plain_text_response", []string{"package b"}, ""},
		{"read too large", "read_file", `{"path":"big.txt"}`, "error", []string{"file too large (18700 bytes, max 16384)"}, ""},
		{"read part of a large file", "read_file", `{"path":"big.txt","end_line":1}`, "plain_text_response", []string{"0123456789abcdef\n"}, ""},
		{"read missing", "read_file", `{"path":"nope.txt"}`, "error", []string{"cannot stat file: nope.txt"}, ""},
		{"read dotdot", "read_file", `{"path":"sub/../a.txt"}`, "plain_text_response", []string{"line1"}, ""},

		{"glob", "file_glob_search", `{"path":".","include":"*.go"}`, "plain_text_response",
			[]string{"sub/b.go\n", "sub/deep/c.go\n", "Total matches: 2"}, "junk.go"},
		{"glob dirs", "file_glob_search", `{"path":".","type":"dir"}`, "plain_text_response", []string{"build/\n", "sub/\n", "sub/deep/\n"}, "a.txt"},
		{"glob depth 1", "file_glob_search", `{"path":".","max_depth":1}`, "plain_text_response", []string{"a.txt", "Total matches: 3"}, "b.go"},
		{"glob limit", "file_glob_search", `{"path":".","limit":1,"include":"*.go"}`, "plain_text_response",
			[]string{"Total matches: 2", "[1 results limit reached (2 total matches)"}, ""},
		{"glob exclude", "file_glob_search", `{"path":".","include":"*.go","exclude":"deep/*"}`, "plain_text_response", []string{"Total matches: 1"}, "c.go"},
		{"glob path with /", "file_glob_search", `{"path":".","include":"deep/*.go"}`, "plain_text_response", []string{"sub/deep/c.go", "Total matches: 1"}, ""},
		{"glob bad limit", "file_glob_search", `{"path":".","limit":0}`, "error", []string{"invalid limit: 0 (expected 1 or more)"}, ""},
		{"glob bad type", "file_glob_search", `{"path":".","type":"bogus"}`, "error", []string{`invalid type: bogus (expected "file", "dir" or "all")`}, ""},
		{"glob not a dir", "file_glob_search", `{"path":"a.txt"}`, "error", []string{"path does not exist or is not a directory: a.txt"}, ""},

		{"grep", "grep_search", `{"path":".","pattern":"MARKER"}`, "plain_text_response", []string{"sub/b.go:// MARKER here\n", "Total matches: 1"}, "junk"},
		{"grep context", "grep_search", `{"path":".","pattern":"MARKER","context_lines":1}`, "plain_text_response",
			[]string{"sub/b.go-1-package b\nsub/b.go:2:// MARKER here\n--\n"}, ""},
		{"grep numbers", "grep_search", `{"path":"a.txt","pattern":"line[23]","return_line_numbers":true}`, "plain_text_response",
			[]string{"a.txt:2:line2\na.txt:3:line3\n", "Total matches: 2"}, ""},
		{"grep literal", "grep_search", `{"path":".","pattern":"f(x)","literal":true}`, "plain_text_response", []string{"paren.txt:f(x)", "Total matches: 1"}, ""},
		{"grep ignore case", "grep_search", `{"path":".","pattern":"marker","ignore_case":true,"include":"*.go"}`, "plain_text_response", []string{"Total matches: 1"}, ""},
		{"grep bad regex", "grep_search", `{"path":".","pattern":"("}`, "error", []string{"invalid regex"}, ""},
		{"grep missing path", "grep_search", `{"path":"nope","pattern":"x"}`, "error", []string{"path does not exist: nope"}, ""},

		{"exec", "exec_shell_command", `{"command":"echo hi; pwd; exit 4"}`, "plain_text_response", []string{"hi\n" + dir + "\n", "\n[exit code: 4]"}, ""},
		{"exec stderr", "exec_shell_command", `{"command":"echo oops >&2"}`, "plain_text_response", []string{"oops\n\n[exit code: 0]"}, ""},
		{"exec cap", "exec_shell_command", `{"command":"echo 123456","max_output_size":3}`, "plain_text_response", []string{"123\n[output truncated]\n[exit code: 0]"}, ""},

		{"info", "get_info", `{}`, "cwd", []string{dir}, ""},
	}
	for _, fs := range []struct {
		name string
		fs   fsys
	}{{"host", host{cwd: dir}}, {"isolate", identity(dir)}} {
		for _, tc := range tests {
			t.Run(fs.name+"/"+tc.name, func(t *testing.T) {
				res, err := invoke(t, fs.fs, Env{Cwd: dir}, tc.tool, tc.params)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := res[tc.field].(string)
				rest := got
				for _, w := range tc.want {
					i := strings.Index(rest, w)
					if i < 0 {
						t.Fatalf("%s = %q (result %v), want %q in it", tc.field, got, res, w)
					}
					rest = rest[i+len(w):]
				}
				if tc.not != "" && strings.Contains(got, tc.not) {
					t.Errorf("%s = %q holds %q", tc.field, got, tc.not)
				}
			})
		}
	}
}

// TestWriteAndEdit: write_file creates parent directories; edit_file
// edits what it wrote; both answer llama-server's fields.
func TestWriteAndEdit(t *testing.T) {
	for _, fs := range []struct {
		name string
		fs   func(string) fsys
	}{{"host", func(d string) fsys { return host{cwd: d} }}, {"isolate", identity}} {
		t.Run(fs.name, func(t *testing.T) {
			dir := t.TempDir()
			f := fs.fs(dir)
			res, err := invoke(t, f, Env{}, "write_file", `{"path":"new/dir/x.txt","content":"one\ntwo\n"}`)
			if err != nil || res["result"] != "file written successfully" || res["bytes"] != 8.0 || res["path"] != "new/dir/x.txt" {
				t.Fatalf("write: %v %v", res, err)
			}
			res, err = invoke(t, f, Env{}, "edit_file", `{"path":"new/dir/x.txt","edits":[{"old_text":"two","new_text":"2"},{"old_text":"one","new_text":"1"}]}`)
			if err != nil || res["result"] != "file edited successfully" || res["edits_applied"] != 2.0 {
				t.Fatalf("edit: %v %v", res, err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "new/dir/x.txt")); string(b) != "1\n2\n" {
				t.Errorf("file holds %q", b)
			}
			res, _ = invoke(t, f, Env{}, "edit_file", `{"path":"new/dir/x.txt","edits":[]}`)
			if res["error"] != `"edits" must be a non-empty array` {
				t.Errorf("empty edits: %v", res)
			}
			res, _ = invoke(t, f, Env{}, "edit_file", `{"path":"new/dir/x.txt","edits":[{"old_text":"","new_text":"x"}]}`)
			if res["error"] != "edits[0].old_text must not be empty" {
				t.Errorf("empty old_text: %v", res)
			}
			res, _ = invoke(t, f, Env{}, "edit_file", `{"path":"missing.txt","edits":[{"old_text":"a","new_text":"b"}]}`)
			if res["error"] != "failed to open file: missing.txt" {
				t.Errorf("missing file: %v", res)
			}
		})
	}
}

func TestBadParams(t *testing.T) {
	tests := []struct{ tool, params string }{
		{"read_file", `{}`},
		{"read_file", `{"path":3}`},
		{"write_file", `{"path":"x"}`},
		{"edit_file", `{"path":"x"}`},
		{"edit_file", `{"path":"x","edits":[{"old_text":"a"}]}`},
		{"grep_search", `{"path":"."}`},
		{"file_glob_search", `{}`},
		{"exec_shell_command", `{"timeout":1}`},
	}
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "x"), []byte("a"), 0o644)
	for _, tc := range tests {
		if _, err := invoke(t, host{cwd: dir}, Env{}, tc.tool, tc.params); !errors.Is(err, ErrBadParams) {
			t.Errorf("%s %s: %v, want ErrBadParams", tc.tool, tc.params, err)
		}
	}
}

// TestReadBase64: x-resp-type: base64 answers the bytes, whatever they are.
func TestReadBase64(t *testing.T) {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "bin"), []byte{0, 1, 2, 255}, 0o644)
	res, err := invoke(t, host{cwd: dir}, Env{Base64: true}, "read_file", `{"path":"bin"}`)
	if err != nil || res["base64"] != "AAEC/w==" || res["size_bytes"] != 4.0 {
		t.Errorf("got %v %v", res, err)
	}
}

// TestExecStream: a streamed command's output arrives in chunks, then
// its exit code; a caller gone stops it and nothing more is sent.
func TestExecStream(t *testing.T) {
	s, _ := New([]string{"exec_shell_command"}, "")
	tool, _ := s.Lookup("exec_shell_command", true)
	var chunks []string
	res, err := s.Call(context.Background(), tool, json.RawMessage(`{"command":"echo hello"}`), Env{}, func(c string) bool {
		chunks = append(chunks, c)
		return true
	})
	if err != nil || res != nil || strings.Join(chunks, "") != "hello\n\n[exit code: 0]" {
		t.Errorf("chunks %q, result %v, err %v", chunks, res, err)
	}
	chunks = nil
	_, _ = s.Call(context.Background(), tool, json.RawMessage(`{"command":"echo a; sleep 30; echo b"}`), Env{}, func(c string) bool {
		chunks = append(chunks, c)
		return false
	})
	if strings.Join(chunks, "") != "a\n" {
		t.Errorf("after the caller left: %q", chunks)
	}
}

// TestCallRuntime: the Set's runtime applies unless the call names one,
// and one that cannot be used fails the call.
func TestCallRuntime(t *testing.T) {
	s, _ := New([]string{"get_info"}, "ssh:-bad")
	if s != nil {
		t.Fatal("a bad --tools-runtime must fail New")
	}
	s, _ = New([]string{"get_info"}, "")
	tool, _ := s.Lookup("get_info", false)
	if _, err := s.Call(context.Background(), tool, nil, Env{Runtime: "fake:x"}, nil); errText(err) != "unknown tool runtime: fake:x" {
		t.Errorf("fake runtime: %v", err)
	}
	res, err := s.Call(context.Background(), tool, nil, Env{}, nil)
	if wd, _ := os.Getwd(); err != nil || res.(map[string]any)["cwd"] != wd {
		t.Errorf("get_info without a cwd: %v %v", res, err)
	}
}

// TestListGit: in a git work tree, files come from git (ignored ones
// left out); a tree git ignores as a whole is walked instead.
func TestListGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	for name, body := range map[string]string{".gitignore": "ignored.txt\nout/\n", "kept.txt": "k", "ignored.txt": "i", "out/x.txt": "x", "out/y.txt": "y"} {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		_ = os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	h := host{}
	got := rels(h.list(context.Background(), dir, 0, listFiles))
	if got != ".gitignore kept.txt" {
		t.Errorf("git listing: %q", got)
	}
	if got := rels(h.list(context.Background(), dir+"/out", 0, listFiles)); got != "x.txt y.txt" {
		t.Errorf("ignored tree: %q", got)
	}
}

func rels(l listing) string {
	var out []string
	for _, e := range l.Entries {
		out = append(out, e.Rel)
	}
	return strings.Join(out, " ")
}
