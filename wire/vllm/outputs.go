package vllm

import "fmt"

// EngineCoreOutputs is one message on an output socket: array_like, all 9
// elements always written.
type EngineCoreOutputs struct {
	EngineIndex      int64              // 0
	Outputs          []EngineCoreOutput // 1 ([] when none)
	SchedulerStats   *SchedulerStats    // 2
	Timestamp        float64            // 3 monotonic seconds (time.monotonic())
	UtilityOutput    *UtilityOutput     // 4
	FinishedRequests []string           // 5 a set (nil = None); one string's order is Python's
	WaveComplete     *int64             // 6 DP: this wave finished, the engines paused
	StartWave        *int64             // 7 DP: a request for an old wave arrived
	WeightVersion    *string            // 8
}

var outputsFields = []string{"engine_index", "outputs", "scheduler_stats", "timestamp",
	"utility_output", "finished_requests", "wave_complete", "start_wave", "weight_version"}

func (o *EngineCoreOutputs) encode(e *enc) {
	e.arrayLen(len(outputsFields))
	e.int(o.EngineIndex)
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
	if u := o.UtilityOutput; u == nil {
		e.null()
	} else {
		e.arrayLen(3)
		e.callID(u.CallID)
		e.optStr(u.FailureMessage)
		if u.Result == nil {
			e.null()
		} else {
			e.arrayLen(2)
			e.raw(u.Result.TypeInfo)
			e.raw(u.Result.Value)
		}
	}
	e.optStrs(o.FinishedRequests)
	e.optInt(o.WaveComplete)
	e.optInt(o.StartWave)
	e.optStr(o.WeightVersion)
}

func outputsFrom(n node, aux [][]byte) (*EngineCoreOutputs, error) {
	o := &EngineCoreOutputs{}
	err := n.fields(outputsFields, func(i int, v node) (err error) {
		switch i {
		case 0:
			o.EngineIndex, err = v.asInt()
		case 1:
			var outs []EngineCoreOutput
			outs, err = listOf(v, func(v node) (EngineCoreOutput, error) { return outputFrom(v, aux) })
			if len(outs) > 0 {
				o.Outputs = outs
			}
		case 2:
			o.SchedulerStats, err = optOf(v, schedulerStatsFrom)
		case 3:
			o.Timestamp, err = v.asFloat()
		case 4:
			o.UtilityOutput, err = optOf(v, utilityOutputFrom)
		case 5:
			o.FinishedRequests, err = listOf(v, node.asStr)
		case 6:
			o.WaveComplete, err = optOf(v, node.asInt)
		case 7:
			o.StartWave, err = optOf(v, node.asInt)
		case 8:
			o.WeightVersion, err = optOf(v, node.asStr)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("EngineCoreOutputs.%w", err)
	}
	return o, nil
}

// UtilityOutput answers a UtilityRequest: array_like [call_id,
// failure_message, result]. Result is nil on failure.
type UtilityOutput struct {
	CallID         CallID
	FailureMessage *string
	Result         *UtilityResult
}

// UtilityResult is vLLM's UtilityResult as its enc_hook writes it: the pair
// (type_info, value). TypeInfo is nil unless the engine runs with
// VLLM_ALLOW_INSECURE_SERIALIZATION.
type UtilityResult struct {
	TypeInfo Raw
	Value    Raw
}

func utilityOutputFrom(n node) (UtilityOutput, error) {
	var u UtilityOutput
	err := n.fields([]string{"call_id", "failure_message", "result"}, func(i int, v node) (err error) {
		switch i {
		case 0:
			u.CallID, err = callIDFrom(v)
		case 1:
			u.FailureMessage, err = optOf(v, node.asStr)
		case 2:
			u.Result, err = optOf(v, func(v node) (r UtilityResult, err error) {
				kids, err := v.asArr()
				if err == nil && len(kids) != 2 {
					err = fmt.Errorf("result of %d elements, want 2", len(kids))
				}
				if err != nil {
					return r, err
				}
				return UtilityResult{kids[0].asRaw(), kids[1].asRaw()}, nil
			})
		}
		return err
	})
	return u, err
}

// SchedulerStats is a dataclass: a map of all 18 fields in declaration
// order. The fields Tandem has no use for are Raw (nil writes the default).
type SchedulerStats struct {
	NumRunningReqs            int64            // "num_running_reqs"
	NumWaitingReqs            int64            // "num_waiting_reqs" (not deferred)
	NumSkippedWaitingReqs     int64            // "num_skipped_waiting_reqs"
	NumKVFetchReqsByStage     Raw              // "num_kv_fetch_reqs_by_stage", {}
	StepCounter               int64            // "step_counter"
	CurrentWave               int64            // "current_wave"
	KVCacheUsage              float64          // "kv_cache_usage", 0..1
	IterationDetails          Raw              // "iteration_details"
	PrefixCacheStats          PrefixCacheStats // "prefix_cache_stats"
	ConnectorPrefixCacheStats Raw              // "connector_prefix_cache_stats"
	KVCacheEvictionEvents     Raw              // "kv_cache_eviction_events", []
	SpecDecodingStats         Raw              // "spec_decoding_stats"
	KVConnectorStats          Raw              // "kv_connector_stats"
	ECConnectorStats          Raw              // "ec_connector_stats"
	WaitingLoRAAdapters       Raw              // "waiting_lora_adapters", {}
	RunningLoRAAdapters       Raw              // "running_lora_adapters", {}
	CUDAGraphStats            Raw              // "cudagraph_stats"
	PerfStats                 Raw              // "perf_stats"
}

// PrefixCacheStats is the dataclass of prefix_cache_stats: this step's
// counts (tokens for queries and hits), not cumulative ones.
type PrefixCacheStats struct {
	Reset             bool
	Requests          int64
	Queries           int64
	Hits              int64
	PreemptedRequests int64
	PreemptedQueries  int64
	PreemptedHits     int64
	HitsBySource      Raw // {} by default
}

var (
	emptyMap   = []byte{0x80}
	emptyArray = []byte{0x90}
)

func (p *PrefixCacheStats) encode(e *enc) {
	e.mapLen(8)
	e.key("reset")
	e.bool(p.Reset)
	for i, v := range []int64{p.Requests, p.Queries, p.Hits, p.PreemptedRequests, p.PreemptedQueries, p.PreemptedHits} {
		e.key(prefixKeys[i])
		e.int(v)
	}
	e.key("hits_by_source")
	e.rawOr(p.HitsBySource, emptyMap)
}

var prefixKeys = []string{"requests", "queries", "hits", "preempted_requests", "preempted_queries", "preempted_hits"}

func prefixCacheStatsFrom(n node) (PrefixCacheStats, error) {
	var p PrefixCacheStats
	ptrs := []*int64{&p.Requests, &p.Queries, &p.Hits, &p.PreemptedRequests, &p.PreemptedQueries, &p.PreemptedHits}
	err := n.entries(func(key string, v node) (err error) {
		switch key {
		case "reset":
			p.Reset, err = v.asBool()
		case "hits_by_source":
			p.HitsBySource = rawUnlessDefault(v, emptyMap)
		default:
			for i, k := range prefixKeys {
				if k == key {
					*ptrs[i], err = v.asInt()
				}
			}
		}
		return err
	})
	return p, err
}

// rawUnlessDefault keeps v unless it is nil or the default's bytes, so
// decoding and encoding agree on the default.
func rawUnlessDefault(v node, def []byte) Raw {
	if string(v.span) == string(def) {
		return nil
	}
	return v.asRaw()
}

func (s *SchedulerStats) encode(e *enc) {
	e.mapLen(18)
	e.key("num_running_reqs")
	e.int(s.NumRunningReqs)
	e.key("num_waiting_reqs")
	e.int(s.NumWaitingReqs)
	e.key("num_skipped_waiting_reqs")
	e.int(s.NumSkippedWaitingReqs)
	e.key("num_kv_fetch_reqs_by_stage")
	e.rawOr(s.NumKVFetchReqsByStage, emptyMap)
	e.key("step_counter")
	e.int(s.StepCounter)
	e.key("current_wave")
	e.int(s.CurrentWave)
	e.key("kv_cache_usage")
	e.float(s.KVCacheUsage)
	e.key("iteration_details")
	e.raw(s.IterationDetails)
	e.key("prefix_cache_stats")
	s.PrefixCacheStats.encode(e)
	e.key("connector_prefix_cache_stats")
	e.raw(s.ConnectorPrefixCacheStats)
	e.key("kv_cache_eviction_events")
	e.rawOr(s.KVCacheEvictionEvents, emptyArray)
	for _, f := range []struct {
		k string
		v Raw
		d []byte
	}{{"spec_decoding_stats", s.SpecDecodingStats, nil}, {"kv_connector_stats", s.KVConnectorStats, nil},
		{"ec_connector_stats", s.ECConnectorStats, nil}, {"waiting_lora_adapters", s.WaitingLoRAAdapters, emptyMap},
		{"running_lora_adapters", s.RunningLoRAAdapters, emptyMap}, {"cudagraph_stats", s.CUDAGraphStats, nil},
		{"perf_stats", s.PerfStats, nil}} {
		e.key(f.k)
		e.rawOr(f.v, f.d)
	}
}

func schedulerStatsFrom(n node) (SchedulerStats, error) {
	var s SchedulerStats
	err := n.entries(func(key string, v node) (err error) {
		switch key {
		case "num_running_reqs":
			s.NumRunningReqs, err = v.asInt()
		case "num_waiting_reqs":
			s.NumWaitingReqs, err = v.asInt()
		case "num_skipped_waiting_reqs":
			s.NumSkippedWaitingReqs, err = v.asInt()
		case "num_kv_fetch_reqs_by_stage":
			s.NumKVFetchReqsByStage = rawUnlessDefault(v, emptyMap)
		case "step_counter":
			s.StepCounter, err = v.asInt()
		case "current_wave":
			s.CurrentWave, err = v.asInt()
		case "kv_cache_usage":
			s.KVCacheUsage, err = v.asFloat()
		case "iteration_details":
			s.IterationDetails = v.asRaw()
		case "prefix_cache_stats":
			if !v.isNil() {
				s.PrefixCacheStats, err = prefixCacheStatsFrom(v)
			}
		case "connector_prefix_cache_stats":
			s.ConnectorPrefixCacheStats = v.asRaw()
		case "kv_cache_eviction_events":
			s.KVCacheEvictionEvents = rawUnlessDefault(v, emptyArray)
		case "spec_decoding_stats":
			s.SpecDecodingStats = v.asRaw()
		case "kv_connector_stats":
			s.KVConnectorStats = v.asRaw()
		case "ec_connector_stats":
			s.ECConnectorStats = v.asRaw()
		case "waiting_lora_adapters":
			s.WaitingLoRAAdapters = rawUnlessDefault(v, emptyMap)
		case "running_lora_adapters":
			s.RunningLoRAAdapters = rawUnlessDefault(v, emptyMap)
		case "cudagraph_stats":
			s.CUDAGraphStats = v.asRaw()
		case "perf_stats":
			s.PerfStats = v.asRaw()
		}
		return err
	})
	return s, err
}
