package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/servertools"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// TestToolsRoutes: GET /tools lists the enabled tools; POST /tools runs
// one with the x-tool-cwd header's directory, answers llama-server's
// statuses (404 unknown tool or a stream it cannot give, 400 bad body or
// parameters, 500 an unusable runtime, 200 with "error" for a tool's own
// failure), stays behind the API key, and is 403 without --tools.
func TestToolsRoutes(t *testing.T) {
	set, err := servertools.New([]string{"all"}, "")
	if err != nil {
		t.Fatal(err)
	}
	const key = "sk-test"
	ts := newTestServerWith(t, &fakeEngine{}, func(c *Config) { c.Tools, c.APIKey, c.MaxRequestBody = set, key, "1M" }, tokenizer.NewByte())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "marker.txt"), []byte("marker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	auth := map[string]string{"Authorization": "Bearer " + key, "X-Tool-Cwd": dir}

	code, body := do(t, ts, "GET", "/tools", "", auth)
	var list []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 7 || list[0]["tool"] != "read_file" || list[0]["type"] != "server" {
		t.Fatalf("GET /tools: %d %s", code, body)
	}

	tests := []struct {
		name, body string
		hdr        map[string]string
		code       int
		want       string
	}{
		{"read with cwd", `{"tool":"read_file","params":{"path":"marker.txt","cwd":"/not/a/dir"}}`, auth, 200, `"plain_text_response":"marker\n"`},
		{"write", `{"tool":"write_file","params":{"path":"sub/out.txt","content":"w"}}`, auth, 200, `"result":"file written successfully"`},
		{"tool's own failure", `{"tool":"read_file","params":{"path":"nope"}}`, auth, 200, `"error":"cannot stat file: nope"`},
		{"unknown tool", `{"tool":"web_search","params":{}}`, auth, 404, `unknown tool`},
		{"no stream", `{"tool":"read_file","params":{"path":"marker.txt"},"stream":true}`, auth, 404, `does not support stream = true`},
		{"bad JSON", `{"tool":`, auth, 400, `invalid JSON body`},
		{"no tool", `{"params":{}}`, auth, 400, `\"tool\" is required`},
		{"missing param", `{"tool":"read_file","params":{}}`, auth, 400, `\"path\" is required`},
		{"unknown runtime", `{"tool":"exec_shell_command","params":{"command":"echo hi"}}`,
			map[string]string{"Authorization": "Bearer " + key, "X-Tool-Runtime": "fake:x"}, 500, `unknown tool runtime: fake:x`},
		{"container id injection", `{"tool":"exec_shell_command","params":{"command":"echo hi"}}`,
			map[string]string{"Authorization": "Bearer " + key, "X-Tool-Runtime": "docker-container:--privileged"}, 500, `invalid container id`},
		{"no key", `{"tool":"read_file","params":{"path":"marker.txt"}}`, nil, 401, `invalid_api_key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, ts, "POST", "/tools", tc.body, tc.hdr)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s, want %d with %s", code, body, tc.code, tc.want)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "out.txt")); err != nil || string(b) != "w" {
		t.Errorf("write_file wrote %q, %v", b, err)
	}

	off := newTestServerWith(t, &fakeEngine{}, nil, tokenizer.NewByte())
	for _, m := range []string{"GET", "POST"} {
		if code, body := do(t, off, m, "/tools", `{"tool":"read_file"}`, nil); code != http.StatusForbidden || !strings.Contains(body, "feature_disabled") {
			t.Errorf("%s /tools without --tools: %d %s", m, code, body)
		}
	}
}

// TestToolsStream: a streamed exec_shell_command answers its output as
// chunk events, its exit code last among them, then {"done": true}; a
// runtime that cannot be used ends the stream with the error.
func TestToolsStream(t *testing.T) {
	set, _ := servertools.New([]string{"exec_shell_command"}, "")
	ts := newTestServerWith(t, &fakeEngine{}, func(c *Config) { c.Tools = set }, tokenizer.NewByte())
	tests := []struct {
		name   string
		hdr    map[string]string
		chunks string
		last   string
	}{
		{"output", nil, "hello\n\n[exit code: 0]", `{"done":true}`},
		{"bad runtime", map[string]string{"X-Tool-Runtime": "ssh:-oProxyCommand=x"}, "", `{"done":true,"error":"invalid ssh target: -oProxyCommand=x"}`},
	}
	for _, tc := range tests {
		code, body := do(t, ts, "POST", "/tools", `{"tool":"exec_shell_command","params":{"command":"echo hello"},"stream":true}`, tc.hdr)
		var chunks, last string
		for _, line := range strings.Split(body, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var ev struct{ Chunk *string }
			if json.Unmarshal([]byte(data), &ev) == nil && ev.Chunk != nil {
				chunks += *ev.Chunk
			} else {
				last = data
			}
		}
		if code != 200 || chunks != tc.chunks || last != tc.last {
			t.Errorf("%s: %d chunks %q last %s (body %q)", tc.name, code, chunks, last, body)
		}
	}
}

// mcpOnly is a Set of MCP servers alone: one that cannot start, so it
// lists no tools, yet the routes are on.
func mcpOnly(t *testing.T) *servertools.Set {
	m := servertools.NewMCP([]servertools.MCPServer{{Name: "bad", Command: "this_executable_does_not_exist_12345"}}, nil)
	t.Cleanup(m.Close)
	return (*servertools.Set)(nil).WithMCP(m)
}

// TestToolsMCPOnly: MCP servers without --tools turn the routes on.
func TestToolsMCPOnly(t *testing.T) {
	ts := newTestServerWith(t, &fakeEngine{}, func(c *Config) { c.Tools = mcpOnly(t) }, tokenizer.NewByte())
	if code, body := do(t, ts, "GET", "/tools", "", nil); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("GET /tools: %d %s", code, body)
	}
	if code, body := do(t, ts, "POST", "/tools", `{"tool":"bad_x","params":{}}`, nil); code != 404 || !strings.Contains(body, "unknown tool") {
		t.Errorf("POST /tools: %d %s", code, body)
	}
}

// TestToolsCORS: with tools on (built-in or MCP servers') and no
// origins set, only loopback pages may call; origins set explicitly
// stay as set.
func TestToolsCORS(t *testing.T) {
	set, _ := servertools.New([]string{"read_file"}, "")
	mcp := mcpOnly(t)
	tests := []struct {
		name    string
		tools   *servertools.Set
		origins []string
		origin  string
		want    string
	}{
		{"tools: localhost", set, nil, "http://localhost:8080", "http://localhost:8080"},
		{"tools: elsewhere refused", set, nil, "http://evil.com", ""},
		{"tools, origins set", set, []string{"*"}, "http://evil.com", "http://evil.com"},
		{"no tools: every origin", nil, nil, "http://evil.com", "http://evil.com"},
		{"MCP servers: localhost", mcp, nil, "http://127.0.0.1:3000", "http://127.0.0.1:3000"},
		{"MCP servers: elsewhere refused", mcp, nil, "http://evil.com", ""},
		{"MCP servers, origins set", mcp, []string{"*"}, "http://evil.com", "http://evil.com"},
	}
	for _, tc := range tests {
		ts := newTestServerWith(t, &fakeEngine{}, func(c *Config) { c.Tools, c.CORS.Origins = tc.tools, tc.origins }, tokenizer.NewByte())
		req, _ := http.NewRequest(http.MethodOptions, ts.URL+"/completions", nil)
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Origin"); resp.StatusCode != 200 || got != tc.want {
			t.Errorf("%s: %d allow-origin %q, want %q", tc.name, resp.StatusCode, got, tc.want)
		}
	}
}
