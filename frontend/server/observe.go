package server

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/engineclient"
)

// ctxSessionKey holds a request's resolved session id in the echo context,
// for the access log.
const ctxSessionKey = "tandem.session_id"

// accessLog logs one line per request with its request id and session id.
// At info level the session id appears only as a short hash (session ids
// may carry user identifiers); at debug level it is logged raw. Prompts are
// never logged.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		req, res := c.Request(), c.Response()
		attrs := []slog.Attr{
			slog.String("method", req.Method),
			slog.String("path", req.URL.Path),
			slog.Int("status", res.Status),
			slog.Duration("latency", time.Since(start)),
			slog.String("request_id", res.Header().Get(echo.HeaderXRequestID)),
		}
		if id, _ := c.Get(ctxSessionKey).(string); id != "" {
			attrs = append(attrs, slog.String("session", sessionHash(id)))
			if s.log.Enabled(req.Context(), slog.LevelDebug) {
				attrs = append(attrs, slog.String("session_id", id))
			}
		}
		level := slog.LevelInfo
		if req.URL.Path == "/health" || req.URL.Path == "/ping" || req.URL.Path == "/metrics" {
			level = slog.LevelDebug
		}
		s.log.LogAttrs(req.Context(), level, "request", attrs...)
		return nil
	}
}

// sessionHash is a short, stable, non-reversible tag of a session id.
func sessionHash(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:6])
}

// EngineView is one engine in GET /v1/engines.
type EngineView struct {
	Index          int     `json:"index"`
	Endpoint       string  `json:"endpoint"`
	State          string  `json:"state"` // "ready", "syncing" (ready, its session list still loading: routed to only when no engine is ready) or "unavailable"
	Error          string  `json:"error,omitempty"`
	EngineID       string  `json:"engine_id,omitempty"`
	PID            int     `json:"pid,omitempty"`
	Model          string  `json:"model,omitempty"`
	MaxModelLen    int     `json:"max_model_len,omitempty"`
	NumRunning     int     `json:"num_requests_running"`
	NumWaiting     int     `json:"num_requests_waiting"`
	NumInFlight    int     `json:"num_in_flight"` // this frontend's unfinished requests on it
	KVCacheUsage   float64 `json:"kv_cache_usage"`
	NumFreeBlocks  int     `json:"num_free_blocks"`
	NumTotalBlocks int     `json:"num_total_blocks"`
	NumSessions    int     `json:"num_sessions"`
	LastSeen       float64 `json:"last_seen,omitempty"` // unix seconds
}

// engines serves GET /v1/engines: every configured engine with its state
// and load, as this frontend sees them.
func (s *Server) engines(c echo.Context) error {
	var out []EngineView
	for _, e := range s.eng.Engines() {
		out = append(out, engineView(e))
	}
	return c.JSON(http.StatusOK, map[string]any{"object": "list", "data": out})
}

func engineView(e engineclient.EngineState) EngineView {
	v := EngineView{
		Index: e.Index, Endpoint: e.Endpoint, State: "unavailable", Error: e.Err,
		EngineID: e.Info.EngineID, PID: e.Info.PID, Model: e.Info.ServedModelName, MaxModelLen: e.Info.MaxModelLen,
		NumRunning: e.Stats.NumRunningReqs, NumWaiting: e.Stats.NumWaitingReqs, NumInFlight: e.NumInFlight,
		KVCacheUsage: e.Stats.KVCacheUsage, NumFreeBlocks: e.Stats.NumFreeBlocks, NumTotalBlocks: e.Stats.NumTotalBlocks,
		NumSessions: e.Stats.NumSessions,
	}
	switch {
	case e.Ready && e.Syncing:
		v.State = "syncing"
	case e.Ready:
		v.State = "ready"
	}
	if !e.LastSeen.IsZero() {
		v.LastSeen = float64(e.LastSeen.UnixNano()) / 1e9
	}
	return v
}
