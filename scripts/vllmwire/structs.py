"""vLLM 0.33.0's engine-core wire structs, written from its source.

Read from vllm-0.33.0 (PyPI sdist): vllm/v1/engine/__init__.py,
vllm/sampling_params.py, vllm/v1/serial_utils.py, vllm/v1/outputs.py,
vllm/v1/metrics/stats.py, vllm/v1/engine/utils.py, vllm/outputs.py. vLLM is
not imported: these classes give msgspec the same field names, order, defaults
and struct options, so they encode byte for byte as vLLM does and decode what
vLLM sends. Class names are vLLM's.

What differs from vLLM, on purpose:

- numpy arrays and torch tensors are NDArray and Tensor below: (dtype, shape,
  data bytes), encoded by MsgpackEncoder as vLLM's enc_hook does (inline
  msgpack ext 3 below the 256-byte threshold, else an index into the aux
  frames). No numpy or torch is needed.
- fields whose types are vLLM-internal and that Tandem does not read
  (mm_features, pooling_params, kv_hints, routed_experts, ...) are typed Any:
  their values decode to builtins and re-encode to the same bytes.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Any, NamedTuple

import msgspec
from msgspec import msgpack

CUSTOM_TYPE_RAW_VIEW = 3  # serial_utils.py: msgpack ext code of inline array bytes
ZERO_COPY_THRESHOLD = 256  # envs.VLLM_MSGPACK_ZERO_COPY_THRESHOLD default
ENGINE_CORE_DEAD = b"ENGINE_CORE_DEAD"  # core.py EngineCoreProc.ENGINE_CORE_DEAD


class NDArray:
    """A numpy array as vLLM serializes it: (dtype.str, shape, data)."""

    __slots__ = ("dtype", "shape", "data")

    def __init__(self, dtype: str, shape: Sequence[int], data: bytes):
        self.dtype, self.shape, self.data = dtype, tuple(shape), bytes(data)

    def __eq__(self, other):
        return (type(self), self.dtype, self.shape, self.data) == (
            type(other), other.dtype, other.shape, other.data)

    def __repr__(self):
        return f"{type(self).__name__}({self.dtype!r}, {self.shape}, {self.data.hex()})"


class Tensor(NDArray):
    """A torch tensor as vLLM serializes it: dtype is torch's name ("int64")."""

    __slots__ = ()


class FinishReason(enum.IntEnum):
    STOP = 0
    LENGTH = 1
    ABORT = 2
    ERROR = 3
    REPETITION = 4


class EngineCoreEventType(enum.IntEnum):
    QUEUED = 1
    SCHEDULED = 2
    PREEMPTED = 3


class EngineCoreRequestType(enum.Enum):
    ADD = b"\x00"
    ABORT = b"\x01"
    START_DP_WAVE = b"\x02"
    UTILITY = b"\x03"
    EXECUTOR_FAILED = b"\x04"  # internal to EngineCoreProc
    WAKEUP = b"\x05"  # internal to EngineCoreProc


class RequestOutputKind(enum.Enum):
    CUMULATIVE = 0
    DELTA = 1
    FINAL_ONLY = 2


@dataclasses.dataclass
class StructuredOutputsParams:
    json: str | dict | None = None
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None
    json_object: bool | None = None
    disable_any_whitespace: bool = False
    disable_additional_properties: bool = False
    whitespace_pattern: str | None = None
    structural_tag: str | None = None
    # vLLM declares these field(init=False); they are encoded only once the
    # frontend has set them (msgspec encodes a dataclass's __dict__).
    _backend: str | None = dataclasses.field(default=None, init=False)
    _backend_was_auto: bool = dataclasses.field(default=False, init=False)


@dataclasses.dataclass
class RepetitionDetectionParams:
    max_pattern_size: int = 0
    min_pattern_size: int = 0
    min_count: int = 0


class SamplingParams(msgspec.Struct, omit_defaults=True, dict=True):
    n: int = 1
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    temperature: float = 1.0
    watermarking: bool | None = None
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool = False
    max_tokens: int | None = 16
    min_tokens: int = 0
    logprobs: int | None = None
    prompt_logprobs: int | None = None
    prompt_logprob_token_ids: NDArray | None = None
    prompt_logprob_start: int | None = None
    logprob_token_ids: list[int] | None = None
    flat_logprobs: bool = False
    detokenize: bool = True
    skip_special_tokens: bool = True
    spaces_between_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    output_kind: RequestOutputKind = RequestOutputKind.CUMULATIVE
    stream_interval: int | None = None
    skip_clone: bool = False
    output_text_buffer_length: int = 0
    _eos_token_id: int | None = None
    _all_stop_token_ids: set[int] = msgspec.field(default_factory=set)
    _watermarking_skipped: bool = False
    structured_outputs: StructuredOutputsParams | None = None
    logit_bias: dict[int, float] | None = None
    allowed_token_ids: list[int] | None = None
    extra_args: dict[str, Any] | None = None
    bad_words: list[str] | None = None
    _bad_words_token_ids: list[list[int]] | None = None
    skip_reading_prefix_cache: bool | None = None
    thinking_token_budget: int | None = None
    repetition_detection: RepetitionDetectionParams | None = None
    routed_experts_prompt_start: int = 0
    trace_decode_token_ids: list[int] | None = None


class EngineCoreRequest(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    request_id: str
    prompt_token_ids: list[int] | None
    mm_features: Any  # list[MultiModalFeatureSpec] | None
    sampling_params: SamplingParams | None
    pooling_params: Any  # PoolingParams | None
    arrival_time: float
    lora_request: Any  # LoRARequest (array_like struct) | None
    cache_salt: str | None
    data_parallel_rank: int | None
    prompt_embeds: Tensor | None = None
    prompt_is_token_ids: list[bool] | None = None
    client_index: int = 0
    current_wave: int = 0
    priority: int = 0
    trace_headers: dict[str, str] | None = None
    resumable: bool = False
    external_req_id: str | None = None
    reasoning_ended: bool | None = None
    reasoning_parser_kwargs: dict[str, Any] | None = None
    abort_immediately: bool = False
    session_id: str | None = None
    kv_hints: Any = None  # KvHintsEnvelope | None


class EngineCoreEvent(msgspec.Struct):
    type: EngineCoreEventType
    timestamp: float


class LogprobsLists(NamedTuple):
    logprob_token_ids: NDArray  # [P, k+1] int
    logprobs: NDArray  # [P, k+1] float32
    sampled_token_ranks: NDArray  # [P] int
    cu_num_generated_tokens: list[int] | None = None


class LogprobsTensors(NamedTuple):
    logprob_token_ids: Tensor
    logprobs: Tensor
    selected_token_ranks: Tensor
    cu_num_generated_tokens: list[int] | None = None
    cu_num_generated_tokens_tensor: Tensor | None = None


@dataclasses.dataclass
class PrefillStats:
    num_prompt_tokens: int = 0
    num_computed_tokens: int = 0
    num_cached_tokens: int = 0
    num_local_cached_tokens: int = 0
    num_external_cached_tokens: int = 0
    num_cache_creation_tokens: int = 0


@dataclasses.dataclass
class RequestError:
    code: str
    message: str
    retryable: bool = False


class EngineCoreOutput(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    request_id: str
    new_token_ids: list[int]
    new_logprobs: LogprobsLists | None = None
    new_prompt_logprobs_tensors: LogprobsTensors | None = None
    pooling_output: Any = None  # torch.Tensor | None
    finish_reason: FinishReason | None = None
    stop_reason: int | str | None = None
    events: list[EngineCoreEvent] | None = None
    kv_transfer_params: dict[str, Any] | None = None
    ec_transfer_params: dict[str, Any] | None = None
    trace_headers: dict[str, str] | None = None
    prefill_stats: PrefillStats | None = None
    routed_experts: Any = None  # np.ndarray | None
    num_nans_in_logits: int = 0
    mm_cache_miss_hashes: list[str] | None = None
    new_sampling_mask: Any = None  # SamplingMaskLists | None
    spec_decode_metrics: Any = None  # RequestSpecDecodeMetrics | None
    prompt_token_id_logprobs: Any = None  # torch.Tensor | None
    error: RequestError | None = None


class UtilityOutput(msgspec.Struct, array_like=True, gc=False):
    call_id: int
    failure_message: str | None = None
    # UtilityResult: vLLM's enc_hook writes it as (type_info, result),
    # type_info None unless VLLM_ALLOW_INSECURE_SERIALIZATION.
    result: tuple[Any, Any] | None = None


@dataclasses.dataclass
class PrefixCacheStats:
    reset: bool = False
    requests: int = 0
    queries: int = 0
    hits: int = 0
    preempted_requests: int = 0
    preempted_queries: int = 0
    preempted_hits: int = 0
    hits_by_source: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class SpecDecodingStats:
    # vllm/v1/spec_decode/metrics.py: one update's drafts.
    num_spec_tokens: int
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_accepted_tokens_per_pos: list[int] = dataclasses.field(default_factory=list)
    num_draft_tokens_per_pos: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class SchedulerStats:
    num_running_reqs: int = 0
    num_waiting_reqs: int = 0
    num_skipped_waiting_reqs: int = 0
    num_kv_fetch_reqs_by_stage: dict[str, int] = dataclasses.field(default_factory=dict)
    step_counter: int = 0
    current_wave: int = 0
    kv_cache_usage: float = 0.0
    iteration_details: Any = None  # SchedulerIterationDetails | None
    prefix_cache_stats: PrefixCacheStats = dataclasses.field(default_factory=PrefixCacheStats)
    connector_prefix_cache_stats: PrefixCacheStats | None = None
    kv_cache_eviction_events: list[Any] = dataclasses.field(default_factory=list)
    spec_decoding_stats: SpecDecodingStats | None = None
    kv_connector_stats: dict[str, Any] | None = None
    ec_connector_stats: dict[str, Any] | None = None
    waiting_lora_adapters: dict[str, int] = dataclasses.field(default_factory=dict)
    running_lora_adapters: dict[str, int] = dataclasses.field(default_factory=dict)
    cudagraph_stats: Any = None  # CUDAGraphStat | None
    perf_stats: Any = None  # PerfStats | None


class EngineCoreOutputs(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    engine_index: int = 0
    outputs: list[EngineCoreOutput] = []
    scheduler_stats: SchedulerStats | None = None
    timestamp: float = 0.0  # vLLM: time.monotonic() when left 0.0
    utility_output: UtilityOutput | None = None
    finished_requests: set[str] | None = None
    wave_complete: int | None = None
    start_wave: int | None = None
    weight_version: str | None = None


@dataclasses.dataclass
class EngineZmqAddresses:
    inputs: list[str]
    outputs: list[str]
    coordinator_input: str | None = None
    coordinator_output: str | None = None
    frontend_stats_publish_address: str | None = None


@dataclasses.dataclass
class EngineHandshakeMetadata:
    addresses: EngineZmqAddresses
    parallel_config: dict[str, int | str | list[int]]


@dataclasses.dataclass
class EngineCoreReadyResponse:
    max_model_len: int
    num_gpu_blocks: int
    block_size: int
    dp_stats_address: str | None
    dtype: str
    vllm_version: str
    world_size: int
    data_parallel_size: int
    tensor_parallel_size: int
    pipeline_parallel_size: int
    decode_context_parallel_size: int
    data_parallel_rank: int
    max_num_seqs: int
    max_num_batched_tokens: int
    instance_id: str
    supports_lora: bool
    max_loras: int
    mamba_block_size: int | None = None
    kv_cache_size_tokens: int | None = None
    kv_cache_max_concurrency: float | None = None
    kv_events_config: dict[str, Any] | None = None  # KVEventsConfig (pydantic dataclass)
    weight_transfer_backend: str | None = None
    enable_sleep_mode: bool = False
    supports_draft_weight_updates: bool = False
    effective_attention_block_size: int | None = None
    coord_store_port: int = 0
    coordinator_input_address: str | None = None
    coordinator_output_address: str | None = None


class MsgpackEncoder:
    """vLLM's serial_utils.MsgpackEncoder for NDArray/Tensor: encode returns
    [payload, aux...] frames."""

    def __init__(self, size_threshold: int = ZERO_COPY_THRESHOLD):
        self.size_threshold = size_threshold
        self.encoder = msgpack.Encoder(enc_hook=self.enc_hook)
        self.aux: list[bytes] | None = None

    def encode(self, obj: Any) -> list[bytes]:
        self.aux = bufs = [b""]
        try:
            bufs[0] = self.encoder.encode(obj)
            return bufs
        finally:
            self.aux = None

    def enc_hook(self, obj: Any) -> Any:
        if isinstance(obj, NDArray):
            assert self.aux is not None
            nbytes = len(obj.data)
            # ndarray: scalars (shape ()) always inline; tensors only by size.
            inline = nbytes < self.size_threshold or (
                not obj.shape and not isinstance(obj, Tensor))
            if inline:
                data: Any = msgpack.Ext(CUSTOM_TYPE_RAW_VIEW, obj.data)
            else:
                data = len(self.aux)
                self.aux.append(obj.data)
            return obj.dtype, obj.shape, data
        raise TypeError(f"Object of type {type(obj)} is not serializable")


class MsgpackDecoder:
    """vLLM's serial_utils.MsgpackDecoder for NDArray/Tensor: decode takes
    [payload, aux...] frames."""

    def __init__(self, t: Any | None = None):
        args = () if t is None else (t,)
        self.decoder = msgpack.Decoder(*args, ext_hook=self.ext_hook, dec_hook=self.dec_hook)
        self.aux: Sequence[bytes] = ()

    def decode(self, frames: Sequence[bytes]) -> Any:
        self.aux = frames
        try:
            return self.decoder.decode(frames[0])
        finally:
            self.aux = ()

    def dec_hook(self, t: type, obj: Any) -> Any:
        if isinstance(t, type) and issubclass(t, NDArray):
            dtype, shape, data = obj
            buf = self.aux[data] if isinstance(data, int) else data
            return t(dtype, shape, bytes(buf))
        return obj

    def ext_hook(self, code: int, data: memoryview) -> Any:
        if code == CUSTOM_TYPE_RAW_VIEW:
            return bytes(data)
        raise NotImplementedError(f"Extension type code {code} is not supported")
