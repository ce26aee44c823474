package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// llama-server's resumable streams (its web UI's, tools/server/
// server-stream.cpp): a streamed request with an X-Conversation-Id
// header keeps going when its client leaves, and its event-stream bytes
// are kept in a session of that id, so that a page reloaded mid-answer
// reads them again:
//
//   - GET /v1/stream?conv_id=ID&from=N: the bytes from byte offset N,
//     then the rest live until the stream ends;
//   - POST /v1/streams/lookup {"conversation_ids": [...]}: the sessions of
//     those ids (or of "<id>::<model>"), never others;
//   - DELETE /v1/stream?conv_id=ID: stop: the generation is aborted and
//     the session forgotten (204, also for an unknown id).
//
// A new stream of the same id replaces (and stops) the previous one. A
// session keeps its last streamSessionMaxBytes (older bytes are dropped:
// an offset below them is a 400) and is forgotten streamSessionTTL after
// it ends; a request that does not stream leaves none.

const (
	streamSessionTTL      = 300 * time.Second
	streamSessionMaxBytes = 4 << 20
	maxStreamSessions     = 1024 // finished ones beyond it go first
)

// streamSession is one conversation's stream.
type streamSession struct {
	id      string
	started time.Time
	cancel  context.CancelFunc // aborts the request that streams into it

	mu        sync.Mutex
	buf       []byte // the bytes after dropped
	dropped   int    // bytes dropped from the front (the cap)
	done      bool
	completed time.Time
	grew      chan struct{} // closed (and replaced) when buf or done change
}

func (s *streamSession) append(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.buf = append(s.buf, p...)
	if over := len(s.buf) - streamSessionMaxBytes; over > 0 {
		s.buf = append(s.buf[:0], s.buf[over:]...)
		s.dropped += over
	}
	close(s.grew)
	s.grew = make(chan struct{})
}

func (s *streamSession) finish(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.done, s.completed = true, now
	close(s.grew)
	s.grew = make(chan struct{})
}

// from returns the bytes from offset on (lost: offset is below the
// dropped prefix), whether the stream ended, and a channel closed when
// that changes.
func (s *streamSession) from(offset int) (b []byte, lost, done bool, grew <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if offset < s.dropped {
		return nil, true, s.done, s.grew
	}
	if i := offset - s.dropped; i < len(s.buf) {
		b = slices.Clone(s.buf[i:])
	}
	return b, false, s.done, s.grew
}

// streamInfo is a session in /v1/streams/lookup's answer.
type streamInfo struct {
	ConversationID string `json:"conversation_id"`
	IsDone         bool   `json:"is_done"`
	TotalBytes     int    `json:"total_bytes"`
	StartedAt      int64  `json:"started_at"`   // unix seconds
	CompletedAt    int64  `json:"completed_at"` // unix seconds; 0 while it streams
}

func (s *streamSession) info() streamInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := streamInfo{ConversationID: s.id, IsDone: s.done, TotalBytes: s.dropped + len(s.buf), StartedAt: s.started.Unix()}
	if s.done {
		in.CompletedAt = s.completed.Unix()
	}
	return in
}

// streamSessions are the server's sessions by conversation id.
type streamSessions struct {
	mu sync.Mutex
	m  map[string]*streamSession
}

// create installs a new session for id, stopping the one it replaces.
func (ss *streamSessions) create(id string, now time.Time, cancel context.CancelFunc) *streamSession {
	ss.mu.Lock()
	ss.gc(now)
	if ss.m == nil {
		ss.m = map[string]*streamSession{}
	}
	prev := ss.m[id]
	s := &streamSession{id: id, started: now, cancel: cancel, grew: make(chan struct{})}
	ss.m[id] = s
	ss.mu.Unlock()
	if prev != nil {
		prev.cancel()
		prev.finish(now)
	}
	return s
}

func (ss *streamSessions) get(id string, now time.Time) *streamSession {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.gc(now)
	return ss.m[id]
}

// remove forgets id's session if it is s (nil: whichever), stopping its
// request when stop.
func (ss *streamSessions) remove(id string, s *streamSession, now time.Time, stop bool) {
	ss.mu.Lock()
	cur := ss.m[id]
	if cur == nil || s != nil && cur != s {
		ss.mu.Unlock()
		return
	}
	delete(ss.m, id)
	ss.mu.Unlock()
	if stop {
		cur.cancel()
	}
	cur.finish(now)
}

// lookup returns the sessions of ids: each id's own and its
// "<id>::<model>" ones.
func (ss *streamSessions) lookup(ids []string, now time.Time) []streamInfo {
	ss.mu.Lock()
	ss.gc(now)
	var found []*streamSession
	for _, id := range ids {
		for key, s := range ss.m {
			if id != "" && (key == id || strings.HasPrefix(key, id+"::")) {
				found = append(found, s)
			}
		}
	}
	ss.mu.Unlock()
	slices.SortFunc(found, func(a, b *streamSession) int { return strings.Compare(a.id, b.id) })
	out := make([]streamInfo, 0, len(found))
	for _, s := range slices.Compact(found) {
		out = append(out, s.info())
	}
	return out
}

// gc forgets sessions that ended streamSessionTTL ago, then the oldest
// ended ones beyond maxStreamSessions. ss.mu is held.
func (ss *streamSessions) gc(now time.Time) {
	var ended []*streamSession
	for id, s := range ss.m {
		in := s.info()
		switch {
		case in.IsDone && now.Sub(s.completedAt()) >= streamSessionTTL:
			delete(ss.m, id)
		case in.IsDone:
			ended = append(ended, s)
		}
	}
	if over := len(ss.m) - maxStreamSessions; over > 0 {
		slices.SortFunc(ended, func(a, b *streamSession) int { return a.completedAt().Compare(b.completedAt()) })
		for _, s := range ended[:min(over, len(ended))] {
			delete(ss.m, s.id)
		}
	}
}

func (s *streamSession) completedAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completed
}

// teeWriter writes a response to its client and into a session; once the
// client is gone it only keeps the session's copy, so the handler goes on.
type teeWriter struct {
	http.ResponseWriter
	s      *streamSession
	client context.Context // the client's request context
	gone   bool
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.s.append(p)
	if !w.gone && w.client.Err() == nil {
		if _, err := w.ResponseWriter.Write(p); err != nil {
			w.gone = true
		}
	}
	return len(p), nil
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.gone && w.client.Err() == nil {
		f.Flush()
	}
}

// resumable is the middleware that gives a POST with X-Conversation-Id
// its session: the request runs on a context of its own (stopped by a
// DELETE or a newer stream of the id) and its response is teed into the
// session; a response that is not an event stream leaves no session.
func (s *Server) resumable(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		id := r.Header.Get("X-Conversation-Id")
		if r.Method != http.MethodPost || id == "" {
			return next(c)
		}
		ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
		defer cancel()
		sess := s.streams.create(id, time.Now(), cancel)
		c.SetRequest(r.WithContext(ctx))
		c.Response().Writer = &teeWriter{ResponseWriter: c.Response().Writer, s: sess, client: r.Context()}
		err := next(c)
		if err == nil && strings.HasPrefix(c.Response().Header().Get(echo.HeaderContentType), "text/event-stream") {
			sess.finish(time.Now())
		} else {
			s.streams.remove(id, sess, time.Now(), false)
		}
		return err
	}
}

func (s *Server) mountStreams(e *echo.Echo) {
	e.Use(s.resumable)
	e.GET("/v1/stream", s.getStream)
	e.DELETE("/v1/stream", s.stopStream)
	e.POST("/v1/streams/lookup", s.lookupStreams)
}

func (s *Server) getStream(c echo.Context) error {
	id := c.QueryParam("conv_id")
	if id == "" {
		return writeError(c, openai.BadRequest("conv_id", "Missing conversation id in path"))
	}
	sess := s.streams.get(id, time.Now())
	if sess == nil {
		return writeError(c, openai.NotFound("conv_id", "Stream not found or expired"))
	}
	offset := 0
	if v := c.QueryParam("from"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return writeError(c, openai.BadRequest("from", "Invalid 'from' offset"))
		}
		offset = n
	}
	if _, lost, _, _ := sess.from(offset); lost {
		return writeError(c, openai.BadRequest("from", "Stream offset lost, please restart"))
	}
	out := &sse{c: c}
	out.start()
	follow(c.Request().Context(), func() (bool, bool, <-chan struct{}) {
		b, lost, done, grew := sess.from(offset)
		if lost { // the cap dropped what this reader had not read: it restarts
			return false, true, nil
		}
		if len(b) > 0 {
			if _, err := c.Response().Write(b); err != nil {
				return false, true, nil
			}
			out.flush()
			offset += len(b)
		}
		return len(b) > 0, done, grew
	})
	return nil
}

func (s *Server) stopStream(c echo.Context) error {
	id := c.QueryParam("conv_id")
	if id == "" {
		return writeError(c, openai.BadRequest("conv_id", "Missing conversation id in path"))
	}
	s.streams.remove(id, nil, time.Now(), true)
	// No body, but a content type, as llama-server's: clients and schema
	// checkers read one from every answer.
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) lookupStreams(c echo.Context) error {
	var body struct {
		ConversationIDs []any `json:"conversation_ids"`
	}
	if err := c.Bind(&body); err != nil {
		return writeError(c, openai.BadRequest("", "invalid body: %v", err))
	}
	var ids []string
	for _, v := range body.ConversationIDs {
		if id, ok := v.(string); ok && id != "" {
			ids = append(ids, id)
		}
	}
	return c.JSON(http.StatusOK, s.streams.lookup(ids, time.Now()))
}
