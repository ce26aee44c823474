package vllm

import "fmt"

// RequestType is the first frame of a request on an input socket
// (EngineCoreRequestType).
type RequestType byte

const (
	RequestAdd            RequestType = 0x00 // payload: EngineCoreRequest
	RequestAbort          RequestType = 0x01 // payload: [request_id str, ...]
	RequestStartDPWave    RequestType = 0x02 // payload: StartDPWave, from the DP coordinator
	RequestUtility        RequestType = 0x03 // payload: UtilityRequest
	RequestExecutorFailed RequestType = 0x04 // internal to vLLM's engine; never on a socket
	RequestWakeup         RequestType = 0x05 // internal to vLLM's engine; never on a socket
)

// EngineCoreRequest is vLLM's ADD payload: an array_like struct, all 22
// elements always written, in this order. Pointers and nil slices are
// vLLM's None.
type EngineCoreRequest struct {
	RequestID             string          // 0 request_id (internal, random suffix)
	PromptTokenIDs        []int32         // 1 prompt_token_ids | None
	MMFeatures            Raw             // 2 mm_features | None
	SamplingParams        *SamplingParams // 3 sampling_params | None (pooling requests)
	PoolingParams         Raw             // 4 pooling_params | None
	ArrivalTime           float64         // 5 arrival_time, unix seconds (time.time())
	LoRARequest           Raw             // 6 lora_request | None
	CacheSalt             *string         // 7 cache_salt
	DataParallelRank      *int64          // 8 data_parallel_rank
	PromptEmbeds          *NDArray        // 9 prompt_embeds (torch)
	PromptIsTokenIDs      []bool          // 10 prompt_is_token_ids
	ClientIndex           int64           // 11 client_index: which frontend output socket
	CurrentWave           int64           // 12 current_wave (DP)
	Priority              int64           // 13 priority
	TraceHeaders          Raw             // 14 trace_headers
	Resumable             bool            // 15 resumable
	ExternalReqID         *string         // 16 external_req_id (the user's id)
	ReasoningEnded        *bool           // 17 reasoning_ended
	ReasoningParserKwargs Raw             // 18 reasoning_parser_kwargs
	AbortImmediately      bool            // 19 abort_immediately
	SessionID             *string         // 20 session_id
	KVHints               Raw             // 21 kv_hints
}

var requestFields = []string{"request_id", "prompt_token_ids", "mm_features", "sampling_params",
	"pooling_params", "arrival_time", "lora_request", "cache_salt", "data_parallel_rank",
	"prompt_embeds", "prompt_is_token_ids", "client_index", "current_wave", "priority",
	"trace_headers", "resumable", "external_req_id", "reasoning_ended",
	"reasoning_parser_kwargs", "abort_immediately", "session_id", "kv_hints"}

func (r *EngineCoreRequest) encode(e *enc) {
	e.arrayLen(len(requestFields))
	e.str(r.RequestID)
	e.optInt32s(r.PromptTokenIDs)
	e.raw(r.MMFeatures)
	if r.SamplingParams == nil {
		e.null()
	} else {
		r.SamplingParams.encode(e)
	}
	e.raw(r.PoolingParams)
	e.float(r.ArrivalTime)
	e.raw(r.LoRARequest)
	e.optStr(r.CacheSalt)
	e.optInt(r.DataParallelRank)
	e.optNDArray(r.PromptEmbeds)
	if r.PromptIsTokenIDs == nil {
		e.null()
	} else {
		e.arrayLen(len(r.PromptIsTokenIDs))
		forEach(r.PromptIsTokenIDs, e.bool)
	}
	e.int(r.ClientIndex)
	e.int(r.CurrentWave)
	e.int(r.Priority)
	e.raw(r.TraceHeaders)
	e.bool(r.Resumable)
	e.optStr(r.ExternalReqID)
	e.optBool(r.ReasoningEnded)
	e.raw(r.ReasoningParserKwargs)
	e.bool(r.AbortImmediately)
	e.optStr(r.SessionID)
	e.raw(r.KVHints)
}

func requestFrom(n node, aux [][]byte) (*EngineCoreRequest, error) {
	r := &EngineCoreRequest{}
	err := n.fields(requestFields, func(i int, v node) (err error) {
		switch i {
		case 0:
			r.RequestID, err = v.asStr()
		case 1:
			r.PromptTokenIDs, err = listOf(v, node.asInt32)
		case 2:
			r.MMFeatures = v.asRaw()
		case 3:
			r.SamplingParams, err = optOf(v, func(v node) (SamplingParams, error) { return samplingParamsFrom(v, aux) })
		case 4:
			r.PoolingParams = v.asRaw()
		case 5:
			r.ArrivalTime, err = v.asFloat()
		case 6:
			r.LoRARequest = v.asRaw()
		case 7:
			r.CacheSalt, err = optOf(v, node.asStr)
		case 8:
			r.DataParallelRank, err = optOf(v, node.asInt)
		case 9:
			r.PromptEmbeds, err = optNDArrayFrom(v, aux)
		case 10:
			r.PromptIsTokenIDs, err = listOf(v, node.asBool)
		case 11:
			r.ClientIndex, err = v.asInt()
		case 12:
			r.CurrentWave, err = v.asInt()
		case 13:
			r.Priority, err = v.asInt()
		case 14:
			r.TraceHeaders = v.asRaw()
		case 15:
			r.Resumable, err = v.asBool()
		case 16:
			r.ExternalReqID, err = optOf(v, node.asStr)
		case 17:
			r.ReasoningEnded, err = optOf(v, node.asBool)
		case 18:
			r.ReasoningParserKwargs = v.asRaw()
		case 19:
			r.AbortImmediately, err = v.asBool()
		case 20:
			r.SessionID, err = optOf(v, node.asStr)
		case 21:
			r.KVHints = v.asRaw()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("EngineCoreRequest.%w", err)
	}
	return r, nil
}

// CallID is a utility call's id. vLLM's frontend draws uuid1().int >> 64,
// which needs all of uint64; its engine also sends the negative ids -1
// (elastic EP notifications) and -2 (fault tolerance status). A CallID
// holds those as their two's complement, and the encoder writes any value
// whose int64 is in [-65536, -1] as a negative int (uuid1's version nibble
// keeps real ids out of that range).
// TODO(vllm-wire): a hack over one int type; split it if vLLM adds more
// negative ids.
type CallID uint64

func (e *enc) callID(c CallID) {
	if s := int64(c); s < 0 && s >= -65536 {
		e.int(s)
		return
	}
	e.check(e.e.EncodeUint(uint64(c)))
}

func callIDFrom(n node) (CallID, error) {
	switch n.kind {
	case kInt:
		return CallID(n.i), nil
	case kUint:
		return CallID(n.u), nil
	}
	return 0, wantErr("int", n)
}

// UtilityRequest is the UTILITY payload, the tuple (client_index, call_id,
// method, args). Args is the encoded args tuple (an array), verbatim.
type UtilityRequest struct {
	ClientIndex int64
	CallID      CallID
	Method      string
	Args        Raw // msgpack array; empty encodes as []
}

func (u *UtilityRequest) encode(e *enc) {
	e.arrayLen(4)
	e.int(u.ClientIndex)
	e.callID(u.CallID)
	e.str(u.Method)
	e.rawOr(u.Args, []byte{0x90})
}

func utilityRequestFrom(n node) (*UtilityRequest, error) {
	u := &UtilityRequest{}
	err := n.fields([]string{"client_index", "call_id", "method", "args"}, func(i int, v node) (err error) {
		switch i {
		case 0:
			u.ClientIndex, err = v.asInt()
		case 1:
			u.CallID, err = callIDFrom(v)
		case 2:
			u.Method, err = v.asStr()
		case 3:
			if _, err = v.asArr(); err == nil {
				u.Args = rawUnlessDefault(v, emptyArray)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("UtilityRequest.%w", err)
	}
	return u, nil
}

// StartDPWave is the START_DP_WAVE payload the DP coordinator broadcasts:
// the tuple (wave, exclude_engine_index). The engine named by
// ExcludeEngineIndex (nil = none) already runs this wave.
type StartDPWave struct {
	Wave               int64
	ExcludeEngineIndex *int64
}

func (w *StartDPWave) encode(e *enc) {
	e.arrayLen(2)
	e.int(w.Wave)
	e.optInt(w.ExcludeEngineIndex)
}

func startDPWaveFrom(n node) (*StartDPWave, error) {
	w := &StartDPWave{}
	err := n.fields([]string{"wave", "exclude_engine_index"}, func(i int, v node) (err error) {
		if i == 0 {
			w.Wave, err = v.asInt()
		} else {
			w.ExcludeEngineIndex, err = optOf(v, node.asInt)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("StartDPWave.%w", err)
	}
	return w, nil
}
