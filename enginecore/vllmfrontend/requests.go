package vllmfrontend

import (
	"fmt"
	"slices"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/vllm"
)

// Input takes a message from the frontend's input socket number sock
// ([type][payload][aux...], after the DEALER): ADD, ABORT, UTILITY or
// START_DP_WAVE.
func (g *Gate) Input(sock int, frames [][]byte) []Send {
	if g.phase != phaseServing {
		return nil
	}
	req, err := vllm.DecodeRequest(frames)
	if err != nil {
		g.cfg.Log.Warn("malformed request from the vLLM frontend", "err", err)
		return nil
	}
	switch req.Type {
	case vllm.RequestAdd:
		return g.add(g.client(req.Add.ClientIndex, sock), req.Add)
	case vllm.RequestAbort:
		return g.abort(req.Abort)
	case vllm.RequestUtility:
		return g.utility(g.client(req.Utility.ClientIndex, sock), req.Utility)
	case vllm.RequestStartDPWave:
		// Only vLLM's DPEngineCoreProc (MoE models) runs waves; its
		// EngineCoreProc logs and ignores them, as this engine does.
		g.cfg.Log.Warn("ignoring START_DP_WAVE: this engine runs no DP waves")
	}
	return nil
}

// client is the output socket a request names, or the one it came in on
// when it names none there is.
func (g *Gate) client(index int64, sock int) int {
	if index >= 0 && index < int64(len(g.addresses.Outputs)) {
		return int(index)
	}
	return sock
}

func (g *Gate) add(client int, v *vllm.EngineCoreRequest) []Send {
	if _, dup := g.inflight[v.RequestID]; dup {
		return g.refuse(client, v.RequestID, fmt.Sprintf("duplicate request id %q", v.RequestID))
	}
	t, err := vllm.ToTandemRequest(v)
	if err != nil {
		return g.refuse(client, v.RequestID, err.Error())
	}
	t.DataParallelRank = nil // vLLM's frontend routed it here already
	g.inflight[v.RequestID] = &request{client: client, numPromptTokens: len(v.PromptTokenIDs)}
	return g.toEngine(wire.MsgAdd, t)
}

// refuse finishes a request the engine core never sees with ERROR and a
// validation_error, as vLLM's engine answers a request it cannot take.
func (g *Gate) refuse(client int, id, reason string) []Send {
	g.cfg.Log.Warn("refusing a vLLM request", "request_id", id, "reason", reason)
	return g.toClient(client, &vllm.EngineCoreOutputs{Outputs: []vllm.EngineCoreOutput{{RequestID: id, NewTokenIDs: []int32{},
		Finished: true, FinishReason: vllm.FinishError, StopReason: reason,
		Error: &vllm.RequestError{Code: "validation_error", Message: reason}}}})
}

// abort forwards the ids in flight. vLLM's engine sends no output for an
// aborted request (the frontend finished it), so the engine core's are
// dropped from now on.
func (g *Gate) abort(ids []string) []Send {
	var known []string
	for _, id := range ids {
		if _, ok := g.inflight[id]; ok {
			delete(g.inflight, id)
			known = append(known, id)
		}
	}
	if len(known) == 0 {
		return nil
	}
	return g.toEngine(wire.MsgAbort, &wire.Abort{RequestIDs: known})
}

// Utilities vLLM's EngineCore has that this engine answers itself, or
// refuses with a reason (vLLM's failure_message format "Call to METHOD
// method failed: …"). reset_prefix_cache and sleep mode's calls go to
// the engine core.
var (
	// localResults are answered at once: what is true of a Tandem engine.
	localResults = map[string]any{
		"get_supported_tasks": []string{"generate"},
		"is_scheduler_paused": false, // it cannot pause
		// A text-only vLLM engine answers None too: there is no
		// multi-modal or encoder cache to clear.
		"reset_mm_cache":      nil,
		"reset_encoder_cache": nil,
	}
	// refusals are vLLM methods a Tandem engine cannot do.
	refusals = map[string]string{
		"pause_scheduler":           "this engine core cannot pause its scheduler",
		"pause_generation":          "this engine core cannot pause its scheduler",
		"resume_scheduler":          "this engine core cannot pause its scheduler",
		"profile":                   "this engine core has no profiler",
		"collective_rpc":            "this engine core has no workers to call",
		"execute_dummy_batch":       "this engine core runs no dummy batches",
		"save_sharded_state":        "this engine core cannot save its weights",
		"get_weight_version":        "this engine core has no weight versions",
		"set_weight_version":        "this engine core has no weight versions",
		"update_weights":            "this engine core cannot update its weights",
		"compute_weight_checksums":  "this engine core cannot checksum its weights",
		"scale_elastic_ep":          "this engine core has no expert parallelism",
		"take_draft_weight_updates": "this engine core has no draft model",
	}
	// forwarded are answered by the engine core under the same name.
	forwarded = []string{"reset_prefix_cache", "sleep", "wake_up", "is_sleeping", "release_kv_cache_memory",
		"add_lora", "remove_lora", "pin_lora", "list_loras"}
)

func (g *Gate) utility(client int, u *vllm.UtilityRequest) []Send {
	if v, ok := localResults[u.Method]; ok {
		raw, err := wire.Marshal(v)
		if err != nil {
			return g.utilityFailed(client, u.CallID, u.Method, err.Error())
		}
		return g.utilityDone(client, u.CallID, raw)
	}
	if why, ok := refusals[u.Method]; ok {
		return g.utilityFailed(client, u.CallID, u.Method, why)
	}
	if !slices.Contains(forwarded, u.Method) {
		return g.utilityFailed(client, u.CallID, u.Method, fmt.Sprintf("this engine core has no method %q", u.Method))
	}
	var args []any
	if !u.Args.IsNil() {
		if err := wire.Unmarshal(u.Args, &args); err != nil {
			return g.utilityFailed(client, u.CallID, u.Method, fmt.Sprintf("arguments: %v", err))
		}
	}
	g.nextCall++
	g.calls[g.nextCall] = call{client: client, id: u.CallID, method: u.Method}
	return g.toEngine(wire.MsgUtility, &wire.Utility{CallID: g.nextCall, Method: u.Method, Args: args})
}

// utilityResult turns the engine core's answer to a forwarded call back
// into vLLM's.
func (g *Gate) utilityResult(r *wire.UtilityResult) []Send {
	c, ok := g.calls[r.CallID]
	if !ok || g.phase != phaseServing {
		return nil
	}
	delete(g.calls, r.CallID)
	if r.FailureMessage != "" {
		return g.utilityFailed(c.client, c.id, c.method, r.FailureMessage)
	}
	return g.utilityDone(c.client, c.id, vllm.Raw(r.Result))
}

func (g *Gate) utilityDone(client int, id vllm.CallID, value vllm.Raw) []Send {
	return g.toClient(client, &vllm.EngineCoreOutputs{UtilityOutput: &vllm.UtilityOutput{CallID: id,
		Result: &vllm.UtilityResult{Value: value}}})
}

func (g *Gate) utilityFailed(client int, id vllm.CallID, method, why string) []Send {
	msg := fmt.Sprintf("Call to %s method failed: %s", method, why)
	return g.toClient(client, &vllm.EngineCoreOutputs{UtilityOutput: &vllm.UtilityOutput{CallID: id, FailureMessage: &msg}})
}
