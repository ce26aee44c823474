package servertools

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// MCP's JSON-RPC 2.0 as an MCP client speaks it over a server's stdin
// and stdout: one JSON object a line. Everything here is pure; the
// process and its pipes are mcpClient's.

// mcpProtocolVersion is the MCP revision Tandem asks for, as
// llama-server does.
const mcpProtocolVersion = "2024-11-05"

// maxMCPLine is the longest line read from an MCP server; a longer one
// is dropped whole, so a server that never writes '\n' cannot grow the
// buffer without bound.
const maxMCPLine = 8 << 20

// rpcOut is a message Tandem sends: a request (ID set) or a
// notification.
type rpcOut struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  any             `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   any             `json:"error,omitempty"`
}

// rpcIn is a line an MCP server wrote: a response (ID and no Method), a
// request of its own (ID and Method), or a notification (Method only).
type rpcIn struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// line is m as one line.
func (m rpcOut) line() ([]byte, error) {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// rpcRequest is request id's line.
func rpcRequest(id int64, method string, params any) ([]byte, error) {
	raw, _ := json.Marshal(id)
	return rpcOut{ID: raw, Method: method, Params: params}.line()
}

// rpcNotification is a notification's line.
func rpcNotification(method string, params any) []byte {
	b, _ := rpcOut{Method: method, Params: params}.line() // params are Tandem's own: always marshal
	return b
}

// initializeParams are the initialize request's: no client capabilities
// (no sampling, no roots), so a server has nothing to ask of Tandem but
// ping.
func initializeParams() map[string]any {
	return map[string]any{"protocolVersion": mcpProtocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "tandem", "version": "1.0"}}
}

// parseRPC reads one line. A response to one of Tandem's requests (an
// integer id) has ok and its id; a request from the server has ok false
// and the reply it gets (ping answered, anything else "method not
// found"); a notification, a string id or a line that is not JSON-RPC is
// ignored (ok false, no reply).
func parseRPC(line []byte) (id int64, msg rpcIn, reply []byte, ok bool) {
	if json.Unmarshal(line, &msg) != nil || len(msg.ID) == 0 || string(msg.ID) == "null" {
		return 0, msg, nil, false
	}
	if msg.Method != "" {
		out := rpcOut{ID: msg.ID, Result: map[string]any{}}
		if msg.Method != "ping" {
			out = rpcOut{ID: msg.ID, Error: map[string]any{"code": -32601, "message": "method not found: " + msg.Method}}
		}
		reply, _ = out.line()
		return 0, msg, reply, false
	}
	if json.Unmarshal(msg.ID, &id) != nil {
		return 0, msg, nil, false
	}
	return id, msg, nil, true
}

// rpcError is a JSON-RPC error response.
type rpcError struct{ Message string }

func (e *rpcError) Error() string { return e.Message }

// responseError is msg's error, nil if it has none: its message, as
// llama-server reports it.
func responseError(msg rpcIn) error {
	if len(msg.Error) == 0 || string(msg.Error) == "null" {
		return nil
	}
	var obj struct {
		Message *string `json:"message"`
	}
	var s string
	switch {
	case json.Unmarshal(msg.Error, &obj) == nil && obj.Message != nil:
		return &rpcError{*obj.Message}
	case json.Unmarshal(msg.Error, &s) == nil:
		return &rpcError{s}
	}
	return &rpcError{"unknown error"}
}

// mcpToolDef is a tool an MCP server lists.
type mcpToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// toolsPage is a tools/list result: its tools (unnamed ones dropped)
// and the cursor of the next page ("" the last).
func toolsPage(result json.RawMessage) ([]mcpToolDef, string, error) {
	var page struct {
		Tools      []mcpToolDef `json:"tools"`
		NextCursor string       `json:"nextCursor"`
	}
	if err := json.Unmarshal(result, &page); err != nil {
		return nil, "", errors.New("invalid tools/list result")
	}
	var out []mcpToolDef
	for _, t := range page.Tools {
		if t.Name != "" {
			out = append(out, t)
		}
	}
	return out, page.NextCursor, nil
}

// mcpDefinition is the OpenAI function definition of tool t as name:
// its input schema as the parameters, or an empty object schema for a
// tool that gives none.
func mcpDefinition(name string, t mcpToolDef) map[string]any {
	var schema map[string]any
	if json.Unmarshal(t.InputSchema, &schema) != nil || schema == nil {
		schema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return map[string]any{"type": "function", "function": map[string]any{"name": name, "description": t.Description, "parameters": schema}}
}

// callResult is a tools/call result as POST /tools answers it, as
// llama-server answers it: the text parts of its content joined by
// newlines, {"plain_text_response": ...}, or {"error": ...} when the
// result is an error.
func callResult(result json.RawMessage) map[string]any {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if json.Unmarshal(result, &r) != nil {
		return failf("invalid response from MCP server")
	}
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	text := strings.Join(parts, "\n")
	if r.IsError {
		if text == "" {
			text = "MCP tool returned an error"
		}
		return failf("%s", text)
	}
	return map[string]any{"plain_text_response": text}
}

// readLines calls fn with each non-blank line r gives, without its line
// end, until r fails (io.EOF included, returned). A line longer than max
// bytes is dropped whole, and so is an unterminated last one.
func readLines(r io.Reader, max int, fn func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !skipping && len(line)+len(chunk) > max+1 {
			skipping, line = true, line[:0]
		}
		if !skipping {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return err
		}
		if l := bytes.TrimRight(line, "\r\n"); !skipping && len(bytes.TrimSpace(l)) > 0 {
			fn(l)
		}
		skipping, line = false, line[:0]
	}
}
