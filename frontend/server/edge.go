package server

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
)

// Edge is what a router in front of several model servers (router mode,
// package fleet) answers itself, as llama-server's router does: the CORS
// policy and its preflights (cfg.CORS, narrowed to localhost while tools
// are on), the built-in and MCP servers' tools at /tools (cfg.Tools) and
// the CORS proxy at /cors-proxy (cfg.CORSProxy). Every other request
// goes to next, which names its model. Only those fields of cfg (and
// Logger, Version) are read.
func Edge(cfg Config, next http.Handler) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxRequestBody == "" {
		cfg.MaxRequestBody = "16M"
	}
	s := &Server{cfg: cfg, log: cfg.Logger, e: echo.New()}
	e := s.e
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.httpError
	e.Pre(s.cors)
	e.GET("/tools", s.listTools)
	e.POST("/tools", s.callTool)
	e.GET("/cors-proxy", s.corsProxy)
	e.POST("/cors-proxy", s.corsProxy)
	e.Any("/*", echo.WrapHandler(next))
	return e
}
