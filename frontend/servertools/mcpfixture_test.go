package servertools

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fixtureEnv makes the test binary an MCP server (runFixture) instead
// of running the tests: the value is its mode.
const fixtureEnv = "SERVERTOOLS_MCP_FIXTURE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fixtureEnv); mode != "" {
		runFixture(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// mcpFixture is an MCPServer running this test binary as MCP server mode.
func mcpFixture(t *testing.T, name, mode string, timeout time.Duration) MCPServer {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return MCPServer{Name: name, Command: exe, Env: map[string]string{fixtureEnv: mode}, Timeout: timeout}
}

// runFixture is a small MCP server on stdin and stdout. Modes: "echo"
// (tools echo, add, fail_once, sleep, crash, listed over two pages),
// "empty" (no tools), "mute" (never answers), "grandchild" (echo, with
// a child that inherits its pipes and outlives it), "hold" (that child).
// Calls run concurrently, so their responses can come out of order.
func runFixture(mode string) {
	switch mode {
	case "hold":
		time.Sleep(30 * time.Second)
		return
	case "grandchild":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), fixtureEnv+"=hold")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		_ = cmd.Start()
	}
	fmt.Fprintln(os.Stderr, "fixture", mode, "started")
	var wmu sync.Mutex
	write := func(lines ...any) { // one write: a notification and a response land together
		var b []byte
		for _, l := range lines {
			j, _ := json.Marshal(l)
			b = append(append(b, j...), '\n')
		}
		wmu.Lock()
		_, _ = os.Stdout.Write(b)
		wmu.Unlock()
	}
	pongs := make(chan struct{}, 1)
	var failedOnce sync.Once
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string         `json:"name"`
				Cursor    string         `json:"cursor"`
				Arguments map[string]any `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil {
			write(map[string]any{"junk": true})
			continue
		}
		if string(req.ID) == `"pong"` { // our ping's response
			pongs <- struct{}{}
			continue
		}
		if len(req.ID) == 0 || mode == "mute" {
			continue
		}
		result := func(r any) map[string]any { return map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": r} }
		text := func(s string) map[string]any {
			return result(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}, map[string]any{"type": "image", "data": "x"}}})
		}
		switch req.Method {
		case "initialize":
			write(result(map[string]any{"protocolVersion": mcpProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}}}))
		case "tools/list":
			switch {
			case mode == "empty":
				write(result(map[string]any{"tools": []any{}}))
			case req.Params.Cursor == "":
				write(result(map[string]any{"tools": []any{fixtureTool("echo"), fixtureTool("add")}, "nextCursor": "2"}))
			default:
				write(result(map[string]any{"tools": []any{fixtureTool("fail_once"), fixtureTool("sleep"), fixtureTool("crash"), map[string]any{"name": "bare"}}}))
			}
		case "tools/call":
			go func() {
				a := req.Params.Arguments
				switch req.Params.Name {
				case "echo":
					msg, _ := a["message"].(string)
					if msg == "ping-first" { // the server asks the client something first
						write(map[string]any{"jsonrpc": "2.0", "id": "pong", "method": "ping"})
						<-pongs
					}
					write(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progress": 1}}, text("echo: "+msg))
				case "add":
					x, _ := a["a"].(float64)
					y, _ := a["b"].(float64)
					write(text(strconv.FormatFloat(x+y, 'f', -1, 64)))
				case "fail_once":
					failed := false
					failedOnce.Do(func() { failed = true })
					if failed {
						write(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32000, "message": "transient error"}})
						return
					}
					write(text("ok"))
				case "sleep":
					ms, _ := a["ms"].(float64)
					time.Sleep(time.Duration(ms) * time.Millisecond)
					write(text("slept"))
				case "crash":
					write(text("crashing..."))
					os.Exit(1)
				default:
					write(result(map[string]any{"content": []any{map[string]any{"type": "text", "text": "no such tool"}}, "isError": true}))
				}
			}()
		default:
			write(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		}
	}
}

// fixtureTool is a listed tool with an object schema.
func fixtureTool(name string) map[string]any {
	return map[string]any{"name": name, "description": name + " tool",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}}
}
