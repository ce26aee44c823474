package enginecore

import (
	"container/list"

	"github.com/tandem-llm/tandem/wire"
)

const (
	maxRecentRequestIDs = 64
	// defaultMaxSessionRecords bounds the session records when the Config
	// does not: each takes up to about 3 KB (its last 64 request ids).
	defaultMaxSessionRecords = 16384
)

// sessions is the engine's record of the sessions it serves: counters
// for GET /v1/sessions/{id}. A record lives while its session has a
// request here or blocks in the KV cache (the Engine drops it when the KV
// manager forgets the session), and at most max records are kept: beyond
// that the least recently active idle one goes, so memory stays bounded
// whatever number of distinct ids clients send.
type sessions struct {
	byID    map[string]*list.Element // of *wire.SessionInfo; NumCachedTokens is filled on read
	lru     *list.List               // most recently active at the front
	max     int
	evicted int64 // records dropped by the cap, cumulative
}

func newSessions(max int) *sessions {
	if max <= 0 {
		max = defaultMaxSessionRecords
	}
	return &sessions{byID: map[string]*list.Element{}, lru: list.New(), max: max}
}

func (s *sessions) info(el *list.Element) *wire.SessionInfo { return el.Value.(*wire.SessionInfo) }

// add records a new request of session id at time now (unix seconds).
func (s *sessions) add(id, reqID string, numPrompt int, now float64) {
	el, ok := s.byID[id]
	if ok {
		s.lru.MoveToFront(el)
	} else {
		el = s.lru.PushFront(&wire.SessionInfo{SessionID: id})
		s.byID[id] = el
		s.trim()
	}
	r := s.info(el)
	r.NumRequests++
	r.NumPromptTokens += int64(numPrompt)
	r.NumRunning++
	r.LastActive = now
	r.RecentRequestIDs = append(r.RecentRequestIDs, reqID)
	if n := len(r.RecentRequestIDs); n > maxRecentRequestIDs {
		r.RecentRequestIDs = append(r.RecentRequestIDs[:0:0], r.RecentRequestIDs[n-maxRecentRequestIDs:]...)
	}
}

// trim drops least recently active idle records beyond the cap. Records of
// sessions with running requests are never dropped (there are at most as
// many as requests in the engine).
func (s *sessions) trim() {
	for el := s.lru.Back(); len(s.byID) > s.max && el != nil; {
		prev := el.Prev()
		if r := s.info(el); r.NumRunning == 0 {
			s.lru.Remove(el)
			delete(s.byID, r.SessionID)
			s.evicted++
		}
		el = prev
	}
}

// generated counts n new output tokens of session id.
func (s *sessions) generated(id string, n int, now float64) {
	if el, ok := s.byID[id]; ok {
		r := s.info(el)
		r.NumOutputTokens += int64(n)
		r.LastActive = now
		s.lru.MoveToFront(el)
	}
}

// finished records that one request of session id left the engine.
func (s *sessions) finished(id string, now float64) {
	if el, ok := s.byID[id]; ok {
		if r := s.info(el); r.NumRunning > 0 {
			r.NumRunning--
			r.LastActive = now
		}
	}
}

func (s *sessions) get(id string) (wire.SessionInfo, bool) {
	el, ok := s.byID[id]
	if !ok {
		return wire.SessionInfo{}, false
	}
	return *s.info(el), true
}

// dropIdle forgets session id unless it has running requests.
func (s *sessions) dropIdle(id string) {
	if el, ok := s.byID[id]; ok && s.info(el).NumRunning == 0 {
		s.lru.Remove(el)
		delete(s.byID, id)
	}
}

func (s *sessions) remove(id string) bool {
	el, ok := s.byID[id]
	if ok {
		s.lru.Remove(el)
		delete(s.byID, id)
	}
	return ok
}

func (s *sessions) len() int { return len(s.byID) }
