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
	buf     []byte // one event being written, reused
}

// jsonAppender is an event that writes its own JSON (equal to
// json.Marshal's) without reflection, e.g. openai.ChatCompletionChunk.
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, error)
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
	if err := s.write(v); err != nil {
		return err
	}
	s.flush()
	return nil
}

// write writes one event into the response's buffer without flushing
// it: a stream with more events ready writes them all and flushes once
// (one write syscall instead of one per token).
func (s *sse) write(v any) error {
	s.start()
	b := append(s.buf[:0], "data: "...)
	var err error
	if a, ok := v.(jsonAppender); ok {
		b, err = a.AppendJSON(b)
	} else {
		var j []byte
		j, err = json.Marshal(v)
		b = append(b, j...)
	}
	if err != nil {
		return err
	}
	b = append(b, '\n', '\n')
	s.buf = b
	_, err = s.c.Response().Write(b)
	return err
}

// flush sends what write buffered.
func (s *sse) flush() { s.c.Response().Flush() }

func (s *sse) done() {
	s.start()
	_, _ = s.c.Response().Write([]byte("data: [DONE]\n\n"))
	s.c.Response().Flush()
}

// sendEvent writes one named event (`event: name` then `data: <json>`),
// the Responses API's and Anthropic's framing, and flushes it.
func (s *sse) sendEvent(name string, v any) error {
	if err := s.writeEvent(name, v); err != nil {
		return err
	}
	s.flush()
	return nil
}

// writeRawEvent writes one named event whose JSON is data, without
// flushing it.
func (s *sse) writeRawEvent(name string, data []byte) error {
	s.start()
	b := append(s.buf[:0], "event: "...)
	b = append(append(b, name...), '\n')
	b = append(append(append(b, "data: "...), data...), '\n', '\n')
	s.buf = b
	_, err := s.c.Response().Write(b)
	return err
}

// writeEvent writes one named event without flushing it.
func (s *sse) writeEvent(name string, v any) error {
	s.start()
	j, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b := append(s.buf[:0], "event: "...)
	b = append(append(b, name...), '\n')
	b = append(append(append(b, "data: "...), j...), '\n', '\n')
	s.buf = b
	_, err = s.c.Response().Write(b)
	return err
}
