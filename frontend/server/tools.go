package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/servertools"
)

// llama-server's built-in tools for agents (--tools; package
// servertools) and MCP servers' tools, named SERVER_TOOL
// (--mcp-servers-config, --mcp-servers-json): GET /tools lists them,
// POST /tools {"tool": NAME, "params": {...}, "stream": false} runs
// one. The x-tool-cwd header sets the directory relative paths resolve
// in, x-tool-runtime an isolate to run in (else --tools-runtime's), and
// x-resp-type: base64 has read_file answer the file's bytes. A streamed
// call answers `data: {"chunk": "..."}` events and a last
// `data: {"done": true}` (with "error" if it failed). Without tools both
// routes answer 403. Behind the API key like any other route.

// toolCall is POST /tools' body.
type toolCall struct {
	Tool   *string         `json:"tool"`
	Params json.RawMessage `json:"params"`
	Stream bool            `json:"stream"`
}

// toolsOff answers a tools route when --tools names none.
func toolsOff(c echo.Context) error {
	return writeError(c, &openai.Error{Status: http.StatusForbidden, Type: "feature_disabled",
		Message: "this feature is disabled: start the server with --tools or --mcp-servers-config"})
}

func (s *Server) listTools(c echo.Context) error {
	if s.cfg.Tools == nil {
		return toolsOff(c)
	}
	return c.JSON(http.StatusOK, s.cfg.Tools.List())
}

func (s *Server) callTool(c echo.Context) error {
	set := s.cfg.Tools
	if set == nil {
		return toolsOff(c)
	}
	body, e := requestBody(c)
	if e != nil {
		return writeError(c, e)
	}
	var req toolCall
	if err := json.Unmarshal(body, &req); err != nil {
		return writeError(c, openai.BadRequest("", "invalid JSON body: %v", err))
	}
	if req.Tool == nil {
		return writeError(c, openai.BadRequest("tool", `"tool" is required`))
	}
	tool, err := set.Lookup(*req.Tool, req.Stream)
	if err != nil {
		return writeError(c, openai.NotFound("tool", "%v", err))
	}
	h := c.Request().Header
	env := servertools.Env{Cwd: h.Get("X-Tool-Cwd"), Runtime: h.Get("X-Tool-Runtime"), Base64: h.Get("X-Resp-Type") == "base64"}
	ctx := c.Request().Context()
	if !req.Stream {
		res, err := set.Call(ctx, tool, req.Params, env, nil)
		if err != nil {
			return writeError(c, toolError(err))
		}
		return c.JSON(http.StatusOK, res)
	}
	out := &sse{c: c}
	_, err = set.Call(ctx, tool, req.Params, env, func(chunk string) bool {
		return out.send(map[string]string{"chunk": chunk}) == nil
	})
	last := map[string]any{"done": true}
	if err != nil {
		last["error"] = err.Error()
	}
	return out.send(last)
}

// toolError is the status of a call that could not run: bad parameters
// 400, anything else (an unusable runtime) 500, as llama-server answers.
func toolError(err error) *openai.Error {
	if errors.Is(err, servertools.ErrBadParams) {
		return openai.BadRequest("params", "%v", err)
	}
	return openai.Internal("%v", err)
}
