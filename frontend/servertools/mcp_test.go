package servertools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestParseMCPConfig(t *testing.T) {
	tests := []struct {
		name, in string
		want     []MCPServer
		err      string
	}{
		{"cursor format, name order", `{"mcpServers": {"b": {"command": "py", "args": ["s.py"], "env": {"K": "V"}, "cwd": "/tmp", "timeout_ms": 500}, "a": {"command": "x"}}}`,
			[]MCPServer{{Name: "a", Command: "x"}, {Name: "b", Command: "py", Args: []string{"s.py"}, Env: map[string]string{"K": "V"}, Cwd: "/tmp", Timeout: 500 * time.Millisecond}}, ""},
		{"no mcpServers", `{"servers": {}}`, nil, ""},
		{"not an object", `[1]`, nil, ""},
		{"url server kept (NewMCP skips it)", `{"mcpServers": {"u": {"url": "http://x"}}}`, []MCPServer{{Name: "u"}}, ""},
		{"invalid JSON", `not valid json`, nil, "invalid JSON"},
		{"args not strings", `{"mcpServers": {"a": {"command": "x", "args": [1]}}}`, nil, `MCP server "a"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMCPConfig([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestReadLines(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"lines", "a\nb\r\n\n  \nc\n", []string{"a", "b", "c"}},
		{"unterminated last dropped", "a\nb", []string{"a"}},
		{"too long dropped whole", "a\n" + strings.Repeat("x", 20) + "\nb\n", []string{"a", "b"}},
		{"at the limit kept", strings.Repeat("y", 16) + "\n", []string{strings.Repeat("y", 16)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := readLines(strings.NewReader(tc.in), 16, func(l []byte) { got = append(got, string(l)) })
			if err != io.EOF || !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseRPC(t *testing.T) {
	tests := []struct {
		name, in  string
		id        int64
		ok        bool
		reply     string // a substring of the reply, "" none
		errorText string // the response's error, "" none
	}{
		{"response", `{"jsonrpc":"2.0","id":7,"result":{}}`, 7, true, "", ""},
		{"error string", `{"jsonrpc":"2.0","id":3,"error":"boom"}`, 3, true, "", "boom"},
		{"error object", `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"bad"}}`, 3, true, "", "bad"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/progress"}`, 0, false, "", ""},
		{"ping from the server", `{"jsonrpc":"2.0","id":"p","method":"ping"}`, 0, false, `"id":"p","result":{}`, ""},
		{"other request", `{"jsonrpc":"2.0","id":9,"method":"roots/list"}`, 0, false, `"code":-32601`, ""},
		{"string id: not ours", `{"jsonrpc":"2.0","id":"x","result":{}}`, 0, false, "", ""},
		{"not JSON", `THIS IS NOT JSON`, 0, false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, msg, reply, ok := parseRPC([]byte(tc.in))
			if id != tc.id || ok != tc.ok || (tc.reply == "") != (reply == nil) || !strings.Contains(string(reply), tc.reply) {
				t.Fatalf("id %d ok %v reply %s", id, ok, reply)
			}
			if err := responseError(msg); (err == nil) != (tc.errorText == "") || (err != nil && err.Error() != tc.errorText) {
				t.Fatalf("error %v, want %q", err, tc.errorText)
			}
		})
	}
}

func TestCallResult(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]}`, `{"plain_text_response":"a\nb"}`},
		{`{"content":[]}`, `{"plain_text_response":""}`},
		{`{"content":[{"type":"text","text":"nope"}],"isError":true}`, `{"error":"nope"}`},
		{`{"isError":true}`, `{"error":"MCP tool returned an error"}`},
		{`[]`, `{"error":"invalid response from MCP server"}`},
	}
	for _, tc := range tests {
		if b, _ := json.Marshal(callResult(json.RawMessage(tc.in))); string(b) != tc.want {
			t.Errorf("%s: %s, want %s", tc.in, b, tc.want)
		}
	}
}

// callJSON runs tool name of set and answers its result as JSON.
func callJSON(t *testing.T, set *Set, name, params string) string {
	t.Helper()
	tool, err := set.Lookup(name, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := set.Call(context.Background(), tool, json.RawMessage(params), Env{}, nil)
	if err != nil {
		return "err: " + err.Error()
	}
	b, _ := json.Marshal(res)
	return string(b)
}

// TestMCPTools: warm-up lists every server's tools (all pages) as
// SERVER_TOOL, a server that cannot start lists none; calls answer as
// llama-server does, concurrently, told apart by id; a server that
// crashed is started again.
func TestMCPTools(t *testing.T) {
	m := NewMCP([]MCPServer{mcpFixture(t, "echo", "echo", 5*time.Second), mcpFixture(t, "empty", "empty", 0),
		{Name: "bad", Command: "this_executable_does_not_exist_12345"}, {Name: "url"}}, quiet)
	defer m.Close()
	m.Warm(context.Background())
	builtin, _ := New([]string{"get_info"}, "")
	set := builtin.WithMCP(m)
	var names []string
	for _, l := range set.List() {
		names = append(names, l.Tool)
		if l.Tool != "get_info" && (l.Type != "mcp" || l.UsesCwd) {
			t.Errorf("%s listed as %+v", l.Tool, l)
		}
	}
	if want := []string{"get_info", "echo_echo", "echo_add", "echo_fail_once", "echo_sleep", "echo_crash", "echo_bare"}; !slices.Equal(names, want) {
		t.Fatalf("tools %q, want %q", names, want)
	}
	def, _ := json.Marshal(set.List()[6].Definition)
	if want := `{"function":{"description":"","name":"echo_bare","parameters":{"properties":{},"type":"object"}},"type":"function"}`; string(def) != want {
		t.Errorf("definition %s, want %s", def, want)
	}

	tests := []struct{ name, tool, params, want string }{
		{"echo", "echo_echo", `{"message":"hi"}`, `{"plain_text_response":"echo: hi"}`},
		{"no params", "echo_add", ``, `{"plain_text_response":"0"}`},
		{"add", "echo_add", `{"a":3,"b":5}`, `{"plain_text_response":"8"}`},
		{"server asks first", "echo_echo", `{"message":"ping-first"}`, `{"plain_text_response":"echo: ping-first"}`},
		{"fails once", "echo_fail_once", `{}`, `{"error":"transient error"}`},
		{"then succeeds", "echo_fail_once", `{}`, `{"plain_text_response":"ok"}`},
		{"params not an object", "echo_echo", `[1]`, `err: bad tool parameters: params must be a JSON object`},
	}
	for _, tc := range tests {
		if got := callJSON(t, set, tc.tool, tc.params); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			ms := (20 - i) * 5 // later calls answer first
			want := `{"plain_text_response":"echo: m` + fmt.Sprint(i) + `"}`
			if i%2 == 0 {
				if got := callJSON(t, set, "echo_sleep", fmt.Sprintf(`{"ms":%d}`, ms)); got != `{"plain_text_response":"slept"}` {
					t.Errorf("sleep %d: %s", i, got)
				}
				return
			}
			if got := callJSON(t, set, "echo_echo", fmt.Sprintf(`{"message":"m%d"}`, i)); got != want {
				t.Errorf("concurrent %d: %s, want %s", i, got, want)
			}
		})
	}
	wg.Wait()

	slot := m.slots[0]
	first := slot.c
	if got := callJSON(t, set, "echo_crash", `{}`); got != `{"plain_text_response":"crashing..."}` {
		t.Errorf("crash: %s", got)
	}
	for deadline := time.Now().Add(2 * time.Second); first.alive() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := callJSON(t, set, "echo_echo", `{"message":"again"}`); got != `{"plain_text_response":"echo: again"}` {
		t.Errorf("after the crash: %s", got)
	}
	if slot.c == first {
		t.Error("the crashed server was not started again")
	}
	if got := m.call(context.Background(), m.slots[2], "x", json.RawMessage(`{}`)); !strings.Contains(fmt.Sprint(got), "MCP server unavailable: bad") {
		t.Errorf("server that failed to start: %v", got)
	}
}

// TestMCPTimeouts: a call past its server's timeout answers an error at
// once; a server that never answers initialize lists no tools after its
// timeout, not the whole warm-up's.
func TestMCPTimeouts(t *testing.T) {
	m := NewMCP([]MCPServer{mcpFixture(t, "slow", "echo", 300*time.Millisecond), mcpFixture(t, "mute", "mute", 300*time.Millisecond)}, quiet)
	defer m.Close()
	start := time.Now()
	m.Warm(context.Background())
	set := (*Set)(nil).WithMCP(m)
	if n := len(set.List()); n != 6 || time.Since(start) > 3*time.Second {
		t.Fatalf("%d tools after %v", n, time.Since(start))
	}
	start = time.Now()
	if got := callJSON(t, set, "slow_sleep", `{"ms":5000}`); got != `{"error":"request timed out"}` || time.Since(start) > 2*time.Second {
		t.Errorf("slow call: %s after %v", got, time.Since(start))
	}
	if got := callJSON(t, set, "slow_echo", `{"message":"still there"}`); got != `{"plain_text_response":"echo: still there"}` {
		t.Errorf("after a timeout: %s", got)
	}
}

// TestMCPClose: Close ends the calls in flight and returns promptly,
// even for a server whose child holds its pipes open.
func TestMCPClose(t *testing.T) {
	m := NewMCP([]MCPServer{mcpFixture(t, "slow", "echo", 30*time.Second), mcpFixture(t, "gc", "grandchild", 0)}, quiet)
	m.Warm(context.Background())
	set := (*Set)(nil).WithMCP(m)
	if got := callJSON(t, set, "gc_echo", `{"message":"hello"}`); got != `{"plain_text_response":"echo: hello"}` {
		t.Fatalf("grandchild server: %s", got)
	}
	done := make(chan string)
	go func() { done <- callJSON(t, set, "slow_sleep", `{"ms":10000}`) }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	m.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	select {
	case got := <-done:
		if !strings.Contains(got, "shutting down") {
			t.Errorf("call in flight: %s", got)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the call in flight did not end")
	}
	if got := callJSON(t, set, "gc_echo", `{}`); !strings.Contains(got, "shutting down") {
		t.Errorf("call after Close: %s", got)
	}
}

func TestNewMCPNone(t *testing.T) {
	if m := NewMCP([]MCPServer{{Name: "url"}}, quiet); m != nil {
		t.Fatal("servers with no command: want nil")
	}
	var m *MCP
	m.Warm(context.Background())
	m.Close()
	if (*Set)(nil).WithMCP(nil) != nil {
		t.Fatal("no tools, no MCP: want nil Set")
	}
}
