package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/session"
	"github.com/tandem-llm/tandem/wire"
)

// SessionEngine is one engine's record of a session.
type SessionEngine struct {
	EngineIndex      int      `json:"engine_index"`
	NumRequests      int64    `json:"num_requests"`
	NumPromptTokens  int64    `json:"num_prompt_tokens"`
	NumOutputTokens  int64    `json:"num_output_tokens"`
	NumCachedTokens  int64    `json:"num_cached_tokens"`
	NumRunning       int      `json:"num_running"`
	LastActive       float64  `json:"last_active"`
	RecentRequestIDs []string `json:"recent_request_ids"`
	// RecordEvicted: the engine dropped its record of the session (its
	// counters, for --max-session-records) while its blocks are still
	// cached; only num_cached_tokens, num_running and last_active are known.
	RecordEvicted bool `json:"record_evicted,omitempty"`
}

// SessionResponse is GET /v1/sessions/{id}: where a session lives, from
// the engines' own records. EngineIndex is the engine that saw it last.
type SessionResponse struct {
	ID              string          `json:"id"`
	Object          string          `json:"object"` // "session"
	EngineIndex     int             `json:"engine_index"`
	NumRequests     int64           `json:"num_requests"`
	NumCachedTokens int64           `json:"num_cached_tokens"`
	LastActive      float64         `json:"last_active"`
	Engines         []SessionEngine `json:"engines"`
}

func sessionID(c echo.Context) (string, *openai.Error) {
	id := c.Param("id")
	if err := session.Validate(id); err != nil {
		return "", openai.BadRequest("session_id", "%v", err)
	}
	return id, nil
}

func (s *Server) getSession(c echo.Context) error {
	id, oe := sessionID(c)
	if oe != nil {
		return writeError(c, oe)
	}
	infos, err := s.eng.Session(c.Request().Context(), scopeSession(tenantOf(c), id))
	if err != nil {
		return writeError(c, engineError(err))
	}
	if len(infos) == 0 {
		return writeError(c, openai.NotFound("session_id", "session %q is not known to any engine core", id))
	}
	return c.JSON(http.StatusOK, sessionResponse(id, infos))
}

func sessionResponse(id string, infos []wire.SessionInfo) SessionResponse {
	r := SessionResponse{ID: id, Object: "session"}
	for _, in := range infos {
		r.Engines = append(r.Engines, SessionEngine{
			EngineIndex: in.EngineIndex, NumRequests: in.NumRequests, NumPromptTokens: in.NumPromptTokens,
			NumOutputTokens: in.NumOutputTokens, NumCachedTokens: in.NumCachedTokens, NumRunning: in.NumRunning,
			LastActive: in.LastActive, RecentRequestIDs: in.RecentRequestIDs, RecordEvicted: in.RecordEvicted,
		})
		r.NumRequests += in.NumRequests
		r.NumCachedTokens += in.NumCachedTokens
		if in.LastActive >= r.LastActive {
			r.LastActive, r.EngineIndex = in.LastActive, in.EngineIndex
		}
	}
	return r
}

func (s *Server) deleteSession(c echo.Context) error {
	id, oe := sessionID(c)
	if oe != nil {
		return writeError(c, oe)
	}
	known, err := s.eng.EndSession(c.Request().Context(), scopeSession(tenantOf(c), id))
	if err != nil {
		return writeError(c, engineError(err))
	}
	if !known {
		return writeError(c, openai.NotFound("session_id", "session %q is not known to any engine core", id))
	}
	return c.JSON(http.StatusOK, map[string]any{"id": id, "object": "session.deleted", "deleted": true})
}
