package server

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/router"
	"github.com/tandem-llm/tandem/frontend/webui"
)

// routerOwner is an Engine that routes with a router.Router (the engine
// client): the console lists the sessions its engines report.
type routerOwner interface {
	Router() *router.Router
}

// mountWebUI serves the web console (frontend/webui): its pages and
// assets without the API key (they ask for it), its feed with it.
func (s *Server) mountWebUI() {
	src := webui.Source{Engines: s.eng.Engines, Session: s.eng.Session, Metrics: s.metrics.Gatherer()}
	if ro, ok := s.eng.(routerOwner); ok && ro.Router() != nil {
		src.Sessions, src.Policy = ro.Router().Sessions, string(ro.Router().Policy())
	}
	feed := webui.NewFeed(src)
	pages := echo.WrapHandler(webui.Pages())
	for _, p := range webui.PagePaths() {
		s.e.GET(p, pages)
	}
	s.e.GET(webui.AssetPrefix+"*", pages)
	s.e.GET(webui.EventsPath, func(c echo.Context) error {
		tenant := tenantOf(c)
		var scope func(string) (string, bool)
		if tenant != "" {
			// A tenant sees only its own sessions, by the ids it gave them.
			scope = func(id string) (string, bool) { return strings.CutPrefix(id, tenant+":") }
		}
		return feed.Serve(c.Request().Context(), c.Response(), scope)
	})
}

// openPage reports whether path is one of the console's open pages.
func (s *Server) openPage(path string) bool {
	return !s.cfg.DisableWebUI && webui.IsPage(path)
}
