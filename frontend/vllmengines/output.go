package vllmengines

import (
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/vllm"
)

// Output takes a message from rank r's output PULL: EngineCoreOutputs,
// or ENGINE_CORE_DEAD.
func (g *Gate) Output(r int, frames [][]byte) []Send {
	rk := g.ranks[r]
	if vllm.IsEngineCoreDead(frames) {
		if rk.state == rankDead {
			return nil
		}
		return g.die(r, "the vLLM engine core sent ENGINE_CORE_DEAD")
	}
	o, err := vllm.DecodeOutputs(frames)
	if err != nil {
		g.cfg.Log.Error("malformed outputs from a vLLM engine", "rank", r, "err", err)
		return nil
	}
	if o.SchedulerStats != nil {
		rk.stats = o.SchedulerStats
	}
	t, err := vllm.ToTandemOutputs(o)
	if err != nil {
		g.cfg.Log.Error("untranslatable outputs from a vLLM engine", "rank", r, "err", err)
		return nil
	}
	byFrontend := map[string][]wire.EngineCoreOutput{}
	var order []string
	for _, out := range t.Outputs {
		own, ok := rk.inflight[out.RequestID]
		if !ok {
			continue // aborted, or from before a restart
		}
		if s := rk.sessions[own.session]; s != nil {
			s.output += int64(len(out.NewTokenIDs))
		}
		if out.FinishReason != wire.FinishNone {
			g.finish(rk, out.RequestID)
		}
		out.RequestID = own.id
		if _, seen := byFrontend[own.frontend]; !seen {
			order = append(order, own.frontend)
		}
		byFrontend[own.frontend] = append(byFrontend[own.frontend], out)
	}
	for _, id := range o.FinishedRequests {
		g.finish(rk, id)
	}
	var sends []Send
	for _, f := range order {
		sends = append(sends, g.toFrontend(r, f, wire.MsgOutputs, &wire.EngineCoreOutputs{
			EngineIndex: r, Outputs: byFrontend[f], SchedulerStats: t.SchedulerStats, Timestamp: t.Timestamp})...)
	}
	return sends
}
