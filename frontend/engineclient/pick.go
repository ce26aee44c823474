package engineclient

import (
	"hash/fnv"

	"github.com/tandem-llm/tandem/wire"
)

// DefaultPick is the pick of earlier releases, kept for Config.Pick (the
// router, package router, now routes by default). It chooses an engine: the pinned rank if the request names one;
// for a session, the ready engine with the highest rendezvous (HRW) hash of
// (session, engine endpoint), so every frontend picks the same engine
// without talking to the others; otherwise the least loaded ready engine by
// vLLM's 4·waiting + running, counting this frontend's in-flight requests.
// It returns -1 when no engine is ready.
func DefaultPick(req *wire.EngineCoreRequest, engines []EngineState) int {
	if r := req.DataParallelRank; r != nil {
		return *r
	}
	best := -1
	if req.SessionID != "" {
		var bestScore uint64
		for _, e := range engines {
			if !e.Ready {
				continue
			}
			h := fnv.New64a()
			h.Write([]byte(req.SessionID))
			h.Write([]byte{0})
			h.Write([]byte(e.Endpoint))
			if s := h.Sum64(); best < 0 || s > bestScore {
				best, bestScore = e.Index, s
			}
		}
		return best
	}
	bestLoad := 0
	for _, e := range engines {
		if !e.Ready {
			continue
		}
		load := 4*e.NumWaiting + max(e.NumRunning, e.NumInFlight)
		if best < 0 || load < bestLoad {
			best, bestLoad = e.Index, load
		}
	}
	return best
}
