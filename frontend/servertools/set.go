package servertools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors of a request Call cannot run (a tool's own failure is a result).
var (
	ErrUnknownTool = errors.New("unknown tool")
	ErrNoStream    = errors.New("tool does not stream")
	ErrBadParams   = errors.New("bad tool parameters")
)

// Env is where one call runs: the working directory (x-tool-cwd; "" is
// the server's) and the runtime (x-tool-runtime; "" is the Set's own).
type Env struct {
	Cwd     string
	Runtime string
	// Base64 asks read_file for the file's bytes in base64 (x-resp-type:
	// base64); a model cannot ask for it.
	Base64 bool
}

// call is what a tool's invoke gets.
type call struct {
	fs     fsys
	env    Env
	params json.RawMessage
	emit   func(string) bool // set when streaming: false means the caller is gone
}

// Tool is one built-in tool.
type Tool struct {
	Name        string
	DisplayName string
	Write       bool // it can change things: write files, run commands
	Stream      bool // exec_shell_command: its output can be streamed
	// Definition is the OpenAI function definition the model sees.
	Definition map[string]any
	invoke     func(ctx context.Context, c call) (any, error)
	server     string // an MCP tool's server (mcp.go); "" a built-in tool
}

// Listing is a tool as GET /tools lists it.
type Listing struct {
	DisplayName string         `json:"display_name"`
	Tool        string         `json:"tool"`
	Type        string         `json:"type"`
	Permissions map[string]any `json:"permissions"`
	UsesCwd     bool           `json:"uses_cwd"`
	Definition  map[string]any `json:"definition"`
}

// Set is the enabled tools and the runtime they run in by default.
type Set struct {
	tools   []*Tool
	runtime string
}

// all builds every built-in tool, in llama-server's order.
func all() []*Tool {
	return []*Tool{readFileTool(), fileGlobSearchTool(), grepSearchTool(), execShellCommandTool(),
		writeFileTool(), editFileTool(), getInfoTool()}
}

// Names are the built-in tools' names.
func Names() []string {
	var out []string
	for _, t := range all() {
		out = append(out, t.Name)
	}
	return out
}

// New enables the named tools ("all" is every one) running in runtime
// ("" the host; see CheckRuntime). No names is nil: tools are off.
func New(names []string, runtime string) (*Set, error) {
	if runtime != "" {
		if err := CheckRuntime(runtime); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	known := Names()
	for _, n := range names {
		if n != "all" && !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown tool %q. available tools: %s", n, strings.Join(known, ", "))
		}
	}
	s := &Set{runtime: runtime}
	for _, t := range all() {
		if slices.Contains(names, "all") || slices.Contains(names, t.Name) {
			s.tools = append(s.tools, t)
		}
	}
	return s, nil
}

// List is the enabled tools as GET /tools lists them.
func (s *Set) List() []Listing {
	out := []Listing{}
	for _, t := range s.tools {
		kind := "server"
		if t.server != "" {
			kind = "mcp"
		}
		out = append(out, Listing{DisplayName: t.DisplayName, Tool: t.Name, Type: kind,
			Permissions: map[string]any{"write": t.Write}, UsesCwd: t.server == "", Definition: t.Definition})
	}
	return out
}

// Lookup finds an enabled tool; stream asks for one that streams.
func (s *Set) Lookup(name string, stream bool) (*Tool, error) {
	for _, t := range s.tools {
		if t.Name != name {
			continue
		}
		if stream && !t.Stream {
			return nil, fmt.Errorf("%w: tool %q does not support stream = true", ErrNoStream, name)
		}
		return t, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
}

// Call runs tool t with params (a JSON object) in env. With emit set
// (a streaming tool), output goes to emit as it comes, ending with the
// exit code, and the result is nil; emit returning false stops the tool.
// The result is JSON-ready: {"plain_text_response": ...}, the tool's
// own fields, or {"error": ...}.
func (s *Set) Call(ctx context.Context, t *Tool, params json.RawMessage, env Env, emit func(string) bool) (any, error) {
	if env.Runtime == "" {
		env.Runtime = s.runtime
	}
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if t.server != "" { // an MCP tool: no files of its own
		return t.invoke(ctx, call{env: env, params: params})
	}
	fs, err := openFsys(env.Cwd, env.Runtime)
	if err != nil {
		return nil, err
	}
	return t.invoke(ctx, call{fs: fs, env: env, params: params, emit: emit})
}

// decode reads a tool's parameters into p (a pointer to a struct whose
// required fields are pointers: the tool checks them with missing).
func decode(raw json.RawMessage, p any) error {
	if err := json.Unmarshal(raw, p); err != nil {
		return fmt.Errorf("%w: %v", ErrBadParams, err)
	}
	return nil
}

// missing is the error for a required parameter not given.
func missing(name string) error { return fmt.Errorf("%w: %q is required", ErrBadParams, name) }

// function is an OpenAI function definition; props maps each parameter
// to its JSON type and description.
func function(name, desc string, props map[string][2]string, required ...string) map[string]any {
	ps := map[string]any{}
	for k, v := range props {
		ps[k] = map[string]any{"type": v[0], "description": v[1]}
	}
	params := map[string]any{"type": "object", "properties": ps}
	if len(required) > 0 {
		params["required"] = required
	}
	return map[string]any{"type": "function", "function": map[string]any{"name": name, "description": desc, "parameters": params}}
}

// failf is a tool's own failure, answered as llama-server does.
func failf(format string, args ...any) map[string]any {
	return map[string]any{"error": fmt.Sprintf(format, args...)}
}

// text is a result the model reads as is.
func text(s string) map[string]any { return map[string]any{"plain_text_response": s} }
