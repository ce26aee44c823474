package server

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"
)

// sse writes a text/event-stream response: `data: <json>\n\n` events
// ending with `data: [DONE]\n\n`.
type sse struct {
	c       echo.Context
	started bool
}

func (s *sse) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.c.Response().Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set(echo.HeaderConnection, "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.c.Response().WriteHeader(http.StatusOK)
}

// send writes one event and flushes it.
func (s *sse) send(v any) error {
	s.start()
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w := s.c.Response()
	if _, err := w.Write(append(append([]byte("data: "), b...), '\n', '\n')); err != nil {
		return err
	}
	w.Flush()
	return nil
}

func (s *sse) done() {
	s.start()
	_, _ = s.c.Response().Write([]byte("data: [DONE]\n\n"))
	s.c.Response().Flush()
}

// sendEvent writes one named event (`event: name` then `data: <json>`),
// the Responses API's framing, and flushes it.
func (s *sse) sendEvent(name string, v any) error {
	s.start()
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w := s.c.Response()
	msg := make([]byte, 0, len(name)+len(b)+16)
	msg = append(append(append(msg, "event: "...), name...), '\n')
	msg = append(append(append(msg, "data: "...), b...), '\n', '\n')
	if _, err := w.Write(msg); err != nil {
		return err
	}
	w.Flush()
	return nil
}
