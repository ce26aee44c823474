package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// cacheResetter is what the cache routes need of the engines
// (engineclient.Client).
type cacheResetter interface {
	ResetPrefixCache(ctx context.Context, resetRunning bool) (bool, error)
}

// resetPrefixCache serves vLLM's POST /reset_prefix_cache
// (?reset_running_requests=, ?reset_external=, the latter without effect:
// there is no external cache): every engine drops its cached prefixes;
// {"success": false} when one still held blocks for running requests.
func (s *Server) resetPrefixCache(c echo.Context) error {
	running := false
	if v := c.QueryParam("reset_running_requests"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return writeError(c, openai.BadRequest("query.reset_running_requests", "reset_running_requests must be a boolean, not %q", v))
		}
		running = b
	}
	ok, e := s.resetCache(c.Request().Context(), running)
	if e != nil {
		return writeError(c, e)
	}
	return c.JSON(http.StatusOK, map[string]bool{"success": ok})
}

// flushCache serves SGLang's GET or POST /flush_cache: the same reset,
// answered as SGLang answers it (200 and a line of text, 400 when an
// engine still held blocks for requests).
func (s *Server) flushCache(c echo.Context) error {
	ok, e := s.resetCache(c.Request().Context(), false)
	if e != nil {
		return writeError(c, e)
	}
	if !ok {
		return c.String(http.StatusBadRequest, "Cache not flushed: requests still hold cached blocks; retry when they have finished.\n")
	}
	return c.String(http.StatusOK, "Cache flushed.\n")
}

func (s *Server) resetCache(ctx context.Context, running bool) (bool, *openai.Error) {
	r, ok := s.eng.(cacheResetter)
	if !ok {
		return false, &openai.Error{Status: http.StatusNotImplemented, Type: "not_implemented_error", Message: "these engines cannot reset their prefix cache"}
	}
	done, err := r.ResetPrefixCache(ctx, running)
	if err != nil {
		return false, engineError(err)
	}
	return done, nil
}
