package vllm

// HandshakeStatus is the "status" of an engine's handshake message.
const (
	StatusHello = "HELLO"
	StatusReady = "READY"
)

// HandshakeMessage is what an engine sends on the handshake socket, a map:
// {"status", "local", "headless"} and, on READY only, the optional keys
// below (written when set, in this order).
type HandshakeMessage struct {
	Status              string  // StatusHello or StatusReady
	Local               bool    // the engine runs on the frontend's node
	Headless            bool    // started with --headless
	ParallelConfigHash  *string // "parallel_config_hash" (READY, DP > 1)
	CoordStorePort      *int64  // "coord_store_port" (READY, elastic EP)
	ElasticEPMaxDPSize  *int64  // "elastic_ep_max_dp_size" (READY, elastic EP)
	NumRedundantExperts *int64  // "num_redundant_experts" (READY, elastic EP)
}

// EngineZmqAddresses is a dataclass: every field, in order.
type EngineZmqAddresses struct {
	Inputs                      []string // the frontends' input ROUTER addresses
	Outputs                     []string // the frontends' output PULL addresses
	CoordinatorInput            *string
	CoordinatorOutput           *string
	FrontendStatsPublishAddress *string
}

// EngineHandshakeMetadata is the frontend's answer to HELLO, a dataclass:
// {"addresses": EngineZmqAddresses, "parallel_config": dict}.
// ParallelConfig is empty unless DP is coordinated (then
// data_parallel_master_ip, data_parallel_master_port,
// _data_parallel_master_port_list, _coord_store_port, data_parallel_size).
type EngineHandshakeMetadata struct {
	Addresses      EngineZmqAddresses
	ParallelConfig Raw // a map; empty writes {}
}

// EngineCoreReadyResponse is the dataclass an engine sends as its first
// message on each input socket: every field, in order.
type EngineCoreReadyResponse struct {
	MaxModelLen                 int64
	NumGPUBlocks                int64
	BlockSize                   int64
	DPStatsAddress              *string
	DType                       string
	VLLMVersion                 string
	WorldSize                   int64
	DataParallelSize            int64
	TensorParallelSize          int64
	PipelineParallelSize        int64
	DecodeContextParallelSize   int64
	DataParallelRank            int64
	MaxNumSeqs                  int64
	MaxNumBatchedTokens         int64
	InstanceID                  string
	SupportsLoRA                bool
	MaxLoRAs                    int64
	MambaBlockSize              *int64
	KVCacheSizeTokens           *int64
	KVCacheMaxConcurrency       *float64
	KVEventsConfig              Raw
	WeightTransferBackend       *string
	EnableSleepMode             bool
	SupportsDraftWeightUpdates  bool
	EffectiveAttentionBlockSize *int64
	CoordStorePort              int64
	CoordinatorInputAddress     *string
	CoordinatorOutputAddress    *string
}

// EncodeHandshake encodes an engine's HELLO or READY (one frame).
func EncodeHandshake(m *HandshakeMessage) ([]byte, error) {
	e := newEnc()
	opt := []struct {
		k string
		v *int64
	}{{"coord_store_port", m.CoordStorePort}, {"elastic_ep_max_dp_size", m.ElasticEPMaxDPSize},
		{"num_redundant_experts", m.NumRedundantExperts}}
	n := 3
	if m.ParallelConfigHash != nil {
		n++
	}
	for _, o := range opt {
		if o.v != nil {
			n++
		}
	}
	e.mapLen(n)
	e.key("status")
	e.str(m.Status)
	e.key("local")
	e.bool(m.Local)
	e.key("headless")
	e.bool(m.Headless)
	if m.ParallelConfigHash != nil {
		e.key("parallel_config_hash")
		e.str(*m.ParallelConfigHash)
	}
	for _, o := range opt {
		if o.v != nil {
			e.key(o.k)
			e.int(*o.v)
		}
	}
	return one(e)
}

func one(e *enc) ([]byte, error) {
	f, err := e.frames()
	if err != nil {
		return nil, err
	}
	return f[0], nil
}

func decodeMap(b []byte, what string, set func(key string, v node) error) error {
	n, err := parse(b)
	if err == nil {
		err = n.entries(set)
	}
	if err != nil {
		return malformed(what, err)
	}
	return nil
}

// DecodeHandshake decodes an engine's HELLO or READY.
func DecodeHandshake(b []byte) (*HandshakeMessage, error) {
	m := &HandshakeMessage{}
	return ret(m, decodeMap(b, "handshake", func(key string, v node) (err error) {
		switch key {
		case "status":
			m.Status, err = v.asStr()
		case "local":
			m.Local, err = v.asBool()
		case "headless":
			m.Headless, err = v.asBool()
		case "parallel_config_hash":
			m.ParallelConfigHash, err = optOf(v, node.asStr)
		case "coord_store_port":
			m.CoordStorePort, err = optOf(v, node.asInt)
		case "elastic_ep_max_dp_size":
			m.ElasticEPMaxDPSize, err = optOf(v, node.asInt)
		case "num_redundant_experts":
			m.NumRedundantExperts, err = optOf(v, node.asInt)
		}
		return err
	}))
}

// EncodeHandshakeMetadata encodes the frontend's answer to HELLO.
func EncodeHandshakeMetadata(m *EngineHandshakeMetadata) ([]byte, error) {
	e := newEnc()
	a := &m.Addresses
	e.mapLen(2)
	e.key("addresses")
	e.mapLen(5)
	e.key("inputs")
	e.strs(a.Inputs)
	e.key("outputs")
	e.strs(a.Outputs)
	e.key("coordinator_input")
	e.optStr(a.CoordinatorInput)
	e.key("coordinator_output")
	e.optStr(a.CoordinatorOutput)
	e.key("frontend_stats_publish_address")
	e.optStr(a.FrontendStatsPublishAddress)
	e.key("parallel_config")
	e.rawOr(m.ParallelConfig, emptyMap)
	return one(e)
}

// DecodeHandshakeMetadata decodes the frontend's answer to HELLO.
func DecodeHandshakeMetadata(b []byte) (*EngineHandshakeMetadata, error) {
	m := &EngineHandshakeMetadata{}
	a := &m.Addresses
	return ret(m, decodeMap(b, "EngineHandshakeMetadata", func(key string, v node) error {
		switch key {
		case "parallel_config":
			if v.kind != kMap {
				return wantErr("map", v)
			}
			m.ParallelConfig = rawUnlessDefault(v, emptyMap)
		case "addresses":
			return v.entries(func(key string, v node) (err error) {
				switch key {
				case "inputs":
					a.Inputs, err = listOf(v, node.asStr)
				case "outputs":
					a.Outputs, err = listOf(v, node.asStr)
				case "coordinator_input":
					a.CoordinatorInput, err = optOf(v, node.asStr)
				case "coordinator_output":
					a.CoordinatorOutput, err = optOf(v, node.asStr)
				case "frontend_stats_publish_address":
					a.FrontendStatsPublishAddress, err = optOf(v, node.asStr)
				}
				return err
			})
		}
		return nil
	}))
}

type readyField struct {
	key string
	enc func(e *enc, r *EngineCoreReadyResponse)
	dec func(r *EngineCoreReadyResponse, v node) error
}

func rInt(key string, f func(*EngineCoreReadyResponse) *int64) readyField {
	return readyField{key, func(e *enc, r *EngineCoreReadyResponse) { e.int(*f(r)) },
		func(r *EngineCoreReadyResponse, v node) (err error) { *f(r), err = v.asInt(); return }}
}

func rOptInt(key string, f func(*EngineCoreReadyResponse) **int64) readyField {
	return readyField{key, func(e *enc, r *EngineCoreReadyResponse) { e.optInt(*f(r)) },
		func(r *EngineCoreReadyResponse, v node) (err error) { *f(r), err = optOf(v, node.asInt); return }}
}

func rStr(key string, f func(*EngineCoreReadyResponse) *string) readyField {
	return readyField{key, func(e *enc, r *EngineCoreReadyResponse) { e.str(*f(r)) },
		func(r *EngineCoreReadyResponse, v node) (err error) { *f(r), err = v.asStr(); return }}
}

func rOptStr(key string, f func(*EngineCoreReadyResponse) **string) readyField {
	return readyField{key, func(e *enc, r *EngineCoreReadyResponse) { e.optStr(*f(r)) },
		func(r *EngineCoreReadyResponse, v node) (err error) { *f(r), err = optOf(v, node.asStr); return }}
}

func rBool(key string, f func(*EngineCoreReadyResponse) *bool) readyField {
	return readyField{key, func(e *enc, r *EngineCoreReadyResponse) { e.bool(*f(r)) },
		func(r *EngineCoreReadyResponse, v node) (err error) { *f(r), err = v.asBool(); return }}
}

type rr = EngineCoreReadyResponse

var readyFields = []readyField{
	rInt("max_model_len", func(r *rr) *int64 { return &r.MaxModelLen }),
	rInt("num_gpu_blocks", func(r *rr) *int64 { return &r.NumGPUBlocks }),
	rInt("block_size", func(r *rr) *int64 { return &r.BlockSize }),
	rOptStr("dp_stats_address", func(r *rr) **string { return &r.DPStatsAddress }),
	rStr("dtype", func(r *rr) *string { return &r.DType }),
	rStr("vllm_version", func(r *rr) *string { return &r.VLLMVersion }),
	rInt("world_size", func(r *rr) *int64 { return &r.WorldSize }),
	rInt("data_parallel_size", func(r *rr) *int64 { return &r.DataParallelSize }),
	rInt("tensor_parallel_size", func(r *rr) *int64 { return &r.TensorParallelSize }),
	rInt("pipeline_parallel_size", func(r *rr) *int64 { return &r.PipelineParallelSize }),
	rInt("decode_context_parallel_size", func(r *rr) *int64 { return &r.DecodeContextParallelSize }),
	rInt("data_parallel_rank", func(r *rr) *int64 { return &r.DataParallelRank }),
	rInt("max_num_seqs", func(r *rr) *int64 { return &r.MaxNumSeqs }),
	rInt("max_num_batched_tokens", func(r *rr) *int64 { return &r.MaxNumBatchedTokens }),
	rStr("instance_id", func(r *rr) *string { return &r.InstanceID }),
	rBool("supports_lora", func(r *rr) *bool { return &r.SupportsLoRA }),
	rInt("max_loras", func(r *rr) *int64 { return &r.MaxLoRAs }),
	rOptInt("mamba_block_size", func(r *rr) **int64 { return &r.MambaBlockSize }),
	rOptInt("kv_cache_size_tokens", func(r *rr) **int64 { return &r.KVCacheSizeTokens }),
	{"kv_cache_max_concurrency", func(e *enc, r *rr) {
		if r.KVCacheMaxConcurrency == nil {
			e.null()
		} else {
			e.float(*r.KVCacheMaxConcurrency)
		}
	}, func(r *rr, v node) (err error) { r.KVCacheMaxConcurrency, err = optOf(v, node.asFloat); return }},
	{"kv_events_config", func(e *enc, r *rr) { e.raw(r.KVEventsConfig) },
		func(r *rr, v node) error { r.KVEventsConfig = v.asRaw(); return nil }},
	rOptStr("weight_transfer_backend", func(r *rr) **string { return &r.WeightTransferBackend }),
	rBool("enable_sleep_mode", func(r *rr) *bool { return &r.EnableSleepMode }),
	rBool("supports_draft_weight_updates", func(r *rr) *bool { return &r.SupportsDraftWeightUpdates }),
	rOptInt("effective_attention_block_size", func(r *rr) **int64 { return &r.EffectiveAttentionBlockSize }),
	rInt("coord_store_port", func(r *rr) *int64 { return &r.CoordStorePort }),
	rOptStr("coordinator_input_address", func(r *rr) **string { return &r.CoordinatorInputAddress }),
	rOptStr("coordinator_output_address", func(r *rr) **string { return &r.CoordinatorOutputAddress }),
}

// EncodeReadyResponse encodes an EngineCoreReadyResponse (one frame).
func EncodeReadyResponse(r *EngineCoreReadyResponse) ([]byte, error) {
	e := newEnc()
	e.mapLen(len(readyFields))
	for _, f := range readyFields {
		e.key(f.key)
		f.enc(e, r)
	}
	return one(e)
}

// DecodeReadyResponse decodes an EngineCoreReadyResponse; unknown keys
// are ignored, missing ones keep Go's zero value.
func DecodeReadyResponse(b []byte) (*EngineCoreReadyResponse, error) {
	r := &EngineCoreReadyResponse{}
	return ret(r, decodeMap(b, "EngineCoreReadyResponse", func(key string, v node) error {
		for _, f := range readyFields {
			if f.key == key {
				return f.dec(r, v)
			}
		}
		return nil
	}))
}

func ret[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}
