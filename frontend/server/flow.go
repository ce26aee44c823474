package server

import (
	"context"

	"github.com/labstack/echo/v4"
)

// flowKey is the context key of an HTTP request's flow.
type flowKey struct{}

// flow gives every HTTP request its own flow id: the engine shares its
// steps, slots and KV blocks fairly between flows (enginecore/sched's
// fair.go), so all the sequences one request asks for (prompts × n, or a
// beam search's expansions) count as one client however many they are. The
// id is random, not the request id a client may choose, so no client can
// join another's flow.
func (s *Server) flow(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), flowKey{}, randomHex(8))))
		return next(c)
	}
}

// flowOf is the flow id of the HTTP request ctx belongs to, "" outside one.
func flowOf(ctx context.Context) string {
	f, _ := ctx.Value(flowKey{}).(string)
	return f
}
