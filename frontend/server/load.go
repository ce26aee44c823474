package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// loadRoutes are the routes whose requests vLLM's GET /load counts (its
// load_aware_call): those that reach an engine.
var loadRoutes = map[string]bool{
	"/v1/chat/completions": true, "/v1/completions": true, "/v1/responses": true, "/v1/responses/:id": true,
	"/v1/responses/:id/cancel": true, "/v1/messages": true, "/v1/embeddings": true, "/pooling": true, "/classify": true,
	"/score": true, "/v1/score": true, "/rerank": true, "/v1/rerank": true, "/v2/rerank": true,
}

// trackLoad counts the requests in flight on loadRoutes, vLLM's
// server_load_metrics (which vLLM keeps only with
// --enable-server-load-tracking; Tandem always does).
func (s *Server) trackLoad(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !loadRoutes[c.Path()] {
			return next(c)
		}
		s.load.Add(1)
		defer s.load.Add(-1)
		return next(c)
	}
}

// serverLoad serves vLLM's GET /load: {"server_load": the requests in
// flight on the engine routes}, what load-aware proxies poll.
func (s *Server) serverLoad(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]int64{"server_load": s.load.Load()})
}
