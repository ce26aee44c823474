package servertools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// MCPServer is one server of an "mcpServers" configuration (Cursor's
// format, as llama-server's --mcp-servers-config and --mcp-servers-json
// read it): a command whose stdin and stdout carry MCP's JSON-RPC.
type MCPServer struct {
	Name    string // the key: its tools are listed as NAME_TOOL
	Command string
	Args    []string
	Env     map[string]string // over this server's own environment
	Cwd     string            // "" = this server's working directory
	Timeout time.Duration     // per call (timeout_ms); 0 = 30 s
}

const (
	// mcpCallTimeout is a call's default timeout, llama-server's.
	mcpCallTimeout = 30 * time.Second
	// mcpWarmTimeout bounds starting one server and listing its tools at
	// startup.
	mcpWarmTimeout = 10 * time.Second
	// mcpRetryAfter is how long a server that failed to start is not
	// started again.
	mcpRetryAfter = 5 * time.Second
	// maxToolPages bounds a tools/list that keeps answering a next page.
	maxToolPages = 100
)

// ParseMCPConfig reads {"mcpServers": {NAME: {"command": ..., "args":
// [...], "env": {...}, "cwd": ..., "timeout_ms": N}}}. JSON that does
// not parse, or fields of the wrong type, are an error; no "mcpServers"
// object is no servers. Servers come in name order.
func ParseMCPConfig(data []byte) ([]MCPServer, error) {
	if !json.Valid(data) {
		var v any
		return nil, fmt.Errorf("invalid JSON: %w", json.Unmarshal(data, &v))
	}
	var top struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	if json.Unmarshal(data, &top) != nil {
		return nil, nil // not an object, or mcpServers is not one
	}
	var out []MCPServer
	for _, name := range slices.Sorted(maps.Keys(top.Servers)) {
		var e struct {
			Command   string            `json:"command"`
			Args      []string          `json:"args"`
			Env       map[string]string `json:"env"`
			Cwd       string            `json:"cwd"`
			TimeoutMS int               `json:"timeout_ms"`
		}
		if err := json.Unmarshal(top.Servers[name], &e); err != nil {
			return nil, fmt.Errorf("MCP server %q: %w", name, err)
		}
		srv := MCPServer{Name: name, Command: e.Command, Args: e.Args, Env: e.Env, Cwd: e.Cwd,
			Timeout: time.Duration(e.TimeoutMS) * time.Millisecond}
		out = append(out, srv)
	}
	return out, nil
}

// MCP is the configured MCP servers: one client each, started at
// Warm, started again on the next call after it exits, stopped at
// Close. A nil *MCP is none configured.
type MCP struct {
	log   *slog.Logger
	slots []*mcpSlot
	// stop ends every call and start in flight (Close).
	stop   context.Context
	cancel context.CancelFunc
}

// mcpSlot is one server and its client, if running.
type mcpSlot struct {
	srv  MCPServer
	log  *slog.Logger
	stop context.Context // MCP.stop

	mu      sync.Mutex // held while starting a client
	c       *mcpClient
	retryAt time.Time    // a failed start: not again before
	tools   []mcpToolDef // listed at Warm
}

// NewMCP sets up servers (nothing starts before Warm). An entry with no
// command (a URL server: only stdio ones are run) or a name already
// taken is skipped with a warning. No servers left is nil.
func NewMCP(servers []MCPServer, log *slog.Logger) *MCP {
	if log == nil {
		log = slog.Default()
	}
	m := &MCP{log: log}
	seen := map[string]bool{}
	for _, srv := range servers {
		switch {
		case srv.Command == "":
			log.Warn("MCP server has no command, skipping (only stdio servers are run)", "server", srv.Name)
			continue
		case seen[srv.Name]:
			log.Warn("duplicate MCP server name, skipping", "server", srv.Name)
			continue
		}
		seen[srv.Name] = true
		if srv.Timeout <= 0 {
			srv.Timeout = mcpCallTimeout
		}
		m.slots = append(m.slots, &mcpSlot{srv: srv, log: log})
	}
	if len(m.slots) == 0 {
		return nil
	}
	m.stop, m.cancel = context.WithCancel(context.Background())
	for _, s := range m.slots {
		s.stop = m.stop
	}
	return m
}

// Warm starts every server at once and lists its tools, each within
// mcpWarmTimeout; a server that fails is logged and lists none. The
// clients stay running for the calls.
func (m *MCP) Warm(ctx context.Context) {
	if m == nil {
		return
	}
	var wg sync.WaitGroup
	for _, s := range m.slots {
		wg.Go(func() {
			wctx, cancel := context.WithTimeoutCause(ctx, mcpWarmTimeout, errMCPTimeout)
			defer cancel()
			defer context.AfterFunc(m.stop, cancel)()
			tools, err := s.list(wctx)
			if err != nil {
				m.log.Warn("MCP warm-up: server failed", "server", s.srv.Name, "err", err)
				return
			}
			m.log.Info("MCP warm-up", "server", s.srv.Name, "tools", len(tools))
		})
	}
	wg.Wait()
}

// Close stops every server and ends the calls in flight; it returns
// once the processes are gone. Later calls fail.
func (m *MCP) Close() {
	if m == nil {
		return
	}
	m.cancel()
	var wg sync.WaitGroup
	for _, s := range m.slots {
		s.mu.Lock() // a start in flight ends with m.stop
		c := s.c
		s.c = nil
		s.mu.Unlock()
		if c != nil {
			wg.Go(c.close)
		}
	}
	wg.Wait()
}

// client is s's running client, started (and initialized) if it is not.
func (s *mcpSlot) client(ctx context.Context) (*mcpClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop.Err() != nil {
		return nil, errMCPShutdown
	}
	if s.c != nil && s.c.alive() {
		return s.c, nil
	}
	if s.c != nil {
		s.log.Warn("MCP server is no longer running, restarting", "server", s.srv.Name, "why", s.c.diagnostics())
		go s.c.close()
		s.c = nil
	}
	if time.Now().Before(s.retryAt) {
		return nil, fmt.Errorf("MCP server unavailable: %s", s.srv.Name)
	}
	c, err := s.start(ctx)
	if err != nil {
		s.retryAt = time.Now().Add(mcpRetryAfter)
		return nil, err
	}
	s.c = c
	return c, nil
}

// start spawns s's server and runs the initialize handshake.
func (s *mcpSlot) start(ctx context.Context) (*mcpClient, error) {
	c, err := spawnMCP(s.srv, s.log)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.srv.Timeout, errMCPTimeout)
	defer cancel()
	if _, err := c.call(ctx, "initialize", initializeParams()); err != nil {
		why := c.diagnostics()
		c.close()
		return nil, fmt.Errorf("initialize failed: %w (%s)", err, why)
	}
	if err := c.send(ctx, rpcNotification("notifications/initialized", nil)); err != nil {
		c.close()
		return nil, fmt.Errorf("initialize failed: %w", err)
	}
	return c, nil
}

// list starts s's server and lists its tools, every page.
func (s *mcpSlot) list(ctx context.Context) ([]mcpToolDef, error) {
	c, err := s.client(ctx)
	if err != nil {
		return nil, err
	}
	var tools []mcpToolDef
	cursor := ""
	for range maxToolPages {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		msg, err := c.call(ctx, "tools/list", params)
		if err != nil {
			return nil, fmt.Errorf("tools/list failed: %w", err)
		}
		page, next, err := toolsPage(msg.Result)
		if err != nil {
			return nil, err
		}
		tools = append(tools, page...)
		if cursor = next; cursor == "" {
			break
		}
	}
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	return tools, nil
}

// call runs tool on server s with args (a JSON object), within the
// server's timeout; the answer is POST /tools': the result, or
// {"error": ...} for a server that cannot be reached, a call that timed
// out or failed, as llama-server answers them.
func (m *MCP) call(ctx context.Context, s *mcpSlot, tool string, args json.RawMessage) map[string]any {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(m.stop, func() { cancel(errMCPShutdown) })()
	ctx, cancelT := context.WithTimeoutCause(ctx, s.srv.Timeout, errMCPTimeout)
	defer cancelT()
	var msg rpcIn
	var err error
	for try := 0; try < 2; try++ { // again only if the server had exited unseen
		c, cerr := s.client(ctx)
		if cerr != nil {
			return failf("%v", cerr)
		}
		msg, err = c.call(ctx, "tools/call", map[string]any{"name": tool, "arguments": args})
		if !errors.Is(err, errMCPNotSent) || ctx.Err() != nil {
			break
		}
	}
	var rerr *rpcError
	switch {
	case errors.As(err, &rerr):
		return failf("%s", rerr.Message)
	case err != nil && m.stop.Err() != nil:
		// Close stopped the transport: said as the shutdown it is, whether
		// the closed pipe or the cancelled context reached the call first.
		return failf("%v", errMCPShutdown)
	case err != nil:
		return failf("%v", err)
	}
	return callResult(msg.Result)
}

// WithMCP is s with m's tools added after its own, each named
// SERVER_TOOL (one whose name is taken is skipped with a warning). With
// m configured the answer is a Set even when s is nil or m lists no
// tools: /tools is on, and CORS narrows as with --tools.
func (s *Set) WithMCP(m *MCP) *Set {
	if m == nil {
		return s
	}
	out := &Set{}
	if s != nil {
		out.runtime, out.tools = s.runtime, slices.Clone(s.tools)
	}
	seen := map[string]bool{}
	for _, t := range out.tools {
		seen[t.Name] = true
	}
	for _, slot := range m.slots {
		slot.mu.Lock()
		defs := slot.tools
		slot.mu.Unlock()
		for _, d := range defs {
			name := slot.srv.Name + "_" + d.Name
			if seen[name] {
				m.log.Warn("MCP tool collides with an existing tool, skipping", "tool", name, "server", slot.srv.Name)
				continue
			}
			seen[name] = true
			out.tools = append(out.tools, mcpTool(m, slot, name, d))
		}
	}
	return out
}

// mcpTool is MCP tool d of slot's server as a Tool named name.
func mcpTool(m *MCP, slot *mcpSlot, name string, d mcpToolDef) *Tool {
	return &Tool{Name: name, DisplayName: name, Definition: mcpDefinition(name, d), server: slot.srv.Name,
		invoke: func(ctx context.Context, c call) (any, error) {
			var args map[string]json.RawMessage
			if err := json.Unmarshal(c.params, &args); err != nil || args == nil {
				return nil, fmt.Errorf("%w: params must be a JSON object", ErrBadParams)
			}
			return m.call(ctx, slot, d.Name, c.params), nil
		}}
}
