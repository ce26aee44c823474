package server

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// invocations serves POST /invocations, SageMaker's inference route: as
// vLLM does, the body's shape picks the endpoint, a chat request
// (messages) before a completions one (prompt).
func (s *Server) invocations(c echo.Context) error {
	body, err := readAll(c.Request())
	if err != nil {
		return writeError(c, openai.BadRequest("", "reading request body: %v", err))
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		return writeError(c, openai.BadRequest("", "JSON decode error: %v", err))
	}
	r := c.Request()
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	switch {
	case present(keys["messages"]):
		return s.chat(c)
	case present(keys["prompt"]):
		return s.completions(c)
	}
	return writeError(c, openai.BadRequest("", "Cannot find suitable handler for request. Expected one of: ['ChatCompletionRequest', 'CompletionRequest']"))
}

// present reports whether a JSON field was given and is not null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && strings.TrimSpace(string(raw)) != "null"
}

// rootPath strips --root-path from the front of every request path, so
// the routes answer both with the prefix (a proxy that keeps it) and
// without (one that strips it), as FastAPI's root_path does in vLLM.
func (s *Server) rootPath(next echo.HandlerFunc) echo.HandlerFunc {
	prefix := strings.TrimSuffix(s.cfg.RootPath, "/")
	return func(c echo.Context) error {
		u := c.Request().URL
		if rest, ok := strings.CutPrefix(u.Path, prefix); ok && (rest == "" || rest[0] == '/') {
			if rest == "" {
				rest = "/"
			}
			u.Path = rest
			if u.RawPath != "" {
				u.RawPath = strings.TrimPrefix(u.RawPath, prefix)
			}
		}
		return next(c)
	}
}
