package vllmfrontend

import (
	"slices"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/vllm"
)

// outputs turns the engine core's OUTPUTS into vLLM's, one message per
// frontend client with outputs. Outputs of requests not in flight (aborted
// by the frontend, or the engine core's own) are dropped, as vLLM's engine
// sends none for them. scheduler_stats go with the first message only, as
// vLLM's make_stats sends them to one client, with the prefix cache and
// speculative decoding counts since the last ones sent; finished_requests
// are dropped (vLLM's engine fills them only for a DP coordinator).
func (g *Gate) outputs(o *wire.EngineCoreOutputs) []Send {
	if g.phase != phaseServing {
		return nil
	}
	byClient := map[int][]wire.EngineCoreOutput{}
	firsts := map[string]int{}
	for _, out := range o.Outputs {
		r, ok := g.inflight[out.RequestID]
		if !ok {
			continue
		}
		if !r.sentFirst {
			r.sentFirst = true
			firsts[out.RequestID] = r.numPromptTokens
		}
		if out.FinishReason != wire.FinishNone {
			delete(g.inflight, out.RequestID)
		}
		byClient[r.client] = append(byClient[r.client], out)
	}
	stats := o.SchedulerStats
	var sends []Send
	for client := range g.addresses.Outputs {
		outs := byClient[client]
		if len(outs) == 0 {
			continue
		}
		v, err := vllm.FromTandemOutputs(&wire.EngineCoreOutputs{EngineIndex: g.cfg.Rank, Outputs: outs,
			SchedulerStats: stats, Timestamp: o.Timestamp}, firsts)
		if err != nil {
			g.cfg.Log.Error("untranslatable outputs from the engine core", "err", err)
			continue
		}
		if stats != nil && v.SchedulerStats != nil {
			v.SchedulerStats.SetStep(stats, g.sentStats, len(firsts))
			g.sentStats = cloneStats(stats)
		}
		stats = nil
		sends = append(sends, g.toClient(client, v)...)
	}
	return sends
}

// cloneStats copies s deep enough to keep: its counters and spec
// decoding figures.
func cloneStats(s *wire.SchedulerStats) *wire.SchedulerStats {
	c := *s
	if s.SpecDecoding != nil {
		sd := *s.SpecDecoding
		sd.NumAcceptedTokensPerPos = slices.Clone(sd.NumAcceptedTokensPerPos)
		c.SpecDecoding = &sd
	}
	return &c
}
