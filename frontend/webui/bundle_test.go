package webui

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// toolchain returns node and the pinned esbuild of node_modules, or skips
// when they are missing (make test installs them: scripts/webui.sh).
func toolchain(t *testing.T) (node, esbuild string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (scripts/setup.sh installs it)")
	}
	esbuild = filepath.Join("node_modules", ".bin", "esbuild")
	if _, err := os.Stat(esbuild); err != nil {
		t.Skip("frontend/webui/node_modules is missing: run scripts/webui.sh (npm ci)")
	}
	return node, esbuild
}

// TestBundleMatchesSources rebuilds dist/ from src/ with the pinned
// esbuild into a temporary directory and compares: dist/ is committed (so
// go build needs no front-end toolchain) and must be what src/ builds.
func TestBundleMatchesSources(t *testing.T) {
	node, _ := toolchain(t)
	out := t.TempDir()
	cmd := exec.Command(node, "build.mjs", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node build.mjs: %v\n%s", err, b)
	}
	want, err := filepath.Glob(filepath.Join(out, "*"))
	if err != nil {
		t.Fatal(err)
	}
	have, _ := filepath.Glob(filepath.Join("dist", "*"))
	names := func(ps []string) []string {
		var n []string
		for _, p := range ps {
			n = append(n, filepath.Base(p))
		}
		return n
	}
	if diff := cmp.Diff(names(want), names(have)); diff != "" {
		t.Fatalf("dist/ files differ from a fresh build (-built +committed):\n%s\nrun: cd frontend/webui && npm run build", diff)
	}
	for _, p := range want {
		a, _ := os.ReadFile(p)
		b, _ := os.ReadFile(filepath.Join("dist", filepath.Base(p)))
		if !bytes.Equal(a, b) {
			t.Errorf("dist/%s is not what src/ builds: run: cd frontend/webui && npm run build", filepath.Base(p))
		}
	}
}

// TestMarkdown renders Markdown with src/markdown.ts under node: every
// input is escaped, and only safe links survive.
func TestMarkdown(t *testing.T) {
	node, esbuild := toolchain(t)
	mod := filepath.Join(t.TempDir(), "markdown.mjs")
	if b, err := exec.Command(esbuild, "src/markdown.ts", "--bundle", "--format=esm", "--platform=node", "--outfile="+mod).CombinedOutput(); err != nil {
		t.Fatalf("esbuild: %v\n%s", err, b)
	}
	tests := []struct{ name, in, want string }{
		{"paragraph", "Paris is the capital.", "<p>Paris is the capital.</p>"},
		{"html is escaped", `<img src=x onerror="alert(1)">`, "<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>"},
		{"emphasis", "**bold** and *it* and `a<b>`", "<p><strong>bold</strong> and <em>it</em> and <code>a&lt;b&gt;</code></p>"},
		{"fenced code keeps markup", "```go\nx := <-ch // **no**\n```", `<pre><code class="language-go" data-lang="go">x := &lt;-ch // **no**</code></pre>`},
		{"unclosed fence while streaming", "```\nfn()", "<pre><code>fn()</code></pre>"},
		{"heading and list", "# Title\n- one\n- two", "<h1>Title</h1>\n<ul><li>one</li><li>two</li></ul>"},
		{"ordered list", "1. a\n2. b", "<ol><li>a</li><li>b</li></ol>"},
		{"safe link", "[docs](https://example.com/a_b_c)", `<p><a href="https://example.com/a_b_c" rel="noopener noreferrer" target="_blank">docs</a></p>`},
		{"javascript link is text", "[x](javascript:alert(1))", "<p>[x](javascript:alert(1))</p>"},
		{"quote breaks out of nothing", `[x](https://a.b/"onmouseover=alert(1))`, `<p><a href="https://a.b/&quot;onmouseover=alert(1" rel="noopener noreferrer" target="_blank">x</a>)</p>`},
		{"block quote", "> said", "<blockquote><p>said</p></blockquote>"},
		{"line break", "a\nb", "<p>a<br>b</p>"},
		{"placeholder bytes are not links", "\x000\x00", "<p>\uFFFD0\uFFFD</p>"},
	}
	var ins []string
	for _, tc := range tests {
		ins = append(ins, tc.in)
	}
	stdin, _ := json.Marshal(ins)
	script := `import { render } from ` + jsString(mod) + `;
let s = ''; process.stdin.on('data', d => s += d).on('end', () => console.log(JSON.stringify(JSON.parse(s).map(render))));`
	cmd := exec.Command(node, "--input-type=module", "-e", script)
	cmd.Stdin = bytes.NewReader(stdin)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got []string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	for i, tc := range tests {
		if got[i] != tc.want {
			t.Errorf("%s: render(%q)\n got %s\nwant %s", tc.name, tc.in, got[i], tc.want)
		}
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
