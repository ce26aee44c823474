package wire

import "fmt"

// finishReason writes FinishNone as nil and the others as vLLM's ints.
func (e *enc) finishReason(f FinishReason) {
	switch {
	case f == FinishNone:
		e.null()
	case f <= FinishError:
		e.int(int64(f - FinishStop))
	default:
		e.fail(fmt.Errorf("unknown finish reason %d", f))
	}
}

var logprobsFields = []string{"token_ids", "logprobs", "ranks"}

func (l *Logprobs) encode(e *enc) {
	e.arrayLen(len(logprobsFields))
	e.arrayLen(len(l.TokenIDs))
	for _, row := range l.TokenIDs {
		e.int32s(row)
	}
	e.arrayLen(len(l.Logprobs))
	for _, row := range l.Logprobs {
		e.arrayLen(len(row))
		for _, v := range row {
			e.float(v)
		}
	}
	e.int32s(l.Ranks)
}

func (l *Logprobs) decode(d *dec) error {
	*l = Logprobs{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("Logprobs: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			l.TokenIDs, err = d.int32Rows()
		case 1:
			l.Logprobs, err = d.float64Rows()
		case 2:
			l.Ranks, err = d.int32s()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("Logprobs", logprobsFields, i, err)
		}
	}
	return nil
}

func (d *dec) int32Rows() ([][]int32, error) { return list(d, d.int32s) }

func (d *dec) float64Rows() ([][]float64, error) {
	n, err := d.arrayLen()
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([][]float64, 0, d.capHint(n))
	for i := range n {
		m, err := d.arrayLen()
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		var row []float64
		if m > 0 {
			row = make([]float64, 0, d.capHint(m))
		}
		for j := range m {
			v, err := d.float64()
			if err != nil {
				return nil, fmt.Errorf("[%d][%d]: %w", i, j, err)
			}
			row = append(row, v)
		}
		out = append(out, row)
	}
	return out, nil
}

var outputFields = []string{
	"request_id", "new_token_ids", "new_logprobs", "finish_reason", "stop_reason", "num_cached_tokens", "error_code", "events",
	"new_prompt_logprobs_tensors", "prompt_progress", "spec_decode", "pooling_output",
}

func (o *EngineCoreOutput) encode(e *enc) {
	pooled := o.PoolingOutput != nil
	switch {
	case pooled:
		e.arrayLen(len(outputFields))
	case o.SpecDecode != nil:
		e.arrayLen(len(outputFields) - 1)
	case o.PromptProgress > 0:
		e.arrayLen(len(outputFields) - 2)
	case o.NewPromptLogprobs != nil:
		e.arrayLen(len(outputFields) - 3)
	default:
		e.arrayLen(len(outputFields) - 4) // the common output stays 8 fields
	}
	e.str(o.RequestID)
	e.int32s(o.NewTokenIDs)
	if o.NewLogprobs == nil {
		e.null()
	} else {
		o.NewLogprobs.encode(e)
	}
	e.finishReason(o.FinishReason)
	e.stopReason(o.StopReason)
	e.int(int64(o.NumCachedTokens))
	e.int(int64(o.ErrorCode))
	if o.Events == nil {
		e.null()
	} else {
		e.arrayLen(len(o.Events))
		for _, ev := range o.Events {
			ev.encode(e)
		}
	}
	later := o.PromptProgress > 0 || o.SpecDecode != nil || pooled
	switch {
	case o.NewPromptLogprobs != nil:
		o.NewPromptLogprobs.encode(e)
	case later:
		e.null()
	}
	if later {
		e.int(int64(o.PromptProgress))
	}
	switch sd := o.SpecDecode; {
	case sd != nil:
		e.arrayLen(3)
		e.int(int64(sd.NumSpecTokens))
		e.int(int64(sd.NumDraftTokens))
		e.int(int64(sd.NumAcceptedTokens))
	case pooled:
		e.null()
	}
	if pooled {
		e.float32s(o.PoolingOutput)
	}
}

func (o *EngineCoreOutput) decode(d *dec) error {
	*o = EngineCoreOutput{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("EngineCoreOutput: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			o.RequestID, err = d.str()
		case 1:
			o.NewTokenIDs, err = d.int32s()
		case 2:
			var isNil bool
			if isNil, err = d.takeNil(); !isNil && err == nil {
				o.NewLogprobs = new(Logprobs)
				err = o.NewLogprobs.decode(d)
			}
		case 3:
			o.FinishReason, err = d.finishReason()
		case 4:
			o.StopReason, err = d.stopReason()
		case 5:
			o.NumCachedTokens, err = d.int()
		case 6:
			var code int
			code, err = d.int()
			o.ErrorCode = ErrorCode(code)
		case 7:
			o.Events, err = list(d, d.event)
		case 8:
			var isNil bool
			if isNil, err = d.takeNil(); !isNil && err == nil {
				o.NewPromptLogprobs = new(Logprobs)
				err = o.NewPromptLogprobs.decode(d)
			}
		case 9:
			o.PromptProgress, err = d.int()
		case 10:
			o.SpecDecode, err = d.specDecodeStep()
		case 11:
			o.PoolingOutput, err = d.float32s()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("EngineCoreOutput", outputFields, i, err)
		}
	}
	return nil
}

var eventKeys = []string{"type", "timestamp"}

func (ev EngineCoreEvent) encode(e *enc) {
	e.mapLen(len(eventKeys))
	e.str(eventKeys[0])
	e.int(int64(ev.Type))
	e.str(eventKeys[1])
	e.float(ev.Timestamp)
}

// event reads an EngineCoreEvent map; unknown keys are skipped, and an
// event type this package does not know is kept as its number.
func (d *dec) event() (EngineCoreEvent, error) {
	var ev EngineCoreEvent
	err := d.fieldMap("EngineCoreEvent", func(key string) (known bool, err error) {
		switch key {
		case "type":
			var t int
			t, err = d.int()
			ev.Type = EngineCoreEventType(t)
		case "timestamp":
			ev.Timestamp, err = d.float64()
		default:
			return false, nil
		}
		return true, err
	})
	return ev, err
}

// Finished reports whether this is the request's last output.
func (o *EngineCoreOutput) Finished() bool { return o.FinishReason != FinishNone }

var schedulerStatsKeys = []string{
	"num_running_reqs", "num_waiting_reqs", "kv_cache_usage", "num_free_blocks", "num_total_blocks",
	"step_counter", "prefix_cache_queries", "prefix_cache_hits", "num_preemptions", "num_sessions",
}

func (s *SchedulerStats) encode(e *enc) {
	k := schedulerStatsKeys
	n := len(k)
	if s.NumSkippedWaitingReqs != 0 {
		n++
	}
	if s.Sleeping {
		n += 2
	}
	if s.SpecDecoding != nil {
		n++
	}
	if s.AddsSeen != nil {
		n++
	}
	e.mapLen(n)
	e.str(k[0])
	e.int(int64(s.NumRunningReqs))
	e.str(k[1])
	e.int(int64(s.NumWaitingReqs))
	e.str(k[2])
	e.float(s.KVCacheUsage)
	e.str(k[3])
	e.int(int64(s.NumFreeBlocks))
	e.str(k[4])
	e.int(int64(s.NumTotalBlocks))
	e.str(k[5])
	e.int(s.StepCounter)
	e.str(k[6])
	e.int(s.PrefixCacheQueries)
	e.str(k[7])
	e.int(s.PrefixCacheHits)
	e.str(k[8])
	e.int(s.NumPreemptions)
	e.str(k[9])
	e.int(int64(s.NumSessions))
	if s.NumSkippedWaitingReqs != 0 { // after the keys every version writes, so their bytes stay
		e.str("num_skipped_waiting_reqs")
		e.int(int64(s.NumSkippedWaitingReqs))
	}
	if s.Sleeping {
		e.str("sleeping")
		e.bool(true)
		e.str("sleep_level")
		e.int(int64(s.SleepLevel))
	}
	if sd := s.SpecDecoding; sd != nil {
		e.str("spec_decoding_stats")
		sd.encode(e)
	}
	if s.AddsSeen != nil {
		e.str("adds_seen")
		e.int(*s.AddsSeen)
	}
}

func (s *SchedulerStats) decode(d *dec) error {
	*s = SchedulerStats{}
	return d.fieldMap("SchedulerStats", func(key string) (known bool, err error) {
		switch key {
		case "num_running_reqs":
			s.NumRunningReqs, err = d.int()
		case "num_waiting_reqs":
			s.NumWaitingReqs, err = d.int()
		case "kv_cache_usage":
			s.KVCacheUsage, err = d.float64()
		case "num_free_blocks":
			s.NumFreeBlocks, err = d.int()
		case "num_total_blocks":
			s.NumTotalBlocks, err = d.int()
		case "step_counter":
			s.StepCounter, err = d.int64()
		case "prefix_cache_queries":
			s.PrefixCacheQueries, err = d.int64()
		case "prefix_cache_hits":
			s.PrefixCacheHits, err = d.int64()
		case "num_preemptions":
			s.NumPreemptions, err = d.int64()
		case "num_sessions":
			s.NumSessions, err = d.int()
		case "num_skipped_waiting_reqs":
			s.NumSkippedWaitingReqs, err = d.int()
		case "sleeping":
			s.Sleeping, err = d.bool()
		case "sleep_level":
			s.SleepLevel, err = d.int()
		case "spec_decoding_stats":
			if isNil, e := d.takeNil(); e != nil || isNil {
				return true, e
			}
			s.SpecDecoding = new(SpecDecodingStats)
			err = s.SpecDecoding.decode(d)
		case "adds_seen":
			if isNil, e := d.takeNil(); e != nil || isNil {
				return true, e
			}
			var n int64
			n, err = d.int64()
			s.AddsSeen = &n
		default:
			return false, nil
		}
		return true, err
	})
}

var outputsFields = []string{"engine_index", "outputs", "scheduler_stats", "timestamp", "finished_requests"}

func (o *EngineCoreOutputs) encode(e *enc) {
	e.arrayLen(len(outputsFields))
	e.int(int64(o.EngineIndex))
	e.arrayLen(len(o.Outputs))
	for i := range o.Outputs {
		o.Outputs[i].encode(e)
	}
	if o.SchedulerStats == nil {
		e.null()
	} else {
		o.SchedulerStats.encode(e)
	}
	e.float(o.Timestamp)
	e.optStrs(o.FinishedRequests)
}

func (o *EngineCoreOutputs) decode(d *dec) error {
	*o = EngineCoreOutputs{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("EngineCoreOutputs: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			o.EngineIndex, err = d.int()
		case 1:
			o.Outputs, err = d.outputs()
		case 2:
			var isNil bool
			if isNil, err = d.takeNil(); !isNil && err == nil {
				o.SchedulerStats = new(SchedulerStats)
				err = o.SchedulerStats.decode(d)
			}
		case 3:
			o.Timestamp, err = d.float64()
		case 4:
			o.FinishedRequests, err = d.strs()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("EngineCoreOutputs", outputsFields, i, err)
		}
	}
	return nil
}

func (d *dec) outputs() ([]EngineCoreOutput, error) {
	n, err := d.arrayLen()
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]EngineCoreOutput, 0, d.capHint(n))
	for i := range n {
		out = append(out, EngineCoreOutput{})
		if err := out[i].decode(d); err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return out, nil
}

var utilityResultFields = []string{"call_id", "failure_message", "result"}

func (u *UtilityResult) encode(e *enc) {
	e.arrayLen(len(utilityResultFields))
	e.uint(u.CallID)
	e.optStr(u.FailureMessage)
	e.raw(u.Result)
}

func (u *UtilityResult) decode(d *dec) error {
	*u = UtilityResult{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("UtilityResult: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			u.CallID, err = d.uint64()
		case 1:
			u.FailureMessage, err = d.str()
		case 2:
			u.Result, err = d.raw()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("UtilityResult", utilityResultFields, i, err)
		}
	}
	return nil
}

// IsNil reports whether r holds no value or msgpack nil (e.g. the result
// of "get_session" for an unknown session).
func (r Raw) IsNil() bool { return len(r) == 0 || (len(r) == 1 && r[0] == nilCode) }

var engineDeadFields = []string{"reason"}

func (x *EngineDead) encode(e *enc) {
	e.arrayLen(len(engineDeadFields))
	e.str(x.Reason)
}

func (x *EngineDead) decode(d *dec) error {
	*x = EngineDead{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("EngineDead: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			x.Reason, err = d.str()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("EngineDead", engineDeadFields, i, err)
		}
	}
	return nil
}

var sessionInfoKeys = []string{
	"session_id", "engine_index", "num_requests", "num_prompt_tokens", "num_output_tokens",
	"num_cached_tokens", "num_running", "last_active", "recent_request_ids", "record_evicted",
}

func (s *SessionInfo) encode(e *enc) {
	k := sessionInfoKeys
	e.mapLen(len(k))
	e.str(k[0])
	e.str(s.SessionID)
	e.str(k[1])
	e.int(int64(s.EngineIndex))
	e.str(k[2])
	e.int(s.NumRequests)
	e.str(k[3])
	e.int(s.NumPromptTokens)
	e.str(k[4])
	e.int(s.NumOutputTokens)
	e.str(k[5])
	e.int(s.NumCachedTokens)
	e.str(k[6])
	e.int(int64(s.NumRunning))
	e.str(k[7])
	e.float(s.LastActive)
	e.str(k[8])
	e.strs(s.RecentRequestIDs)
	e.str(k[9])
	e.bool(s.RecordEvicted)
}

func (s *SessionInfo) decode(d *dec) error {
	*s = SessionInfo{}
	return d.fieldMap("SessionInfo", func(key string) (known bool, err error) {
		switch key {
		case "session_id":
			s.SessionID, err = d.str()
		case "engine_index":
			s.EngineIndex, err = d.int()
		case "num_requests":
			s.NumRequests, err = d.int64()
		case "num_prompt_tokens":
			s.NumPromptTokens, err = d.int64()
		case "num_output_tokens":
			s.NumOutputTokens, err = d.int64()
		case "num_cached_tokens":
			s.NumCachedTokens, err = d.int64()
		case "num_running":
			s.NumRunning, err = d.int()
		case "last_active":
			s.LastActive, err = d.float64()
		case "recent_request_ids":
			s.RecentRequestIDs, err = d.strs()
		case "record_evicted":
			s.RecordEvicted, err = d.bool()
		default:
			return false, nil
		}
		return true, err
	})
}
