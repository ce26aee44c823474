package server

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// Streamed background responses, as vLLM's event_store: a response with
// background and stream generates into an event log, detached from the
// request; the POST that started it streams the log as it grows, and GET
// /v1/responses/{id}?stream=true&starting_after=N streams it again from
// the event after sequence number N, until the response ends. Logs live
// in memory on the frontend that generated them; the most recent
// maxEventLogs finished ones are kept (and a deleted response's goes).

// maxEventLogs bounds the finished event logs kept.
const maxEventLogs = 256

// loggedEvent is one named event, its JSON written once.
type loggedEvent struct {
	name string
	data []byte
}

// eventLog is one response's events, appended by its generation and read
// by any number of streams.
type eventLog struct {
	mu     sync.Mutex
	events []loggedEvent // index i has sequence number i
	done   bool
	grew   chan struct{} // closed (and replaced) when events or done change
}

func newEventLog() *eventLog { return &eventLog{grew: make(chan struct{})} }

// sendEvent appends an event (eventSink).
func (l *eventLog) sendEvent(name string, v any) error {
	j, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, loggedEvent{name, j})
	close(l.grew)
	l.grew = make(chan struct{})
	return nil
}

// finish marks the log complete: readers end after its last event.
func (l *eventLog) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	close(l.grew)
	l.grew = make(chan struct{})
}

// from returns the events from index i on, whether the log is complete,
// and a channel closed when it changes.
func (l *eventLog) from(i int) ([]loggedEvent, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var evs []loggedEvent
	if i < len(l.events) {
		evs = l.events[i:len(l.events):len(l.events)]
	}
	return evs, l.done, l.grew
}

// eventLogs are the server's logs by response id.
type eventLogs struct {
	mu       sync.Mutex
	logs     map[string]*eventLog
	finished []string // ids of finished logs, oldest first
}

func (e *eventLogs) add(id string) *eventLog {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.logs == nil {
		e.logs = map[string]*eventLog{}
	}
	l := newEventLog()
	e.logs[id] = l
	return l
}

func (e *eventLogs) get(id string) (*eventLog, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, ok := e.logs[id]
	return l, ok
}

// done finishes id's log and forgets the oldest finished ones beyond
// maxEventLogs.
func (e *eventLogs) done(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.logs[id]; ok {
		l.finish()
		e.finished = append(e.finished, id)
	}
	for len(e.finished) > maxEventLogs {
		delete(e.logs, e.finished[0])
		e.finished = e.finished[1:]
	}
}

func (e *eventLogs) remove(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.logs, id)
}

// replay streams l's events after sequence number after (−1: all) to
// the client until the log is complete or the client leaves.
func replay(c echo.Context, l *eventLog, after int) error {
	out := &sse{c: c}
	out.start()
	i := after + 1
	follow(c.Request().Context(), func() (bool, bool, <-chan struct{}) {
		evs, done, grew := l.from(i)
		for _, ev := range evs {
			if err := out.writeRawEvent(ev.name, ev.data); err != nil {
				return false, true, nil
			}
			i++
		}
		out.flush()
		return len(evs) > 0, done, grew
	})
	return nil
}

// follow tails a growing log for a reader: it calls next until next
// reports the end (done, with nothing new) or ctx ends, waiting for grew
// after a call that wrote nothing (progressed false). Streamed background
// responses and resumable streams read their logs so.
func follow(ctx context.Context, next func() (progressed, done bool, grew <-chan struct{})) {
	for {
		progressed, done, grew := next()
		switch {
		case progressed:
			continue
		case done:
			return
		}
		select {
		case <-grew:
		case <-ctx.Done():
			return
		}
	}
}

// streamQuery reads GET /v1/responses/{id}'s stream and starting_after
// query parameters (FastAPI's booleans: true/false, 1/0, yes/no, on/off).
func streamQuery(c echo.Context) (stream bool, after int, e *openai.Error) {
	after = -1
	if v := c.QueryParam("stream"); v != "" {
		switch strings.ToLower(v) {
		case "true", "1", "yes", "on", "t", "y":
			stream = true
		case "false", "0", "no", "off", "f", "n":
		default:
			return false, 0, openai.BadRequest("stream", "stream must be a boolean, not %q", v)
		}
	}
	if v := c.QueryParam("starting_after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return false, 0, openai.BadRequest("starting_after", "starting_after must be a sequence number (an integer ≥ 0), not %q", v)
		}
		after = n
	}
	return stream, after, nil
}

// streamBackground runs a background response with stream into an event
// log and streams the log to the client that asked: the response goes on
// if that client leaves. The caller stored the response as queued.
func (s *Server) streamBackground(c echo.Context, ctx context.Context, cancel context.CancelFunc, gens []*genRequest, call *responseCall) error {
	id := call.resp.ID
	log := s.eventLogs.add(id)
	call.resp.Status = openai.ResponseStatusInProgress // what the stream's events show
	go func() {
		defer func() {
			s.eventLogs.done(id)
			s.background.Delete(id)
			cancel()
		}()
		s.setStatus(id, openai.ResponseStatusInProgress, nil)
		events, stop, err := s.startAll(ctx, gens)
		if err == nil {
			defer stop()
			err = s.sendResponse(ctx, events, gens, call, log)
		} else {
			e := engineError(err)
			code := e.Type
			_ = log.sendEvent("error", openai.ResponseErrorEvent{Type: "error", SequenceNumber: 0, Code: &code, Message: e.Message, Param: e.Param})
		}
		if err != nil && ctx.Err() == nil {
			s.failBackground(id, err)
		}
	}()
	return replay(c, log, -1)
}
