package fleet

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// GET /models/sse, llama-server's router event stream: the core records
// its changes as Events, broadcast drains them into the hub under the
// router's mutex, and the hub hands each one to every subscriber's
// bounded buffer without waiting.

const (
	// sseBuffer is how many events a subscriber may fall behind. One
	// further behind is dropped: its stream ends after the events already
	// queued for it, and the client reconnects and re-reads GET /models.
	// Dropping oldest instead would lose a status change without a sign.
	sseBuffer = 64
	// sseWriteWait bounds one write to a client that stopped reading.
	sseWriteWait = 30 * time.Second
	// defaultKeepalive is how often an idle stream sends a comment, so
	// that proxies keep the connection.
	defaultKeepalive = 15 * time.Second
)

var sseKeepalive = []byte(": keepalive\n\n")

// hub fans events out to /models/sse subscribers. Its zero value is ready.
type hub struct {
	mu     sync.Mutex               // guards the fields below
	subs   map[chan []byte]struct{} // each buffered to sseBuffer
	closed bool                     // the server stops: no new subscribers
}

// subscribe adds a subscriber. Its channel closes when it is dropped or
// the hub closes; leave removes it (and may be called more than once).
func (h *hub) subscribe() (ch <-chan []byte, leave func()) {
	c := make(chan []byte, sseBuffer)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(c)
		return c, func() {}
	}
	if h.subs == nil {
		h.subs = map[chan []byte]struct{}{}
	}
	h.subs[c] = struct{}{}
	return c, func() { h.drop(c) }
}

// publish queues msg for every subscriber and drops those whose buffer
// is full. It never blocks.
func (h *hub) publish(msg []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		select {
		case c <- msg:
		default:
			delete(h.subs, c)
			close(c)
		}
	}
}

// drop removes c, closing it, unless it is gone already.
func (h *hub) drop(c chan []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[c]; ok {
		delete(h.subs, c)
		close(c)
	}
}

// close ends every stream, now and later.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for c := range h.subs {
		delete(h.subs, c)
		close(c)
	}
}

// sseEvent is e as one event of the stream: data: {"model", "event",
// "data"} and a blank line, as llama-server's notify_sse (no "data" when
// it has none).
func sseEvent(e Event) []byte {
	v := struct {
		Model string         `json:"model"`
		Event string         `json:"event"`
		Data  map[string]any `json:"data,omitempty"`
	}{Model: e.Model, Event: e.Kind.String()}
	switch e.Kind {
	case StatusChange, ModelStatus:
		v.Data = map[string]any{"status": e.Status.String()}
		if e.Kind == StatusChange && e.Status == Unloaded {
			v.Data["exit_code"] = e.ExitCode
		}
	case DownloadProgress: // the model's loaded_info: {"progress": {URL: {done, total}}}
		v.Data = map[string]any{"progress": e.Progress}
	}
	b, _ := json.Marshal(v)
	return append(append([]byte("data: "), b...), "\n\n"...)
}

// EndStreams ends every /models/sse stream (http.Server.Shutdown waits
// for none of them otherwise: register it with RegisterOnShutdown).
func (r *Router) EndStreams() { r.sse.close() }

// modelEvents is GET /models/sse: the router's events as they happen,
// and a keepalive comment when it has been quiet for cfg.Keepalive,
// until the client leaves, falls sseBuffer events behind, or the server
// stops.
func (r *Router) modelEvents(w http.ResponseWriter, req *http.Request) {
	ch, leave := r.sse.subscribe()
	defer leave()
	rc := http.NewResponseController(w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }() // the connection may serve another request
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(r.cfg.Keepalive)
	defer tick.Stop()
	for {
		msg := sseKeepalive
		select {
		case m, ok := <-ch:
			if !ok {
				return
			}
			msg = m
			tick.Reset(r.cfg.Keepalive)
		case <-tick.C:
		case <-req.Context().Done():
			return
		}
		_ = rc.SetWriteDeadline(time.Now().Add(sseWriteWait))
		if _, err := w.Write(msg); err != nil || rc.Flush() != nil {
			return
		}
	}
}
