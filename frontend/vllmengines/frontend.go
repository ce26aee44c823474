package vllmengines

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/vllm"
)

// Frontend takes a message a Tandem frontend sent to rank r's endpoint
// ([identity][type][payload]) at now.
func (g *Gate) Frontend(now time.Time, r int, frames [][]byte) []Send {
	if len(frames) < 2 {
		return nil
	}
	f := string(frames[0])
	t, msg, err := wire.Decode(frames[1:])
	if err != nil {
		g.cfg.Log.Warn("malformed message from a frontend", "rank", r, "err", err)
		return nil
	}
	rk := g.ranks[r]
	switch p := msg.(type) {
	case *wire.Hello:
		if rk.state != rankReady {
			return nil // the frontend repeats HELLO until the engine is there
		}
		ready := g.ready(r)
		if p.ProtocolVersion != wire.ProtocolVersion {
			ready.Error = fmt.Sprintf("protocol version mismatch: frontend speaks %d, engine speaks %d", p.ProtocolVersion, wire.ProtocolVersion)
		} else {
			rk.frontends[f] = true
			g.frontendNumber(f)
		}
		return g.toFrontend(r, f, wire.MsgReady, ready)
	case *wire.Heartbeat:
		if rk.state != rankReady || !rk.frontends[f] {
			return nil
		}
		return g.toFrontend(r, f, wire.MsgHeartbeat, g.heartbeat(now, r))
	case *wire.EngineCoreRequest:
		return g.add(now, r, f, p)
	case *wire.Abort:
		return g.abort(r, f, p.RequestIDs)
	case *wire.Utility:
		return g.toFrontend(r, f, wire.MsgUtilityResult, g.utility(r, f, p))
	default:
		g.cfg.Log.Warn("unexpected message from a frontend", "rank", r, "type", t)
	}
	return nil
}

func (g *Gate) frontendNumber(f string) int {
	n, ok := g.fnums[f]
	if !ok {
		n = len(g.fnums)
		g.fnums[f] = n
	}
	return n
}

// vllmID is the request id a vLLM engine sees: the frontend's number,
// then its id, so two frontends' ids never collide in one engine.
func (g *Gate) vllmID(f, id string) string {
	return strconv.Itoa(g.frontendNumber(f)) + "." + id
}

func (g *Gate) ready(r int) *wire.Ready {
	rk := g.ranks[r]
	return &wire.Ready{
		ProtocolVersion: wire.ProtocolVersion,
		EngineIndex:     r,
		Model:           g.cfg.Model,
		ServedModelName: g.cfg.ServedModelName,
		MaxModelLen:     int(rk.resp.MaxModelLen),
		VocabSize:       g.cfg.VocabSize,
		BlockSize:       int(rk.resp.BlockSize),
		NumBlocks:       int(rk.resp.NumGPUBlocks),
		EOSTokenIDs:     slices.Clone(g.cfg.EOSTokenIDs),
		EngineID:        rk.engineID,
		Version:         "vllm " + rk.resp.VLLMVersion,
		MaxLogprobs:     g.cfg.MaxLogprobs,
	}
}

// heartbeat is rank r's load: the requests in flight as this gate counts
// them (vLLM engines publish their own counts only to a DP coordinator),
// the KV usage of the engine's last scheduler stats if it sent any, and
// the full list of sessions routed there.
func (g *Gate) heartbeat(now time.Time, r int) *wire.Heartbeat {
	rk := g.ranks[r]
	st := &wire.SchedulerStats{NumRunningReqs: len(rk.inflight), NumTotalBlocks: int(rk.resp.NumGPUBlocks),
		NumFreeBlocks: int(rk.resp.NumGPUBlocks), NumSessions: len(rk.sessions)}
	if s := rk.stats; s != nil {
		st.KVCacheUsage = s.KVCacheUsage
		st.NumFreeBlocks = int(float64(rk.resp.NumGPUBlocks) * (1 - s.KVCacheUsage))
		st.StepCounter = s.StepCounter
	}
	ids := sessionIDs(rk)
	ts := float64(now.UnixNano()) / 1e9
	return &wire.Heartbeat{Timestamp: ts, NumRunning: st.NumRunningReqs, SchedulerStats: st,
		Sessions: &wire.SessionReport{EngineIndex: r, Timestamp: ts, Full: true, Added: ids}}
}

// reject is the error output for a request this gate cannot pass on.
func (g *Gate) reject(r int, f, id string, code wire.ErrorCode, reason string) []Send {
	return g.toFrontend(r, f, wire.MsgOutputs, &wire.EngineCoreOutputs{EngineIndex: r, Outputs: []wire.EngineCoreOutput{{
		RequestID: id, FinishReason: wire.FinishError, StopReason: reason, ErrorCode: code}}})
}

func (g *Gate) add(now time.Time, r int, f string, req *wire.EngineCoreRequest) []Send {
	rk := g.ranks[r]
	switch {
	case rk.state != rankReady:
		return g.reject(r, f, req.RequestID, wire.CodeNone, fmt.Sprintf("vLLM engine core %d is not connected", r))
	case !rk.frontends[f]:
		return g.reject(r, f, req.RequestID, wire.CodeUnknownFrontend, "unknown frontend: send HELLO first")
	}
	vr, err := vllm.FromTandemRequest(req, 0, 0)
	if err != nil {
		return g.reject(r, f, req.RequestID, wire.CodeInvalidRequest, err.Error())
	}
	vid := g.vllmID(f, req.RequestID)
	if _, dup := rk.inflight[vid]; dup {
		return g.reject(r, f, req.RequestID, wire.CodeInvalidRequest, fmt.Sprintf("duplicate request id %q", req.RequestID))
	}
	vr.RequestID = vid
	g.fillEOS(vr.SamplingParams)
	frames, err := vllm.EncodeAdd(vr)
	if err != nil {
		return g.reject(r, f, req.RequestID, wire.CodeInvalidRequest, err.Error())
	}
	rk.inflight[vid] = owner{frontend: f, id: req.RequestID, session: req.SessionID}
	if req.SessionID != "" {
		g.touch(now, rk, req.SessionID, vid, len(req.PromptTokenIDs))
	}
	return []Send{{Sock: SockInput, Rank: r, Frames: append([][]byte{rk.identity}, frames...)}}
}

// fillEOS sets the keys vLLM's frontend fills from its tokenizer: a vLLM
// engine stops at _eos_token_id only, and masks _all_stop_token_ids for
// min_tokens. A model's further EOS ids become stop tokens.
func (g *Gate) fillEOS(p *vllm.SamplingParams) {
	if p == nil || len(g.cfg.EOSTokenIDs) == 0 || p.EOSTokenID != nil {
		return
	}
	eos := int64(g.cfg.EOSTokenIDs[0])
	p.EOSTokenID = &eos
	all := []int32{g.cfg.EOSTokenIDs[0]}
	if !p.IgnoreEOS {
		for _, id := range g.cfg.EOSTokenIDs[1:] {
			if !slices.Contains(p.StopTokenIDs, id) {
				p.StopTokenIDs = append(p.StopTokenIDs, id)
			}
		}
	}
	for _, id := range p.StopTokenIDs {
		if !slices.Contains(all, id) {
			all = append(all, id)
		}
	}
	p.AllStopTokenIDs = all
}

func (g *Gate) touch(now time.Time, rk *rank, id, vid string, prompt int) {
	s := rk.sessions[id]
	if s == nil {
		if len(rk.sessions) >= g.cfg.MaxSessions {
			g.evictOldest(rk)
		}
		s = &session{}
		rk.sessions[id] = s
	}
	s.requests++
	s.prompt += int64(prompt)
	s.running++
	s.last = float64(now.UnixNano()) / 1e9
	s.recent = append(s.recent, vid)
	if len(s.recent) > 64 {
		s.recent = s.recent[len(s.recent)-64:]
	}
}

func (g *Gate) evictOldest(rk *rank) {
	oldest, at := "", 0.0
	for id, s := range rk.sessions {
		if s.running == 0 && (oldest == "" || s.last < at) {
			oldest, at = id, s.last
		}
	}
	delete(rk.sessions, oldest)
}

func (g *Gate) abort(r int, f string, ids []string) []Send {
	rk := g.ranks[r]
	var vids []string
	for _, id := range ids {
		vid := g.vllmID(f, id)
		if o, ok := rk.inflight[vid]; ok && o.frontend == f {
			g.finish(rk, vid)
			vids = append(vids, vid)
		}
	}
	if len(vids) == 0 || rk.state != rankReady {
		return nil
	}
	frames, err := vllm.EncodeAbort(vids)
	if err != nil {
		return nil
	}
	return []Send{{Sock: SockInput, Rank: r, Frames: append([][]byte{rk.identity}, frames...)}}
}

func (g *Gate) finish(rk *rank, vid string) {
	o, ok := rk.inflight[vid]
	if !ok {
		return
	}
	delete(rk.inflight, vid)
	if s := rk.sessions[o.session]; s != nil && s.running > 0 {
		s.running--
	}
}

// utility answers Tandem's engine utilities that a vLLM engine has no
// counterpart for, from what this gate knows.
func (g *Gate) utility(r int, f string, u *wire.Utility) *wire.UtilityResult {
	rk := g.ranks[r]
	res := &wire.UtilityResult{CallID: u.CallID}
	var v any
	arg := func() string {
		if len(u.Args) == 1 {
			s, _ := u.Args[0].(string)
			return s
		}
		return ""
	}
	switch u.Method {
	case "get_events_endpoint", "get_replay_endpoint":
		v = "" // vLLM engines publish KV events on their own --kv-events-config endpoint
	case "get_sessions":
		v = sessionIDs(rk)
	case "get_session":
		s := rk.sessions[arg()]
		if s == nil {
			v = nil
			break
		}
		v = &wire.SessionInfo{SessionID: arg(), EngineIndex: r, NumRequests: s.requests, NumPromptTokens: s.prompt,
			NumOutputTokens: s.output, NumRunning: s.running, LastActive: s.last, RecentRequestIDs: stripIDs(s.recent)}
	case "end_session":
		_, had := rk.sessions[arg()]
		delete(rk.sessions, arg())
		v = had
	case "list_requests":
		reqs := []any{}
		for _, o := range rk.inflight {
			if o.frontend == f {
				reqs = append(reqs, map[string]any{"request_id": o.id, "session_id": o.session})
			}
		}
		v = reqs
	default:
		res.FailureMessage = fmt.Sprintf("%s is not supported by a vLLM engine core", u.Method)
		return res
	}
	raw, err := wire.Marshal(v)
	if err != nil {
		res.FailureMessage = err.Error()
		return res
	}
	res.Result = raw
	return res
}

// sessionIDs are the sessions routed to rk, sorted.
func sessionIDs(rk *rank) []string {
	ids := make([]string, 0, len(rk.sessions))
	for id := range rk.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func stripIDs(vids []string) []string {
	out := make([]string, len(vids))
	for i, v := range vids {
		_, id, _ := strings.Cut(v, ".")
		out[i] = id
	}
	return out
}
