package vllm_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/vllm"
)

// TestSetStep checks the per-step counts made from two cumulative
// reports: the first report, a later one, a restarted engine, no
// queries, and speculative decoding's figures.
func TestSetStep(t *testing.T) {
	spec := func(drafts, tokens, accepted int64, perPos ...int64) *wire.SpecDecodingStats {
		return &wire.SpecDecodingStats{NumSpecTokens: 3, NumDrafts: drafts, NumDraftTokens: tokens,
			NumAcceptedTokens: accepted, NumAcceptedTokensPerPos: perPos}
	}
	for _, tc := range []struct {
		name      string
		cur, prev *wire.SchedulerStats
		requests  int
		want      vllm.PrefixCacheStats
		wantSpec  map[string]any // nil: no spec_decoding_stats
	}{
		{"first", &wire.SchedulerStats{PrefixCacheQueries: 40, PrefixCacheHits: 16}, nil, 2,
			vllm.PrefixCacheStats{Requests: 2, Queries: 40, Hits: 16}, nil},
		{"later", &wire.SchedulerStats{PrefixCacheQueries: 100, PrefixCacheHits: 48},
			&wire.SchedulerStats{PrefixCacheQueries: 40, PrefixCacheHits: 16}, 0,
			vllm.PrefixCacheStats{Requests: 1, Queries: 60, Hits: 32}, nil},
		{"restarted", &wire.SchedulerStats{PrefixCacheQueries: 8, PrefixCacheHits: 0},
			&wire.SchedulerStats{PrefixCacheQueries: 40, PrefixCacheHits: 16}, 1,
			vllm.PrefixCacheStats{Requests: 1, Queries: 8}, nil},
		{"no queries", &wire.SchedulerStats{PrefixCacheQueries: 40, PrefixCacheHits: 16},
			&wire.SchedulerStats{PrefixCacheQueries: 40, PrefixCacheHits: 16}, 3, vllm.PrefixCacheStats{}, nil},
		{"speculative", &wire.SchedulerStats{SpecDecoding: spec(10, 25, 12, 7, 4, 1)},
			&wire.SchedulerStats{SpecDecoding: spec(4, 10, 5, 3, 2)}, 0, vllm.PrefixCacheStats{},
			map[string]any{"num_spec_tokens": int64(3), "num_drafts": int64(6), "num_draft_tokens": int64(15),
				"num_accepted_tokens": int64(7), "num_accepted_tokens_per_pos": []any{int64(4), int64(2), int64(1)},
				"num_draft_tokens_per_pos": []any{int64(0), int64(0), int64(0)}}},
		{"speculative, first", &wire.SchedulerStats{SpecDecoding: spec(2, 5, 3, 2, 1, 0)}, nil, 0, vllm.PrefixCacheStats{},
			map[string]any{"num_spec_tokens": int64(3), "num_drafts": int64(2), "num_draft_tokens": int64(5),
				"num_accepted_tokens": int64(3), "num_accepted_tokens_per_pos": []any{int64(2), int64(1), int64(0)},
				"num_draft_tokens_per_pos": []any{int64(0), int64(0), int64(0)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s vllm.SchedulerStats
			s.SetStep(tc.cur, tc.prev, tc.requests)
			if p := s.PrefixCacheStats; p.Requests != tc.want.Requests || p.Queries != tc.want.Queries || p.Hits != tc.want.Hits {
				t.Errorf("prefix_cache_stats %+v, want %+v", s.PrefixCacheStats, tc.want)
			}
			if tc.wantSpec == nil {
				if s.SpecDecodingStats != nil {
					t.Errorf("spec_decoding_stats %x, want none", s.SpecDecodingStats)
				}
				return
			}
			var got map[string]any
			dec := msgpack.NewDecoder(bytes.NewReader(s.SpecDecodingStats))
			dec.UseLooseInterfaceDecoding(true)
			if err := dec.Decode(&got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.wantSpec {
				if g, ok := got[k]; !ok || !equalAny(g, v) {
					t.Errorf("spec_decoding_stats[%q] = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func equalAny(a, b any) bool {
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok {
		return slices.EqualFunc(as, bs, equalAny)
	}
	return a == b
}
