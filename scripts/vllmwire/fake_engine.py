#!/usr/bin/env python3
"""Fake `vllm serve --headless` engine core speaking vLLM 0.33.0's wire protocol.

It plays one non-MoE data-parallel rank: vLLM's EngineCoreProc (run_engine_core
picks EngineCoreProc, not DPEngineCoreProc, for non-MoE models). Facts from the
vllm-0.33.0 sdist, read, not copied:

- core.py EngineCoreProc.__init__: identity = engine_index (the DP rank) as 2
  little-endian bytes.
- core.py _perform_handshake / startup_handshake: DEALER (identity, linger
  5000) *connects* to the frontend's handshake ROUTER; sends msgpack map
  {"status": "HELLO", "local": bool, "headless": bool}; waits (poll, 5 min
  there, --handshake-timeout here) for one frame of EngineHandshakeMetadata
  {addresses: EngineZmqAddresses, parallel_config}; after the IO threads are
  up sends {"status": "READY", "local", "headless"} on the same DEALER.
  parallel_config_hash is sent only when data_parallel_size > 1, which a
  non-MoE rank never has (ParallelConfig.reconfigure_for_independent_dp_rank).
- core.py process_input_sockets: one DEALER (same identity) connected per
  addresses.inputs; first message on each is the msgpack
  EngineCoreReadyResponse (_make_ready_response, data_parallel_rank=rank);
  if coordinator_input is set: XSUB connects, sends b"\\x01", waits for
  b"READY". Input frames: [type byte][msgpack payload][aux...]; ADD decodes
  as EngineCoreRequest, UTILITY as (client_index, call_id, method, args),
  ABORT as list[str].
- core.py process_output_sockets: one PUSH (linger 4000) connected per
  addresses.outputs; outputs go to sockets[client_index] as
  [msgpack EngineCoreOutputs][aux...], no type byte; engine_index is set to
  the rank. ENGINE_CORE_DEAD: the single frame b"ENGINE_CORE_DEAD" is sent on
  every output socket, then the process dies (run_engine_core: "fatal
  error" -> _send_engine_dead -> re-raise, exit code 1).
- core.py _handle_client_request / _invoke_utility_method: utility result is
  EngineCoreOutputs(utility_output=UtilityOutput(call_id, result=(None, r)))
  (serial_utils.py UtilityResult enc_hook); a failure is
  failure_message="Call to {method} method failed: {exc}" (getattr failure
  for unknown names). ADD while paused -> _send_finish_outputs_to_client:
  finish_reason ERROR, error=RequestError("engine_paused", ...).
- core.py _maybe_publish_request_counts: with a coordinator (internal LB),
  EngineCoreOutputs(scheduler_stats=SchedulerStats(running, waiting,
  kv_cache_usage=...)) goes to the coordinator PUSH when counts change.
  include_finished_set (== has coordinator and not external LB) makes the
  scheduler put finished and aborted ids in EngineCoreOutputs
  .finished_requests (sched/scheduler.py update_from_output).
- core.py EngineCore.abort_requests: finish_requests(FINISHED_ABORTED); no
  output for the aborted request, only finished_requests (if enabled).
- sched/utils.py check_stop: eos (the frontend's _eos_token_id, None with
  ignore_eos) -> STOP; stop_token_ids -> STOP, stop_reason=token; max_tokens
  or max_model_len -> LENGTH. min_tokens is enforced by the sampler masking
  _all_stop_token_ids (emulated: a masked token becomes the next non-stop id).
- sample/sampler.py gather_logprobs + outputs.py LogprobsLists: per output a
  LogprobsLists of numpy arrays: token ids int32 [n, k+1] (sampled token
  first, then top-k), logprobs float32 [n, k+1], ranks int64 [n];
  prompt logprobs are LogprobsTensors of torch tensors (int32/float32/int64)
  [prompt_len-1, k+1] in the first output.
- prefix cache: the hit is capped at prompt_len - 1 and counted in whole
  blocks (block size 16), reported in EngineCoreOutput.prefill_stats
  (num_cached_tokens, num_local_cached_tokens) on the first output;
  skip_reading_prefix_cache disables the read.
- SIGTERM (run_engine_core signal_handler, _handle_shutdown with
  shutdown_timeout 0): in-flight requests get FinishReason.ABORT outputs
  (_send_abort_outputs), then a clean exit 0.
- DP waves (START_DP_WAVE, wave_complete, start_wave) exist only in
  DPEngineCoreProc (MoE); this non-MoE rank logs START_DP_WAVE and ignores
  it, as EngineCoreProc does ("Unrecognized input request type").

Fake generation: output token k of a request is (sum(prompt) + k) % vocab.

CLI: see --help. --log FILE appends one JSON line per received message.
Exit codes: 0 clean (SIGTERM/SIGINT), 1 fatal (--die-after-requests), 2
handshake failure.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import struct
import sys
import time

import msgspec
import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from structs import (  # noqa: E402
    ENGINE_CORE_DEAD,
    EngineCoreEvent,
    EngineCoreEventType,
    EngineCoreOutput,
    EngineCoreOutputs,
    EngineCoreReadyResponse,
    EngineCoreRequest,
    EngineCoreRequestType,
    EngineHandshakeMetadata,
    FinishReason,
    LogprobsLists,
    LogprobsTensors,
    MsgpackDecoder,
    MsgpackEncoder,
    NDArray,
    PrefillStats,
    PrefixCacheStats,
    RequestError,
    SchedulerStats,
    Tensor,
    UtilityOutput,
)

BLOCK_SIZE = 16


def log_prob(rank: int) -> float:
    """Fake logprob of the candidate at 1-based rank (decreasing)."""
    return -0.25 * rank


def f32(values):
    return struct.pack(f"<{len(values)}f", *values)


def i32(values):
    return struct.pack(f"<{len(values)}i", *values)


def i64(values):
    return struct.pack(f"<{len(values)}q", *values)


class Req:
    __slots__ = ("req", "sp", "prompt", "out", "first", "cached", "client_index",
                 "queued_ts")

    def __init__(self, req: EngineCoreRequest, cached: int):
        self.req = req
        self.sp = req.sampling_params
        self.prompt = list(req.prompt_token_ids or [])
        self.out: list[int] = []
        self.first = True
        self.cached = cached
        self.client_index = req.client_index
        self.queued_ts = time.monotonic()


class FakeEngine:
    def __init__(self, args):
        self.a = args
        self.rank = args.rank
        self.identity = self.rank.to_bytes(2, "little")
        self.local = args.local
        self.headless = not args.local
        self.ctx = zmq.Context()
        self.log = open(args.log, "a", buffering=1) if args.log else None
        self.running: dict[str, Req] = {}
        self.finished_pending: dict[int, set[str]] = {}
        self.seen_prompts: list[list[int]] = []
        self.num_adds = 0
        self.fatal = False
        self.stop_requested = False
        self.sleeping = False
        self.paused = False
        self.step_counter = 0
        self.weight_version = "0"
        self.last_counts = (0, 0)
        self.pc_stats = PrefixCacheStats()
        self.encoder = MsgpackEncoder()
        self.add_decoder = MsgpackDecoder(EngineCoreRequest)
        self.generic_decoder = MsgpackDecoder()
        self.raw = msgspec.msgpack.Decoder(ext_hook=lambda code, data: bytes(data))

    # ---- handshake -------------------------------------------------------
    def handshake(self):
        hs = self.ctx.socket(zmq.DEALER)
        hs.setsockopt(zmq.IDENTITY, self.identity)
        hs.setsockopt(zmq.LINGER, 5000)
        hs.connect(self.a.handshake)
        hs.send(msgspec.msgpack.encode(
            {"status": "HELLO", "local": self.local, "headless": self.headless}))
        if not hs.poll(timeout=int(self.a.handshake_timeout * 1000)):
            raise RuntimeError(
                f"Did not receive response from front-end process within "
                f"{self.a.handshake_timeout}s")
        meta = msgspec.msgpack.decode(hs.recv(), type=EngineHandshakeMetadata)
        self.addresses = addrs = meta.addresses
        self.record({"type": "HANDSHAKE_METADATA",
                     "inputs": addrs.inputs, "outputs": addrs.outputs,
                     "coordinator_input": addrs.coordinator_input,
                     "coordinator_output": addrs.coordinator_output,
                     "parallel_config": meta.parallel_config})

        # process_output_sockets: a PUSH per output address.
        self.outputs = []
        for path in addrs.outputs:
            s = self.ctx.socket(zmq.PUSH)
            s.setsockopt(zmq.SNDHWM, 0)
            s.setsockopt(zmq.LINGER, 4000)
            s.connect(path)
            self.outputs.append(s)
        self.coord_out = None
        if addrs.coordinator_output is not None:
            s = self.ctx.socket(zmq.PUSH)
            s.setsockopt(zmq.SNDHWM, 0)
            s.setsockopt(zmq.LINGER, 4000)
            s.connect(addrs.coordinator_output)
            self.coord_out = s

        # process_input_sockets: a DEALER per input address, ready response.
        self.inputs = []
        for path in addrs.inputs:
            s = self.ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.RCVHWM, 0)
            s.setsockopt(zmq.SNDHWM, 0)
            s.setsockopt(zmq.IDENTITY, self.identity)
            s.connect(path)
            self.inputs.append(s)
        self.coord_in = None
        if addrs.coordinator_input is not None:
            s = self.ctx.socket(zmq.XSUB)
            s.setsockopt(zmq.IDENTITY, self.identity)
            s.connect(addrs.coordinator_input)
            s.send(b"\x01")
            self.coord_in = s
        ready = msgspec.msgpack.encode(self.ready_response())
        for s in self.inputs:
            s.send(ready)
        if self.coord_in is not None:
            if not self.coord_in.poll(timeout=int(self.a.handshake_timeout * 1000)):
                raise RuntimeError("no READY from DP Coordinator")
            msg = self.coord_in.recv()
            if msg != b"READY":
                raise RuntimeError(f"coordinator sent {msg!r}, want b'READY'")

        hs.send(msgspec.msgpack.encode(
            {"status": "READY", "local": self.local, "headless": self.headless}))
        # _perform_handshake closes the handshake socket (linger 5000).
        hs.close()

    def ready_response(self) -> EngineCoreReadyResponse:
        a = self.addresses
        return EngineCoreReadyResponse(
            max_model_len=self.a.max_model_len,
            num_gpu_blocks=self.a.num_gpu_blocks,
            block_size=BLOCK_SIZE,
            dp_stats_address=a.frontend_stats_publish_address,
            dtype="bfloat16",
            vllm_version="0.33.0",
            world_size=1,
            data_parallel_size=1,
            tensor_parallel_size=1,
            pipeline_parallel_size=1,
            decode_context_parallel_size=1,
            data_parallel_rank=self.rank,
            max_num_seqs=256,
            max_num_batched_tokens=8192,
            instance_id=f"fake-engine-{self.rank}",
            supports_lora=False,
            max_loras=0,
            kv_cache_size_tokens=self.a.num_gpu_blocks * BLOCK_SIZE,
            enable_sleep_mode=True,  # it implements sleep / wake_up
            coordinator_input_address=a.coordinator_input,
            coordinator_output_address=a.coordinator_output,
        )

    # ---- logging ---------------------------------------------------------
    def record(self, obj):
        if self.log is not None:
            obj = {"rank": self.rank, **obj}
            self.log.write(json.dumps(obj, sort_keys=True, default=str) + "\n")

    # ---- output ----------------------------------------------------------
    def send(self, client_index: int, outs: EngineCoreOutputs):
        outs.engine_index = self.rank
        if not outs.timestamp:
            outs.timestamp = time.monotonic()
        self.outputs[client_index].send_multipart(self.encoder.encode(outs), copy=False)

    def send_dead(self):
        for s in self.outputs:
            s.send(ENGINE_CORE_DEAD)

    def publish_counts(self):
        if self.coord_out is None:
            return
        counts = (len(self.running), 0)
        if counts != self.last_counts:
            self.last_counts = counts
            stats = SchedulerStats(*counts, kv_cache_usage=self.kv_usage())
            outs = EngineCoreOutputs(engine_index=self.rank, scheduler_stats=stats,
                                     timestamp=time.monotonic())
            self.coord_out.send_multipart(self.encoder.encode(outs))

    def kv_usage(self) -> float:
        blocks = sum((len(r.prompt) + len(r.out) + BLOCK_SIZE - 1) // BLOCK_SIZE
                     for r in self.running.values())
        return min(1.0, blocks / max(1, self.a.num_gpu_blocks))

    # ---- input -----------------------------------------------------------
    def handle(self, sock_index: int, frames: list[bytes]):
        type_frame, data = frames[0], frames[1:]
        try:
            rtype = EngineCoreRequestType(bytes(type_frame))
        except ValueError:
            self.record({"type": "INVALID", "type_byte": bytes(type_frame).hex()})
            raise
        entry = {"type": rtype.name, "socket": sock_index, "frames": len(frames)}
        if rtype == EngineCoreRequestType.ADD:
            raw = self.raw.decode(data[0])
            req = self.add_decoder.decode(data)
            sp_raw = raw[3] if len(raw) > 3 and isinstance(raw[3], dict) else {}
            entry.update({
                "request_id": req.request_id,
                "external_req_id": req.external_req_id,
                "session_id": raw[20] if len(raw) > 20 else None,
                "num_fields": len(raw),
                "data_parallel_rank": req.data_parallel_rank,
                "client_index": req.client_index,
                "current_wave": req.current_wave,
                "prompt_len": len(req.prompt_token_ids or []),
                "sampling_params_keys": sorted(sp_raw),
                "sampling_params": sp_raw,
            })
            self.record(entry)
            self.add(req)
        elif rtype == EngineCoreRequestType.ABORT:
            ids = self.generic_decoder.decode(data)
            entry["request_ids"] = ids
            self.record(entry)
            self.abort(ids)
        elif rtype == EngineCoreRequestType.UTILITY:
            client_idx, call_id, method, args = self.generic_decoder.decode(data)
            entry.update({"client_index": client_idx, "call_id": call_id,
                          "method": method, "args": args})
            self.record(entry)
            self.utility(client_idx, call_id, method, args)
        else:
            entry["payload"] = self.generic_decoder.decode(data) if data else None
            self.record(entry)
            # EngineCoreProc (non-MoE) logs "Unrecognized input request type".

    def add(self, req: EngineCoreRequest):
        self.num_adds += 1
        if self.a.die_after_requests and self.num_adds >= self.a.die_after_requests:
            self.fatal = True
        if self.paused and not req.abort_immediately:
            err = RequestError(code="engine_paused",
                               message="Generation is paused. Please retry after it resumes.",
                               retryable=True)
            self.send(req.client_index, EngineCoreOutputs(
                outputs=[EngineCoreOutput(req.request_id, [], finish_reason=FinishReason.ERROR,
                                          error=err)],
                finished_requests={req.request_id}))
            return
        prompt = list(req.prompt_token_ids or [])
        cached = 0
        sp = req.sampling_params
        if not (sp is not None and sp.skip_reading_prefix_cache):
            best = 0
            for seen in self.seen_prompts:
                n = 0
                for x, y in zip(seen, prompt):
                    if x != y:
                        break
                    n += 1
                best = max(best, n)
            cached = (min(best, len(prompt) - 1) // BLOCK_SIZE) * BLOCK_SIZE if prompt else 0
        self.seen_prompts.append(prompt)
        self.pc_stats.requests += 1
        self.pc_stats.queries += len(prompt)
        self.pc_stats.hits += cached
        self.running[req.request_id] = Req(req, cached)
        if req.abort_immediately:
            self.abort([req.request_id])

    def abort(self, ids):
        for rid in ids:
            r = self.running.pop(rid, None)
            if r is not None and self.coord_in is not None:
                self.finished_pending.setdefault(r.client_index, set()).add(rid)

    def utility(self, client_idx, call_id, method, args):
        out = UtilityOutput(call_id)
        fn = getattr(self, "u_" + method, None) if isinstance(method, str) else None
        try:
            if fn is None:
                raise AttributeError(f"'EngineCoreProc' object has no attribute '{method}'")
            out.result = (None, fn(*args))
        except Exception as e:  # noqa: BLE001 -- reported as vLLM does
            out.failure_message = f"Call to {method} method failed: {e}"
        self.send(client_idx, EngineCoreOutputs(utility_output=out))

    # Utility methods (EngineCore's names and signatures).
    def u_get_supported_tasks(self):
        return ("generate",)

    def u_reset_prefix_cache(self, reset_running_requests=False, reset_connector=False):
        if self.running and not reset_running_requests:
            return False
        self.seen_prompts.clear()
        self.pc_stats.reset = True
        return True

    def u_reset_mm_cache(self):
        return None

    def u_reset_encoder_cache(self):
        return None

    def u_is_sleeping(self):
        return self.sleeping

    def u_sleep(self, level=1, mode="abort"):
        self.abort(list(self.running))
        self.sleeping = True
        return None

    def u_wake_up(self, tags=None):
        self.sleeping = False
        return True

    def u_release_kv_cache_memory(self):
        return None

    def u_pause_scheduler(self, mode="abort", clear_cache=True):
        if mode == "abort":
            self.abort(list(self.running))
        self.paused = True
        return None

    u_pause_generation = u_pause_scheduler

    def u_resume_scheduler(self):
        self.paused = False
        return None

    def u_is_scheduler_paused(self):
        return self.paused

    def u_list_loras(self):
        return set()

    def u_execute_dummy_batch(self):
        return None

    def u_profile(self, is_start=True, *rest):
        return None

    def u_get_weight_version(self):
        return self.weight_version

    def u_set_weight_version(self, weight_version):
        self.weight_version = weight_version
        return None

    def u_compute_weight_checksums(self):
        return []

    def u_collective_rpc(self, method, timeout=None, args=(), kwargs=None):
        return []

    # ---- stepping --------------------------------------------------------
    def next_token(self, r: Req) -> int:
        sp = r.sp
        vocab = self.a.vocab
        t = (sum(r.prompt) + len(r.out)) % vocab
        if sp is not None and len(r.out) < sp.min_tokens and sp._all_stop_token_ids:
            stops = set(sp._all_stop_token_ids)
            for _ in range(vocab):
                if t not in stops:
                    break
                t = (t + 1) % vocab
        return t

    def logprob_lists(self, t: int, k: int) -> LogprobsLists:
        k = self.a.vocab if k < 0 else min(k, self.a.vocab)
        ids = [t] + [(t + j) % self.a.vocab for j in range(k)]
        lps = [log_prob(1)] + [log_prob(j + 1) for j in range(k)]
        return LogprobsLists(NDArray("<i4", (1, k + 1), i32(ids)),
                             NDArray("<f4", (1, k + 1), f32(lps)),
                             NDArray("<i8", (1,), i64([1])), None)

    def prompt_logprobs(self, prompt: list[int], k: int) -> LogprobsTensors:
        k = self.a.vocab if k < 0 else min(k, self.a.vocab)
        rows = max(0, len(prompt) - 1)
        ids, lps = [], []
        for tok in prompt[1:]:
            ids += [tok] + [(tok + j) % self.a.vocab for j in range(k)]
            lps += [log_prob(1)] + [log_prob(j + 1) for j in range(k)]
        return LogprobsTensors(Tensor("int32", (rows, k + 1), i32(ids)),
                               Tensor("float32", (rows, k + 1), f32(lps)),
                               Tensor("int64", (rows,), i64([1] * rows)))

    def step(self):
        self.step_counter += 1
        by_client: dict[int, list[EngineCoreOutput]] = {}
        done = []
        for rid, r in self.running.items():
            sp = r.sp
            t = self.next_token(r)
            r.out.append(t)
            finish, stop_reason = None, None
            eos = None if (sp is None or sp.ignore_eos) else sp._eos_token_id
            max_tokens = sp.max_tokens if sp is not None and sp.max_tokens is not None \
                else self.a.max_model_len - len(r.prompt)
            if t == eos:
                finish = FinishReason.STOP
            elif sp is not None and t in (sp.stop_token_ids or ()):
                finish, stop_reason = FinishReason.STOP, t
            elif len(r.prompt) + len(r.out) >= self.a.max_model_len or len(r.out) >= max_tokens:
                finish = FinishReason.LENGTH
            o = EngineCoreOutput(rid, [t], finish_reason=finish, stop_reason=stop_reason)
            if sp is not None and sp.logprobs is not None:
                o.new_logprobs = self.logprob_lists(t, sp.logprobs)
            if r.first:
                r.first = False
                now = time.monotonic()
                o.events = [EngineCoreEvent(EngineCoreEventType.QUEUED, r.queued_ts),
                            EngineCoreEvent(EngineCoreEventType.SCHEDULED, now)]
                ps = PrefillStats(num_prompt_tokens=len(r.prompt),
                                  num_computed_tokens=len(r.prompt) - r.cached,
                                  num_cached_tokens=r.cached,
                                  num_local_cached_tokens=r.cached)
                o.prefill_stats = ps
                if sp is not None and sp.prompt_logprobs is not None:
                    o.new_prompt_logprobs_tensors = self.prompt_logprobs(r.prompt,
                                                                         sp.prompt_logprobs)
            by_client.setdefault(r.client_index, []).append(o)
            if finish is not None:
                done.append(r)
        for r in done:
            del self.running[r.req.request_id]
            if self.coord_in is not None:
                self.finished_pending.setdefault(r.client_index, set()).add(r.req.request_id)
        per_client = {ci: EngineCoreOutputs(outputs=outs) for ci, outs in by_client.items()}
        for ci, fin in self.finished_pending.items():
            per_client.setdefault(ci, EngineCoreOutputs()).finished_requests = fin
        self.finished_pending = {}
        stats = SchedulerStats(num_running_reqs=len(self.running), num_waiting_reqs=0,
                               step_counter=self.step_counter,
                               kv_cache_usage=self.kv_usage(),
                               prefix_cache_stats=self.pc_stats)
        self.pc_stats = PrefixCacheStats()
        # make_stats: stats go to only one front-end.
        first = next(iter(per_client.values()), None)
        if first is None:
            per_client[0] = first = EngineCoreOutputs()
        first.scheduler_stats = stats
        for ci, outs in per_client.items():
            self.send(ci, outs)

    # ---- main loop -------------------------------------------------------
    def serve(self) -> int:
        poller = zmq.Poller()
        for s in self.inputs:
            poller.register(s, zmq.POLLIN)
        if self.coord_in is not None:
            poller.register(self.coord_in, zmq.POLLIN)
        step_ms = self.a.step_ms
        while True:
            if self.stop_requested:
                return self.shutdown()
            busy = bool(self.running or self.finished_pending)
            events = dict(poller.poll(step_ms if busy else 100))
            for i, s in enumerate(self.inputs):
                if s in events:
                    while True:
                        try:
                            frames = s.recv_multipart(zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        self.handle(i, frames)
            if self.coord_in is not None and self.coord_in in events:
                while True:
                    try:
                        frames = self.coord_in.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    if frames[0] != b"READY":
                        self.handle(-1, frames)
            self.publish_counts()
            if self.fatal:
                # run_engine_core: "EngineCore encountered a fatal error."
                self.record({"type": "FATAL", "num_adds": self.num_adds})
                self.send_dead()
                print(f"fake_engine[{self.rank}]: fatal error after {self.num_adds} "
                      f"ADDs (--die-after-requests)", file=sys.stderr)
                return 1
            if self.running or self.finished_pending:
                self.step()
                self.publish_counts()

    def shutdown(self) -> int:
        # _handle_shutdown, shutdown_timeout 0: abort in-flight requests.
        by_client: dict[int, list[str]] = {}
        for rid, r in self.running.items():
            by_client.setdefault(r.client_index, []).append(rid)
        self.running.clear()
        for ci, ids in by_client.items():
            self.send(ci, EngineCoreOutputs(
                outputs=[EngineCoreOutput(i, [], finish_reason=FinishReason.ABORT) for i in ids],
                finished_requests=set(ids)))
        self.record({"type": "SHUTDOWN"})
        return 0

    def close(self):
        for s in getattr(self, "inputs", []) + [getattr(self, "coord_in", None)]:
            if s is not None:
                s.close(linger=0)
        for s in getattr(self, "outputs", []) + [getattr(self, "coord_out", None)]:
            if s is not None:
                s.close()  # linger 4000: ENGINE_CORE_DEAD gets out first
        self.ctx.term()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--handshake", required=True,
                   help="frontend handshake address, e.g. tcp://127.0.0.1:29550")
    p.add_argument("--rank", type=int, default=0, help="data parallel rank (identity)")
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--num-gpu-blocks", type=int, default=4096)
    p.add_argument("--step-ms", type=int, default=1,
                   help="fake step time: input poll timeout while requests run")
    p.add_argument("--local", action="store_true",
                   help="HELLO with local=True, headless=False (default: remote headless)")
    p.add_argument("--handshake-timeout", type=float, default=60.0, help="seconds")
    p.add_argument("--log", help="append one JSON line per received message")
    p.add_argument("--die-after-requests", type=int, default=0,
                   help="after N ADDs send ENGINE_CORE_DEAD and exit 1")
    a = p.parse_args(argv)

    eng = FakeEngine(a)

    def on_signal(signum, frame):
        eng.stop_requested = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        try:
            eng.handshake()
        except Exception as e:  # noqa: BLE001
            if eng.stop_requested:
                return 0
            print(f"fake_engine[{a.rank}]: handshake failed: {e}", file=sys.stderr)
            return 2
        eng.record({"type": "READY"})
        return eng.serve()
    finally:
        eng.close()


if __name__ == "__main__":
    sys.exit(main())
