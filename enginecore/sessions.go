package enginecore

import (
	"github.com/tandem-llm/tandem/wire"
)

const maxRecentRequestIDs = 64

// sessions is the engine's record of every session_id it has served.
// Owned by the core goroutine.
type sessions struct {
	byID map[string]*sessionRecord
}

type sessionRecord struct {
	info wire.SessionInfo // counters; NumCachedTokens is filled on read
}

func newSessions() *sessions { return &sessions{byID: map[string]*sessionRecord{}} }

// add records a new request of session id at time now (unix seconds).
func (s *sessions) add(id, reqID string, numPrompt int, now float64) {
	r, ok := s.byID[id]
	if !ok {
		r = &sessionRecord{info: wire.SessionInfo{SessionID: id}}
		s.byID[id] = r
	}
	r.info.NumRequests++
	r.info.NumPromptTokens += int64(numPrompt)
	r.info.NumRunning++
	r.info.LastActive = now
	r.info.RecentRequestIDs = append(r.info.RecentRequestIDs, reqID)
	if n := len(r.info.RecentRequestIDs); n > maxRecentRequestIDs {
		r.info.RecentRequestIDs = append(r.info.RecentRequestIDs[:0:0], r.info.RecentRequestIDs[n-maxRecentRequestIDs:]...)
	}
}

// generated counts n new output tokens of session id.
func (s *sessions) generated(id string, n int, now float64) {
	if r, ok := s.byID[id]; ok {
		r.info.NumOutputTokens += int64(n)
		r.info.LastActive = now
	}
}

// finished records that one request of session id left the engine.
func (s *sessions) finished(id string, now float64) {
	if r, ok := s.byID[id]; ok && r.info.NumRunning > 0 {
		r.info.NumRunning--
		r.info.LastActive = now
	}
}

func (s *sessions) get(id string) (wire.SessionInfo, bool) {
	r, ok := s.byID[id]
	if !ok {
		return wire.SessionInfo{}, false
	}
	return r.info, true
}

func (s *sessions) remove(id string) bool {
	_, ok := s.byID[id]
	delete(s.byID, id)
	return ok
}
