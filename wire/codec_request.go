package wire

import (
	"fmt"
	"strconv"
)

// fieldErr names the struct field (by its wire name) a decode failure is in.
func fieldErr(typ string, names []string, i int, err error) error {
	if i < len(names) {
		return fmt.Errorf("%s.%s: %w", typ, names[i], err)
	}
	return fmt.Errorf("%s[%d]: %w", typ, i, err)
}

// fieldMap reads a map with str keys, calling field for each key; field
// reports whether it knew (and consumed the value of) the key. Unknown
// keys, and keys that are not str, are skipped with their values.
func (d *dec) fieldMap(typ string, field func(key string) (bool, error)) error {
	n, err := d.mapLen()
	if err != nil {
		return fmt.Errorf("%s: %w", typ, err)
	}
	for range n {
		c, err := d.peek()
		if err != nil {
			return fmt.Errorf("%s: %w", typ, err)
		}
		if !isStr(c) {
			if err := d.skip(); err != nil {
				return fmt.Errorf("%s: key: %w", typ, err)
			}
			if err := d.skip(); err != nil {
				return fmt.Errorf("%s: value: %w", typ, err)
			}
			continue
		}
		key, err := d.str()
		if err != nil {
			return fmt.Errorf("%s: key: %w", typ, err)
		}
		known, err := field(key)
		if err != nil {
			return fmt.Errorf("%s[%q]: %w", typ, key, err)
		}
		if !known {
			if err := d.skip(); err != nil {
				return fmt.Errorf("%s[%q]: %w", typ, key, err)
			}
		}
	}
	return nil
}

// spField is one SamplingParams key. The table keeps each key's name,
// default test, writer and reader in one place.
type spField struct {
	key       string
	isDefault func(p *SamplingParams) bool
	encode    func(e *enc, p *SamplingParams)
	decode    func(d *dec, p *SamplingParams) error
}

// spFields is in vLLM's declaration order (vllm/sampling_params.py), which
// is the order msgspec writes keys in, and so ours.
var spFields = []spField{
	{"n",
		func(p *SamplingParams) bool { return p.N == 1 },
		func(e *enc, p *SamplingParams) { e.int(int64(p.N)) },
		func(d *dec, p *SamplingParams) (err error) { p.N, err = d.int(); return err }},
	{"presence_penalty",
		func(p *SamplingParams) bool { return p.PresencePenalty == 0 },
		func(e *enc, p *SamplingParams) { e.float(p.PresencePenalty) },
		func(d *dec, p *SamplingParams) (err error) { p.PresencePenalty, err = d.float64(); return err }},
	{"frequency_penalty",
		func(p *SamplingParams) bool { return p.FrequencyPenalty == 0 },
		func(e *enc, p *SamplingParams) { e.float(p.FrequencyPenalty) },
		func(d *dec, p *SamplingParams) (err error) { p.FrequencyPenalty, err = d.float64(); return err }},
	{"repetition_penalty",
		func(p *SamplingParams) bool { return p.RepetitionPenalty == 1 },
		func(e *enc, p *SamplingParams) { e.float(p.RepetitionPenalty) },
		func(d *dec, p *SamplingParams) (err error) { p.RepetitionPenalty, err = d.float64(); return err }},
	{"temperature",
		func(p *SamplingParams) bool { return p.Temperature == 1 },
		func(e *enc, p *SamplingParams) { e.float(p.Temperature) },
		func(d *dec, p *SamplingParams) (err error) { p.Temperature, err = d.float64(); return err }},
	{"top_p",
		func(p *SamplingParams) bool { return p.TopP == 1 },
		func(e *enc, p *SamplingParams) { e.float(p.TopP) },
		func(d *dec, p *SamplingParams) (err error) { p.TopP, err = d.float64(); return err }},
	{"top_k",
		func(p *SamplingParams) bool { return p.TopK == 0 },
		func(e *enc, p *SamplingParams) { e.int(int64(p.TopK)) },
		func(d *dec, p *SamplingParams) (err error) { p.TopK, err = d.int(); return err }},
	{"min_p",
		func(p *SamplingParams) bool { return p.MinP == 0 },
		func(e *enc, p *SamplingParams) { e.float(p.MinP) },
		func(d *dec, p *SamplingParams) (err error) { p.MinP, err = d.float64(); return err }},
	{"seed",
		func(p *SamplingParams) bool { return p.Seed == nil },
		func(e *enc, p *SamplingParams) { e.int(*p.Seed) },
		func(d *dec, p *SamplingParams) error {
			n, err := d.int64()
			p.Seed = &n
			return err
		}},
	{"stop_token_ids",
		func(p *SamplingParams) bool { return len(p.StopTokenIDs) == 0 },
		func(e *enc, p *SamplingParams) { e.int32s(p.StopTokenIDs) },
		func(d *dec, p *SamplingParams) (err error) { p.StopTokenIDs, err = d.int32s(); return err }},
	{"ignore_eos",
		func(p *SamplingParams) bool { return !p.IgnoreEOS },
		func(e *enc, p *SamplingParams) { e.bool(p.IgnoreEOS) },
		func(d *dec, p *SamplingParams) (err error) { p.IgnoreEOS, err = d.bool(); return err }},
	{"max_tokens",
		func(p *SamplingParams) bool { return p.MaxTokens == 16 },
		func(e *enc, p *SamplingParams) { e.int(int64(p.MaxTokens)) },
		func(d *dec, p *SamplingParams) (err error) { p.MaxTokens, err = d.int(); return err }},
	{"min_tokens",
		func(p *SamplingParams) bool { return p.MinTokens == 0 },
		func(e *enc, p *SamplingParams) { e.int(int64(p.MinTokens)) },
		func(d *dec, p *SamplingParams) (err error) { p.MinTokens, err = d.int(); return err }},
	{"logprobs",
		func(p *SamplingParams) bool { return p.Logprobs == nil },
		func(e *enc, p *SamplingParams) { e.optInt(p.Logprobs) },
		func(d *dec, p *SamplingParams) (err error) { p.Logprobs, err = d.optInt(); return err }},
	{"prompt_logprobs",
		func(p *SamplingParams) bool { return p.PromptLogprobs == nil },
		func(e *enc, p *SamplingParams) { e.optInt(p.PromptLogprobs) },
		func(d *dec, p *SamplingParams) (err error) { p.PromptLogprobs, err = d.optInt(); return err }},
	{"allowed_token_ids",
		func(p *SamplingParams) bool { return p.AllowedTokenIDs == nil },
		func(e *enc, p *SamplingParams) { e.int32s(p.AllowedTokenIDs) },
		func(d *dec, p *SamplingParams) (err error) { p.AllowedTokenIDs, err = d.nonNilInt32s(); return err }},
	{"logprob_token_ids",
		func(p *SamplingParams) bool { return p.LogprobTokenIDs == nil },
		func(e *enc, p *SamplingParams) { e.int32s(p.LogprobTokenIDs) },
		func(d *dec, p *SamplingParams) (err error) { p.LogprobTokenIDs, err = d.nonNilInt32s(); return err }},
	{"_eos_token_id",
		func(p *SamplingParams) bool { return p.EOSTokenID == nil },
		func(e *enc, p *SamplingParams) { e.int(int64(*p.EOSTokenID)) },
		func(d *dec, p *SamplingParams) error {
			n, err := d.int32()
			p.EOSTokenID = &n
			return err
		}},
	{"_tandem_constraint_prefix",
		func(p *SamplingParams) bool { return p.ConstraintPrefix == 0 },
		func(e *enc, p *SamplingParams) { e.int(int64(p.ConstraintPrefix)) },
		func(d *dec, p *SamplingParams) (err error) { p.ConstraintPrefix, err = d.int(); return err }},
	{"_tandem_masked_logprobs",
		func(p *SamplingParams) bool { return !p.MaskedLogprobs },
		func(e *enc, p *SamplingParams) { e.bool(true) },
		func(d *dec, p *SamplingParams) (err error) { p.MaskedLogprobs, err = d.bool(); return err }},
	{"_tandem_return_progress",
		func(p *SamplingParams) bool { return !p.ReturnProgress },
		func(e *enc, p *SamplingParams) { e.bool(true) },
		func(d *dec, p *SamplingParams) (err error) { p.ReturnProgress, err = d.bool(); return err }},
	{"_tandem_context_shift",
		func(p *SamplingParams) bool { return p.ContextShift == nil },
		func(e *enc, p *SamplingParams) { e.int(int64(*p.ContextShift)) },
		func(d *dec, p *SamplingParams) error {
			n, err := d.int()
			p.ContextShift = &n
			return err
		}},
	{"_tandem_spec_n_max",
		func(p *SamplingParams) bool { return p.SpecMaxDraft == nil },
		func(e *enc, p *SamplingParams) { e.int(int64(*p.SpecMaxDraft)) },
		func(d *dec, p *SamplingParams) error {
			n, err := d.int()
			p.SpecMaxDraft = &n
			return err
		}},
	{"_tandem_spec_n_min",
		func(p *SamplingParams) bool { return p.SpecMinDraft == nil },
		func(e *enc, p *SamplingParams) { e.int(int64(*p.SpecMinDraft)) },
		func(d *dec, p *SamplingParams) error {
			n, err := d.int()
			p.SpecMinDraft = &n
			return err
		}},
	{"_tandem_reasoning_start",
		func(p *SamplingParams) bool { return p.ReasoningStart == "" },
		func(e *enc, p *SamplingParams) { e.str(p.ReasoningStart) },
		func(d *dec, p *SamplingParams) (err error) { p.ReasoningStart, err = d.str(); return err }},
	{"_tandem_reasoning_end",
		func(p *SamplingParams) bool { return p.ReasoningEnd == "" },
		func(e *enc, p *SamplingParams) { e.str(p.ReasoningEnd) },
		func(d *dec, p *SamplingParams) (err error) { p.ReasoningEnd, err = d.str(); return err }},
	{"thinking_token_budget",
		func(p *SamplingParams) bool { return p.ThinkingTokenBudget == nil },
		func(e *enc, p *SamplingParams) { e.int(int64(*p.ThinkingTokenBudget)) },
		func(d *dec, p *SamplingParams) error {
			n, err := d.int()
			p.ThinkingTokenBudget = &n
			return err
		}},
	{"_tandem_reasoning_budget_message",
		func(p *SamplingParams) bool { return p.ReasoningBudgetMessage == "" },
		func(e *enc, p *SamplingParams) { e.str(p.ReasoningBudgetMessage) },
		func(d *dec, p *SamplingParams) (err error) { p.ReasoningBudgetMessage, err = d.str(); return err }},
	{"structured_outputs",
		func(p *SamplingParams) bool { return p.StructuredOutputs == nil },
		func(e *enc, p *SamplingParams) { p.StructuredOutputs.encode(e) },
		func(d *dec, p *SamplingParams) error {
			p.StructuredOutputs = &StructuredOutputs{}
			return p.StructuredOutputs.decode(d)
		}},
	{"logit_bias",
		func(p *SamplingParams) bool { return len(p.LogitBias) == 0 },
		func(e *enc, p *SamplingParams) { e.logitBias(p.LogitBias) },
		func(d *dec, p *SamplingParams) (err error) { p.LogitBias, err = d.logitBias(); return err }},
	{"extra_args",
		func(p *SamplingParams) bool { return len(p.ExtraArgs) == 0 },
		func(e *enc, p *SamplingParams) { e.any(p.ExtraArgs) },
		func(d *dec, p *SamplingParams) (err error) { p.ExtraArgs, err = d.anyMap(); return err }},
}

// spIndex maps a SamplingParams key to its spFields index.
var spIndex = func() map[string]int {
	m := make(map[string]int, len(spFields))
	for i, f := range spFields {
		m[f.key] = i
	}
	return m
}()

// encode writes the map of non-default keys.
func (p *SamplingParams) encode(e *enc) {
	n := 0 // keys to write
	for i := range spFields {
		if !spFields[i].isDefault(p) {
			n++
		}
	}
	e.mapLen(n)
	for i := range spFields {
		if f := &spFields[i]; !f.isDefault(p) {
			e.str(f.key)
			f.encode(e, p)
		}
	}
}

// decode starts from DefaultSamplingParams(); nil reads as the defaults, and
// a key whose value is nil is treated as absent.
func (p *SamplingParams) decode(d *dec) error {
	*p = DefaultSamplingParams()
	return d.fieldMap("SamplingParams", func(key string) (bool, error) {
		i, ok := spIndex[key]
		if !ok {
			return false, nil
		}
		if isNil, err := d.takeNil(); isNil || err != nil {
			return true, err
		}
		return true, spFields[i].decode(d, p)
	})
}

// logitBias reads a map with int or decimal-str keys and numeric values;
// empty reads as nil.
func (d *dec) logitBias() (map[int32]float64, error) {
	n, err := d.mapLen()
	if err != nil || n == 0 {
		return nil, err
	}
	m := make(map[int32]float64, min(n, streamCapHint))
	for range n {
		k, err := d.logitBiasKey()
		if err != nil {
			return nil, err
		}
		v, err := d.float64()
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", k, err)
		}
		m[k] = v
	}
	return m, nil
}

// anyMap reads a map[string]any (nil or empty reads as nil).
func (d *dec) anyMap() (map[string]any, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if c == nilCode {
		return nil, d.next()
	}
	if !isMap(c) {
		return nil, fmt.Errorf("want map, got %s", describe(c))
	}
	v, err := d.any()
	if err != nil {
		return nil, err
	}
	m := v.(map[string]any)
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

var requestFields = []string{
	"request_id", "prompt_token_ids", "sampling_params", "arrival_time", "cache_salt",
	"data_parallel_rank", "priority", "external_req_id", "session_id", "flow_id",
	"pooling_params", "lora_requests",
}

func (r *EngineCoreRequest) encode(e *enc) {
	switch {
	case len(r.LoRA) > 0:
		e.arrayLen(len(requestFields))
	case r.Pooling != nil:
		e.arrayLen(len(requestFields) - 1)
	default:
		e.arrayLen(len(requestFields) - 2) // a generation request stays 10 fields
	}
	e.str(r.RequestID)
	e.int32s(r.PromptTokenIDs)
	r.SamplingParams.encode(e)
	e.float(r.ArrivalTime)
	e.optStr(r.CacheSalt)
	e.optInt(r.DataParallelRank)
	e.int(int64(r.Priority))
	e.optStr(r.ExternalReqID)
	e.optStr(r.SessionID)
	e.optStr(r.FlowID)
	if r.Pooling != nil {
		r.Pooling.encode(e)
	} else if len(r.LoRA) > 0 {
		e.null()
	}
	if len(r.LoRA) > 0 {
		encodeLoRAs(e, r.LoRA)
	}
}

func (r *EngineCoreRequest) decode(d *dec) error {
	*r = EngineCoreRequest{SamplingParams: DefaultSamplingParams()}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("EngineCoreRequest: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			r.RequestID, err = d.str()
		case 1:
			r.PromptTokenIDs, err = d.int32s()
		case 2:
			err = r.SamplingParams.decode(d)
		case 3:
			r.ArrivalTime, err = d.float64()
		case 4:
			r.CacheSalt, err = d.str()
		case 5:
			r.DataParallelRank, err = d.optInt()
		case 6:
			r.Priority, err = d.int()
		case 7:
			r.ExternalReqID, err = d.str()
		case 8:
			r.SessionID, err = d.str()
		case 9:
			r.FlowID, err = d.str()
		case 10:
			var isNil bool
			if isNil, err = d.takeNil(); !isNil && err == nil {
				r.Pooling = new(PoolingParams)
				err = r.Pooling.decode(d)
			}
		case 11:
			r.LoRA, err = decodeLoRAs(d)
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("EngineCoreRequest", requestFields, i, err)
		}
	}
	return nil
}

func (a *Abort) encode(e *enc) { e.strs(a.RequestIDs) }

func (a *Abort) decode(d *dec) (err error) {
	a.RequestIDs, err = d.strs()
	if err != nil {
		return fmt.Errorf("Abort: %w", err)
	}
	return nil
}

var utilityFields = []string{"call_id", "method", "args"}

func (u *Utility) encode(e *enc) {
	e.arrayLen(len(utilityFields))
	e.uint(u.CallID)
	e.str(u.Method)
	e.arrayLen(len(u.Args))
	for _, a := range u.Args {
		e.any(a)
	}
}

func (u *Utility) decode(d *dec) error {
	*u = Utility{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("Utility: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			u.CallID, err = d.uint64()
		case 1:
			u.Method, err = d.str()
		case 2:
			u.Args, err = d.anys()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("Utility", utilityFields, i, err)
		}
	}
	return nil
}

// anys reads an array of free-form values (nil or empty reads as nil).
func (d *dec) anys() ([]any, error) {
	n, err := d.arrayLen()
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]any, 0, d.capHint(n))
	for i := range n {
		v, err := d.any()
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, v)
	}
	return out, nil
}

var helloFields = []string{"protocol_version", "frontend_id", "pid"}

func (h *Hello) encode(e *enc) {
	e.arrayLen(len(helloFields))
	e.int(int64(h.ProtocolVersion))
	e.str(h.FrontendID)
	e.int(int64(h.PID))
}

func (h *Hello) decode(d *dec) error {
	*h = Hello{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("Hello: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			h.ProtocolVersion, err = d.int()
		case 1:
			h.FrontendID, err = d.str()
		case 2:
			h.PID, err = d.int()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("Hello", helloFields, i, err)
		}
	}
	return nil
}

var heartbeatFields = []string{"timestamp", "num_running", "num_waiting", "scheduler_stats", "sessions"}

func (h *Heartbeat) encode(e *enc) {
	n := len(heartbeatFields)
	if h.Sessions == nil {
		n-- // trailing, so older decoders see the 4 fields they know
	}
	e.arrayLen(n)
	e.float(h.Timestamp)
	e.int(int64(h.NumRunning))
	e.int(int64(h.NumWaiting))
	if h.SchedulerStats == nil {
		e.null()
	} else {
		h.SchedulerStats.encode(e)
	}
	if h.Sessions != nil {
		h.Sessions.encode(e)
	}
}

func (h *Heartbeat) decode(d *dec) error {
	*h = Heartbeat{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("Heartbeat: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			h.Timestamp, err = d.float64()
		case 1:
			h.NumRunning, err = d.int()
		case 2:
			h.NumWaiting, err = d.int()
		case 3:
			var isNil bool
			if isNil, err = d.takeNil(); !isNil && err == nil {
				h.SchedulerStats = new(SchedulerStats)
				err = h.SchedulerStats.decode(d)
			}
		case 4:
			var isNil bool
			if isNil, err = d.takeNil(); !isNil && err == nil {
				h.Sessions = new(SessionReport)
				err = h.Sessions.decode(d)
			}
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("Heartbeat", heartbeatFields, i, err)
		}
	}
	return nil
}

// String names the finish reason as vLLM and the OpenAI API do; "" for
// FinishNone.
func (f FinishReason) String() string {
	switch f {
	case FinishNone:
		return ""
	case FinishStop:
		return "stop"
	case FinishLength:
		return "length"
	case FinishAbort:
		return "abort"
	case FinishError:
		return "error"
	}
	return "FinishReason(" + strconv.Itoa(int(f)) + ")"
}
