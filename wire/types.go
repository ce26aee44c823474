package wire

// ProtocolVersion is carried by HELLO and READY. An engine refuses a
// frontend whose HELLO names another version (READY with Error set), and a
// frontend refuses an engine whose READY names another version.
const ProtocolVersion = 1

// MsgType is the first frame of every message (after the ROUTER identity).
type MsgType byte

// Frontend → engine.
const (
	MsgAdd       MsgType = 0x00 // payload: EngineCoreRequest
	MsgAbort     MsgType = 0x01 // payload: Abort
	MsgUtility   MsgType = 0x03 // payload: Utility
	MsgHello     MsgType = 0x06 // payload: Hello
	MsgHeartbeat MsgType = 0x07 // payload: Heartbeat (both directions)
)

// Engine → frontend.
const (
	MsgReady         MsgType = 0x80 // payload: Ready
	MsgOutputs       MsgType = 0x81 // payload: EngineCoreOutputs
	MsgUtilityResult MsgType = 0x82 // payload: UtilityResult
	MsgEngineDead    MsgType = 0x84 // payload: EngineDead
)

// FinishReason says why a request finished. The Go zero value FinishNone
// means "not finished"; on the wire it is nil and the others are vLLM's
// integers (STOP=0, LENGTH=1, ABORT=2, ERROR=3).
type FinishReason uint8

const (
	FinishNone   FinishReason = iota // not finished (nil on the wire)
	FinishStop                       // EOS, stop token or stop string (wire 0)
	FinishLength                     // max_tokens or max_model_len (wire 1)
	FinishAbort                      // aborted (wire 2)
	FinishError                      // engine-side error (wire 3)
)

// SamplingParams is encoded as a msgpack map holding only the keys whose
// value differs from the default (like vLLM's omit_defaults msgspec
// struct). Unknown keys are ignored when decoding. Keys use vLLM's names.
type SamplingParams struct {
	N                 int     // "n", default 1
	PresencePenalty   float64 // "presence_penalty", default 0
	FrequencyPenalty  float64 // "frequency_penalty", default 0
	RepetitionPenalty float64 // "repetition_penalty", default 1
	Temperature       float64 // "temperature", default 1
	TopP              float64 // "top_p", default 1
	TopK              int     // "top_k", default 0 (= off)
	MinP              float64 // "min_p", default 0
	Seed              *int64  // "seed", default nil (= random)
	StopTokenIDs      []int32 // "stop_token_ids", default empty
	IgnoreEOS         bool    // "ignore_eos", default false
	MaxTokens         int     // "max_tokens", default 16
	MinTokens         int     // "min_tokens", default 0
	Logprobs          *int    // "logprobs", default nil (= none); number of top logprobs per sampled token
	PromptLogprobs    *int    // "prompt_logprobs", default nil; top logprobs per prompt token (-1 = the whole vocabulary)
	// AllowedTokenIDs ("allowed_token_ids", default nil = any token): only
	// these tokens may be sampled. Non-nil and empty is an error (vLLM's
	// "allowed_token_ids is not None and empty!").
	AllowedTokenIDs []int32
	// LogprobTokenIDs ("logprob_token_ids", default nil): the logprobs of
	// each sampled token are of exactly these tokens (after the sampled
	// one), not of the top ones; Logprobs, when set, equals their count.
	LogprobTokenIDs   []int32
	StructuredOutputs *StructuredOutputs // "structured_outputs", default nil (= unconstrained)
	LogitBias         map[int32]float64  // "logit_bias", default nil
	EOSTokenID        *int32             // "_eos_token_id", default nil (= the engine model's EOS)
	// ConstraintPrefix ("_tandem_constraint_prefix", default 0): the
	// constraint first accepts the prompt's last ConstraintPrefix tokens,
	// as if generated (a beam search expansion continues a beam's answer).
	ConstraintPrefix int
	// MaskedLogprobs ("_tandem_masked_logprobs", default false): logprobs
	// are of the distribution after the constraint's mask, not the raw one
	// (a beam search expansion ranks only allowed tokens).
	MaskedLogprobs bool
	// ReturnProgress ("_tandem_return_progress", default false): the
	// engine reports each prefill step of the prompt that samples nothing
	// with an output without tokens carrying PromptProgress (llama.cpp's
	// return_progress).
	ReturnProgress bool
	// ContextShift ("_tandem_context_shift", default nil): llama.cpp's
	// context shift. When the request's tokens reach max_model_len before
	// max_tokens, the engine drops half of those after the first
	// *ContextShift (n_keep) and recomputes the rest, instead of finishing
	// with length; nil finishes.
	ContextShift *int
	// SpecMaxDraft and SpecMinDraft ("_tandem_spec_n_max",
	// "_tandem_spec_n_min", default nil): llama.cpp's per-request
	// speculative.n_max and speculative.n_min. A draft has at most
	// *SpecMaxDraft tokens (0: the request is not speculated) and is
	// dropped when shorter than *SpecMinDraft.
	SpecMaxDraft, SpecMinDraft *int
	// ReasoningStart and ReasoningEnd ("_tandem_reasoning_start",
	// "_tandem_reasoning_end", default ""): with StructuredOutputs, the
	// answer may think first, and its constraint applies from the token
	// after ReasoningEnd (vLLM's reasoning_ended false). ReasoningStart ""
	// says the prompt opened the think block; set, the answer may open it
	// with that tag as its first token, else the constraint applies from
	// its first token. Both "": constrained from the first token.
	ReasoningStart, ReasoningEnd string
	// ThinkingTokenBudget ("thinking_token_budget", vLLM's, default nil =
	// no limit): with ReasoningEnd, the most tokens the answer samples
	// inside its think block; then the engine forces
	// ReasoningBudgetMessage ("_tandem_reasoning_budget_message",
	// llama.cpp's --reasoning-budget-message, default "") and the end tag.
	ThinkingTokenBudget    *int
	ReasoningBudgetMessage string         // at most MaxReasoningBudgetMessage bytes
	ExtraArgs              map[string]any // "extra_args", default nil (from vllm_xargs)
}

// MaxReasoningBudgetMessage bounds ReasoningBudgetMessage, bytes: the
// engine refuses more, and frontends check requests and flags against it.
const MaxReasoningBudgetMessage = 1024

// StructuredOutputs is vLLM's StructuredOutputsParams, a dataclass and
// so a map with every key: the constraint on a request's output. At most
// one of JSON, Regex, Choice, Grammar, JSONObject and StructuralTag is set
// (the engine refuses more).
type StructuredOutputs struct {
	JSON                        string   // "json": a JSON Schema as JSON text (vLLM may send it as a map; it decodes to its JSON text)
	Regex                       string   // "regex"
	Choice                      []string // "choice"
	Grammar                     string   // "grammar": Lark (LLGuidance's dialect)
	JSONObject                  bool     // "json_object": any JSON object
	DisableAnyWhitespace        bool     // "disable_any_whitespace"
	DisableAdditionalProperties bool     // "disable_additional_properties"
	WhitespacePattern           string   // "whitespace_pattern"
	StructuralTag               string   // "structural_tag"
}

// DefaultSamplingParams returns the parameters every omitted key stands for.
func DefaultSamplingParams() SamplingParams {
	return SamplingParams{N: 1, RepetitionPenalty: 1, Temperature: 1, TopP: 1, MaxTokens: 16}
}

// EngineCoreRequest is one ADD. Array fields in this order:
//
//	0 request_id        str   (internal, unique per engine)
//	1 prompt_token_ids  [int]
//	2 sampling_params   SamplingParams map | nil
//	3 arrival_time      float64 (unix seconds)
//	4 cache_salt        str | nil   ("" = none)
//	5 data_parallel_rank int | nil
//	6 priority          int (lower runs earlier)
//	7 external_req_id   str | nil   (the user-visible id)
//	8 session_id        str | nil   ("" = none)
//	9 flow_id           str | nil   (fairness group in the frontend; "" = its default)
//	10 pooling_params   PoolingParams map | nil (written only when set: an embedding request)
//	11 lora_requests    [LoRARequest map] | nil (written only when set; index 10 is then nil without pooling)
type EngineCoreRequest struct {
	RequestID        string
	PromptTokenIDs   []int32
	SamplingParams   SamplingParams
	ArrivalTime      float64
	CacheSalt        string
	DataParallelRank *int
	Priority         int
	ExternalReqID    string
	SessionID        string
	FlowID           string // fairness group within the frontend; "" = the frontend's default
	// Pooling, when set, makes this an embedding request: the engine
	// computes the prompt and finishes with PoolingOutput (finish reason
	// stop, no tokens); SamplingParams are then ignored.
	Pooling *PoolingParams
	// LoRA are the LoRA adapters the request applies, each with its
	// scale; none: the base model.
	LoRA []LoRARequest
}

// Logprobs holds, for each of P positions, the sampled token followed by
// the top-k alternatives. Array: [token_ids [P][k+1]int, logprobs
// [P][k+1]float64, ranks [P]int].
type Logprobs struct {
	TokenIDs [][]int32   // [P][k+1], column 0 is the sampled token
	Logprobs [][]float64 // [P][k+1], natural log
	Ranks    []int32     // [P], rank of the sampled token (1 = best)
}

// Append adds o's rows after l's.
func (l *Logprobs) Append(o *Logprobs) {
	l.TokenIDs = append(l.TokenIDs, o.TokenIDs...)
	l.Logprobs = append(l.Logprobs, o.Logprobs...)
	l.Ranks = append(l.Ranks, o.Ranks...)
}

// Head is l's first n rows (all of them when it has fewer), sharing l's
// storage.
func (l *Logprobs) Head(n int) *Logprobs {
	h := *l
	h.TokenIDs = h.TokenIDs[:min(n, len(h.TokenIDs))]
	h.Logprobs = h.Logprobs[:min(n, len(h.Logprobs))]
	h.Ranks = h.Ranks[:min(n, len(h.Ranks))]
	return &h
}

// EngineCoreOutput is one request's new tokens from one step. Array:
//
//	0 request_id        str
//	1 new_token_ids     [int]
//	2 new_logprobs      Logprobs | nil
//	3 finish_reason     int | nil
//	4 stop_reason       int | str | nil
//	5 num_cached_tokens int (prompt tokens served from the prefix cache)
//	6 error_code        int (with finish_reason error: why, an ErrorCode)
//	7 events            [EngineCoreEvent] | nil (what happened to the request since its last output)
//	8 new_prompt_logprobs_tensors Logprobs | nil (vLLM's name and three fields; written only when set)
//	9 prompt_progress   int (written only when it or a later field is set)
//	10 spec_decode      [3]int | nil (written only when it or a later field is set)
//	11 pooling_output   bin | nil (little-endian float32s; written only when set)
type EngineCoreOutput struct {
	RequestID       string
	NewTokenIDs     []int32
	NewLogprobs     *Logprobs
	FinishReason    FinishReason
	StopReason      any // nil, int64 (stop token id) or string
	NumCachedTokens int
	ErrorCode       ErrorCode
	Events          []EngineCoreEvent
	// NewPromptLogprobs (with prompt_logprobs set, on the request's first
	// output) holds one row per prompt position 1..P-1: column 0 is the
	// prompt token there, then the top-k alternatives, as vLLM's
	// LogprobsTensors [P-1][k+1] (position 0 has no logprob).
	NewPromptLogprobs *Logprobs
	// PromptProgress is, on an output without tokens that reports a
	// prefill step (a request with ReturnProgress), the prompt tokens
	// computed so far, the cached ones included: 0 < PromptProgress <
	// prompt length. 0 otherwise.
	PromptProgress int
	// SpecDecode, on an output of a step that verified a draft of the
	// request (speculative decoding), is that draft's figures; nil
	// otherwise. The frontend sums them into the request's (llama-server's
	// draft_n and draft_n_accepted, vLLM's per-request speculative_decoding).
	SpecDecode *SpecDecodeStep
	// PoolingOutput is, on the finishing output of a request with
	// Pooling, its embedding: [Dim] (or [Dimensions]) float32s.
	PoolingOutput []float32
}

// SpecDecodeStep is one verified draft of one request ("spec_decode",
// an array [num_spec_tokens, num_draft_tokens, num_accepted_tokens]).
type SpecDecodeStep struct {
	NumSpecTokens     int // the engine's k, the most a draft may have
	NumDraftTokens    int // this draft's tokens
	NumAcceptedTokens int // of those, the tokens kept (0..NumDraftTokens)
}

// SpecDecodingStats ("spec_decoding_stats", a map with vLLM's
// SpecDecodingStats keys) are an engine's speculative decoding figures,
// cumulative since it started, as Tandem's other counters.
type SpecDecodingStats struct {
	NumSpecTokens           int     // "num_spec_tokens": k
	NumDrafts               int64   // "num_drafts"
	NumDraftTokens          int64   // "num_draft_tokens"
	NumAcceptedTokens       int64   // "num_accepted_tokens"
	NumAcceptedTokensPerPos []int64 // "num_accepted_tokens_per_pos": [k]
}

// EngineCoreEventType is what happened to a request in the engine, with
// vLLM's values (EngineCoreEventType in vllm/v1/engine/__init__.py).
type EngineCoreEventType int

const (
	EventQueued    EngineCoreEventType = 1 // the engine took the request into its waiting queue
	EventScheduled EngineCoreEventType = 2 // a step scheduled it (first time, or again after a preemption)
	EventPreempted EngineCoreEventType = 3 // its KV blocks were taken back; it waits to be recomputed
)

// EngineCoreEvent is one timestamped event, a map like vLLM's
// EngineCoreEvent: {"type": int, "timestamp": float}. The timestamp is on
// the engine's clock, the clock of EngineCoreOutputs.Timestamp (unix
// seconds), so a frontend subtracts the two without comparing clocks.
type EngineCoreEvent struct {
	Type      EngineCoreEventType
	Timestamp float64
}

// ErrorCode says why the engine finished a request with FinishError, so a
// frontend acts on it without reading StopReason's text.
type ErrorCode int

const (
	CodeNone            ErrorCode = iota // no error, or an engine too old to say
	CodeUnknownFrontend                  // no HELLO from this frontend (the engine restarted): say HELLO and resend
	CodeInvalidRequest                   // the request itself is bad (token ids, lengths, a duplicate id)
)

// SchedulerStats is a map (like vLLM's dataclass); unknown keys ignored.
type SchedulerStats struct {
	NumRunningReqs     int     // "num_running_reqs"
	NumWaitingReqs     int     // "num_waiting_reqs"
	KVCacheUsage       float64 // "kv_cache_usage", 0..1
	NumFreeBlocks      int     // "num_free_blocks"
	NumTotalBlocks     int     // "num_total_blocks"
	StepCounter        int64   // "step_counter"
	PrefixCacheQueries int64   // "prefix_cache_queries", tokens, cumulative
	PrefixCacheHits    int64   // "prefix_cache_hits", tokens, cumulative
	NumPreemptions     int64   // "num_preemptions", cumulative
	NumSessions        int     // "num_sessions": sessions with resident KV blocks or live requests
	// NumSkippedWaitingReqs ("num_skipped_waiting_reqs", vLLM's name) is
	// those of NumWaitingReqs that wait on something other than capacity
	// (a structured-output grammar compiling: vLLM's WAITING_FOR_FSM).
	// Written only when non-zero.
	NumSkippedWaitingReqs int
	// Sleeping ("sleeping") says the engine sleeps (sleep mode: it
	// schedules nothing until woken), at level SleepLevel ("sleep_level",
	// 0–2, see enginecore's sleep.go). Tandem's own keys, written only
	// while it sleeps.
	Sleeping   bool
	SleepLevel int
	// SpecDecoding is the engine's speculative decoding figures, nil when
	// it does not speculate (then not written).
	SpecDecoding *SpecDecodingStats
	// AddsSeen ("adds_seen", Tandem's own) is how many ADD messages from
	// the receiving frontend (its ZMQ identity, counted from its latest
	// HELLO) these figures include. A Tandem engine writes it in the
	// OUTPUTS and heartbeats it sends each frontend; nil: unknown (then
	// not written), and a frontend assumes every request it sent is in the
	// figures.
	AddsSeen *int64
}

// SleepStates are the values of vllm:engine_sleep_state for its
// sleep_state labels SleepStateNames: awake 0 while the engine sleeps at
// any level, weights_offloaded 1 at level 1, discard_all 1 at level 2.
func (s *SchedulerStats) SleepStates() [3]float64 {
	var v [3]float64
	switch {
	case !s.Sleeping:
		v[0] = 1
	case s.SleepLevel == 1:
		v[1] = 1
	case s.SleepLevel == 2:
		v[2] = 1
	}
	return v
}

// SleepStateNames are vllm:engine_sleep_state's sleep_state labels.
var SleepStateNames = [3]string{"awake", "weights_offloaded", "discard_all"}

// EngineCoreOutputs is one OUTPUTS message. Array:
//
//	0 engine_index      int
//	1 outputs           [EngineCoreOutput]
//	2 scheduler_stats   SchedulerStats map | nil
//	3 timestamp         float64 (unix seconds, when the step's outputs were ready)
//	4 finished_requests [str] | nil
type EngineCoreOutputs struct {
	EngineIndex      int
	Outputs          []EngineCoreOutput
	SchedulerStats   *SchedulerStats
	Timestamp        float64
	FinishedRequests []string
}

// Hello opens a frontend's session with an engine. Array:
// [protocol_version int, frontend_id str, pid int].
type Hello struct {
	ProtocolVersion int
	FrontendID      string
	PID             int
}

// Ready answers HELLO. Array:
//
//	0 protocol_version  int
//	1 engine_index      int
//	2 error             str | nil (set when the HELLO was refused)
//	3 model             str (what --model named: a path or "dummy")
//	4 served_model_name str
//	5 max_model_len     int
//	6 vocab_size        int
//	7 block_size        int
//	8 num_blocks        int
//	9 eos_token_ids     [int]
//	10 engine_id        str (random per engine process start)
//	11 pid              int
//	12 version          str (tandem build version)
//	13 max_logprobs     int (--max-logprobs: logprobs per token at most;
//	                    -1 = the whole vocabulary; absent = 20)
//	14 max_num_seqs     int (--max-num-seqs: sequences it runs at once;
//	                    absent = 0, unknown)
//	15 speculative      [n_max int, n_min int, p_min float64, type str] |
//	                    nil: its speculative decoding (draft tokens per
//	                    step at most, drafts shorter than n_min dropped, a
//	                    draft model's minimum probability, the method in
//	                    llama.cpp's words); nil or absent = off
//	16 pooling          str: the engine's default embedding pooling when
//	                    a flag or the model file sets one (LAST, MEAN,
//	                    CLS, NONE); written only when set, absent = ""
//	17 max_loras        int: the LoRA adapters the engine keeps loaded
//	                    (--max-cpu-loras) when its device applies them;
//	                    written only when set (index 16 is then "" unless
//	                    set), absent = 0: the device applies none
//	18 classifier_labels [str]: the names of the model's classification
//	                    head's classes (a reranker: RANK pooling), in
//	                    order; written only when it has one (16 and 17
//	                    then as when unset), absent or nil = no head
type Ready struct {
	ProtocolVersion int
	EngineIndex     int
	Error           string
	Model           string
	ServedModelName string
	MaxModelLen     int
	VocabSize       int
	BlockSize       int
	NumBlocks       int
	EOSTokenIDs     []int32
	EngineID        string
	PID             int
	Version         string
	MaxLogprobs     int
	MaxNumSeqs      int
	Speculative     *SpecInfo
	Pooling         string
	MaxLoRAs        int
	// ClassifierLabels: the model's classification head (index 18).
	ClassifierLabels []string
}

// SpecInfo is an engine's speculative decoding settings, as READY
// reports them (llama-server's generation_settings speculative.*).
type SpecInfo struct {
	NMax, NMin int
	PMin       float64
	Type       string // llama.cpp's speculative type: "draft-simple", "ngram-simple", or vLLM's method ("ngram")
}

// DefaultMaxLogprobs is Ready.MaxLogprobs when a READY leaves it out (an
// engine from before it): vLLM's default max_logprobs, which such
// engines enforced.
const DefaultMaxLogprobs = 20

// Abort is a list of internal request ids (msgpack array of str).
type Abort struct {
	RequestIDs []string
}

// Heartbeat is sent both ways. Array: [timestamp float64, num_running int,
// num_waiting int, scheduler_stats SchedulerStats map | nil, sessions
// SessionReport] (the counts are 0 and the stats nil from a frontend). An
// engine sends one every report interval (its load report) and one with
// Sessions set when its sessions change; element 4 is left out when
// Sessions is nil.
type Heartbeat struct {
	Timestamp      float64
	NumRunning     int
	NumWaiting     int
	SchedulerStats *SchedulerStats
	Sessions       *SessionReport // engine only: which sessions it holds (a delta or a full snapshot)
}

// Utility is a named call. Array: [call_id uint64, method str, args [any]].
type Utility struct {
	CallID uint64
	Method string
	Args   []any
}

// UtilityResult answers a Utility. Array: [call_id uint64,
// failure_message str | nil, result any]. Result holds the result's raw
// msgpack bytes, embedded verbatim (nil encodes as msgpack nil, and msgpack
// nil decodes as nil: check Result.IsNil()); decode it into the method's
// result type (e.g. SessionInfo) with Unmarshal.
type UtilityResult struct {
	CallID         uint64
	FailureMessage string
	Result         Raw
}

// Raw is one already-encoded msgpack value.
type Raw []byte

// EngineDead is the engine's last word. Array: [reason str].
type EngineDead struct {
	Reason string
}

// SessionInfo is the result of the "get_session" utility: what one engine
// knows of a session_id. Map keys in parentheses.
type SessionInfo struct {
	SessionID        string   // "session_id"
	EngineIndex      int      // "engine_index"
	NumRequests      int64    // "num_requests": requests seen, cumulative
	NumPromptTokens  int64    // "num_prompt_tokens": prompt tokens seen, cumulative
	NumOutputTokens  int64    // "num_output_tokens": generated tokens, cumulative
	NumCachedTokens  int64    // "num_cached_tokens": tokens of this session now resident in the KV cache
	NumRunning       int      // "num_running": requests of this session now running or waiting
	LastActive       float64  // "last_active": unix seconds
	RecentRequestIDs []string // "recent_request_ids": the last ≤ 64 internal request ids, oldest first
	RecordEvicted    bool     // "record_evicted": the engine's record (the counters) was dropped for its cap; the KV cache still holds the session's blocks
}
