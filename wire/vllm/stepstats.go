package vllm

import "github.com/tandem-llm/tandem/wire"

// Tandem's engine reports cumulative counters; vLLM's SchedulerStats
// carry one step's (its frontend adds prefix_cache_stats' queries and
// hits into vllm:prefix_cache_queries/_hits and spec_decoding_stats into
// vllm:spec_decode_*). SetStep turns the difference between two of
// Tandem's reports into vLLM's per-step fields.

// SpecDecodingStats is vLLM's spec_decoding_stats dataclass
// (vllm/v1/spec_decode/metrics.py): one update's drafts, all counts.
type SpecDecodingStats struct {
	NumSpecTokens           int64   // "num_spec_tokens": k
	NumDrafts               int64   // "num_drafts"
	NumDraftTokens          int64   // "num_draft_tokens"
	NumAcceptedTokens       int64   // "num_accepted_tokens"
	NumAcceptedTokensPerPos []int64 // "num_accepted_tokens_per_pos" [k]
	NumDraftTokensPerPos    []int64 // "num_draft_tokens_per_pos" [k]
}

// Raw is s encoded as msgspec encodes the dataclass: a map of its six
// fields in declaration order.
func (s *SpecDecodingStats) Raw() Raw {
	e := newEnc()
	e.mapLen(6)
	e.key("num_spec_tokens")
	e.int(s.NumSpecTokens)
	e.key("num_drafts")
	e.int(s.NumDrafts)
	e.key("num_draft_tokens")
	e.int(s.NumDraftTokens)
	e.key("num_accepted_tokens")
	e.int(s.NumAcceptedTokens)
	e.key("num_accepted_tokens_per_pos")
	e.int64s(s.NumAcceptedTokensPerPos)
	e.key("num_draft_tokens_per_pos")
	e.int64s(s.NumDraftTokensPerPos)
	return Raw(e.buf.Bytes())
}

// SetStep fills s's per-step prefix_cache_stats and spec_decoding_stats
// with what cur counts beyond prev, two of Tandem's cumulative reports
// (prev nil: nothing before cur). A counter below its previous value
// means the engine restarted, and counts from zero. requests is how many
// requests looked their prompt up in this update (vLLM's hit-rate log
// skips an update with none); with queries and no request it is 1.
//
// Tandem counts no drafted tokens per position: num_draft_tokens_per_pos
// is k zeros (vLLM's Prometheus metrics and log read only the other
// fields).
func (s *SchedulerStats) SetStep(cur, prev *wire.SchedulerStats, requests int) {
	var p wire.SchedulerStats
	if prev != nil {
		p = *prev
	}
	pc := &s.PrefixCacheStats
	pc.Queries = since(cur.PrefixCacheQueries, p.PrefixCacheQueries)
	pc.Hits = since(cur.PrefixCacheHits, p.PrefixCacheHits)
	pc.Requests = 0
	if pc.Queries > 0 {
		pc.Requests = int64(max(requests, 1))
	}
	sd := cur.SpecDecoding
	if sd == nil {
		s.SpecDecodingStats = nil
		return
	}
	ps := p.SpecDecoding
	if ps == nil || sd.NumDrafts < ps.NumDrafts {
		ps = &wire.SpecDecodingStats{} // none before, or the engine restarted
	}
	k := sd.NumSpecTokens
	v := SpecDecodingStats{NumSpecTokens: int64(k), NumDrafts: sd.NumDrafts - ps.NumDrafts,
		NumDraftTokens: sd.NumDraftTokens - ps.NumDraftTokens, NumAcceptedTokens: sd.NumAcceptedTokens - ps.NumAcceptedTokens,
		NumAcceptedTokensPerPos: make([]int64, k), NumDraftTokensPerPos: make([]int64, k)}
	for i := range min(k, len(sd.NumAcceptedTokensPerPos)) {
		v.NumAcceptedTokensPerPos[i] = sd.NumAcceptedTokensPerPos[i]
		if i < len(ps.NumAcceptedTokensPerPos) {
			v.NumAcceptedTokensPerPos[i] -= ps.NumAcceptedTokensPerPos[i]
		}
	}
	s.SpecDecodingStats = v.Raw()
}

// since is cur − prev for a cumulative counter, cur when it went back
// (a restarted engine).
func since(cur, prev int64) int64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}
