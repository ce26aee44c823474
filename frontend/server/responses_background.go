package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/responses"
)

// Background responses, as vLLM's (and OpenAI's) background mode: POST
// /v1/responses with background true (store must be true) answers at
// once with status "queued" and the response generates on, detached from
// the request; GET /v1/responses/{id} shows it ("in_progress" once the
// engine took it, then "completed", "incomplete" or "failed"), and POST
// /v1/responses/{id}/cancel stops it ("cancelled", which stays).

// running reports whether a stored response's status is one a background
// response has before it ends (so cancel can still stop it).
func running(status string) bool {
	return status == openai.ResponseStatusQueued || status == openai.ResponseStatusInProgress
}

// startBackground stores call's response as queued, starts generating it
// on a context of its own (cancelled by cancelResponse) and answers with
// the queued response.
func (s *Server) startBackground(c echo.Context, gens []*genRequest, call *responseCall) error {
	call.resp.Status = openai.ResponseStatusQueued
	id := call.resp.ID
	msgs := append(append([]responses.Message(nil), call.history...), call.input...)
	s.store.Put(responses.Entry{Response: call.resp, Messages: msgs, Owner: call.owner}, len(call.input))
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.Request().Context()))
	s.background.Store(id, cancel)
	if call.stream {
		return s.streamBackground(c, ctx, cancel, gens, call)
	}
	queued := call.resp
	go func() {
		defer func() {
			s.background.Delete(id)
			cancel()
		}()
		s.setStatus(id, openai.ResponseStatusInProgress, nil)
		// done, or cancelled (cancelResponse set the status)
		if err := s.generateResponse(ctx, gens, call); err != nil && ctx.Err() == nil {
			s.failBackground(id, err)
		}
	}()
	return c.JSON(http.StatusOK, queued)
}

// failBackground marks a background response failed with err.
func (s *Server) failBackground(id string, err error) {
	msg := err.Error()
	var oe *openai.Error
	if errors.As(err, &oe) {
		msg = oe.Message
	}
	s.log.Warn("background response failed", "response_id", id, "err", err)
	s.setStatus(id, openai.ResponseStatusFailed, &openai.ResponseError{Code: "server_error", Message: msg})
}

// setStatus moves a running background response to status (with err for
// failed); a response that ended or was cancelled keeps its status.
func (s *Server) setStatus(id, status string, err *openai.ResponseError) {
	s.store.Update(id, func(e *responses.Entry) bool {
		if !running(e.Response.Status) {
			return false
		}
		e.Response.Status, e.Response.Error = status, err
		return true
	})
}

// cancelResponse serves POST /v1/responses/{id}/cancel: a queued or
// in-progress background response becomes "cancelled" and its generation
// is aborted; any other is vLLM's 400 "Cannot cancel a synchronous
// response.".
func (s *Server) cancelResponse(c echo.Context) error {
	id, e := responseID(c)
	if e != nil {
		return writeError(c, e)
	}
	notFound := openai.NotFound("response_id", "Response with id '%s' not found.", id)
	if entry, ok := s.store.Get(id); !ok || entry.Owner != tenantOf(c) {
		return writeError(c, notFound)
	}
	var was string
	entry, ok := s.store.Update(id, func(e *responses.Entry) bool {
		was = e.Response.Status
		if !running(was) {
			return false
		}
		e.Response.Status = openai.ResponseStatusCancelled
		return true
	})
	if !ok {
		return writeError(c, notFound)
	}
	if !running(was) {
		return writeError(c, openai.BadRequest("response_id", "Cannot cancel a synchronous response."))
	}
	if cancel, ok := s.background.Load(id); ok {
		cancel.(context.CancelFunc)()
	}
	return c.JSON(http.StatusOK, entry.Response)
}
