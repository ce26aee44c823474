#!/usr/bin/env python3
"""Fake vLLM 0.33.0 frontend (AsyncMPClient / DPLBAsyncMPClient) on the wire.

It drives `--headless` engine cores (fake_engine.py, or Tandem's engine) the
way a `vllm serve --data-parallel-size-local 0` frontend does, runs one
scenario and prints one JSON summary line. Facts from the vllm-0.33.0 sdist,
read, not copied:

- engine/utils.py launch_core_engines: the frontend binds the handshake
  ROUTER at tcp://--data-parallel-address:--data-parallel-rpc-port
  (get_engine_client_zmq_addr). core_client.py MPClient.__init__ binds the
  input ROUTER and output PULL first (make_zmq_socket: HWM 0), and puts their
  endpoints in EngineZmqAddresses.
- engine/utils.py wait_for_engine_startup: per engine identity (rank, 2
  bytes little-endian; CoreEngine) frames [identity][msgpack map]; HELLO
  (local must match: remote engines send local=False; remote engines must be
  headless) -> reply [identity][EngineHandshakeMetadata(addresses,
  parallel_config={} for non-MoE)]; READY -> engine ready. Any other
  status/state is an error.
- core_client.py MPClient.__init__: then waits on the input ROUTER for one
  [identity][EngineCoreReadyResponse] per engine (VLLM_ENGINE_READY_TIMEOUT_S;
  --timeout here) and applies it (_apply_ready_response).
- engine/utils.py launch_core_engines + coordinator.py: with DP > 1 and
  internal LB (needs_dp_coordinator) rank 0 runs a DPCoordinator: XPUB
  (verbose) for engines (engines XSUB-subscribe with b"\\x01"; it sends
  b"READY" once all have), PULL for engine stats, XPUB for the frontend
  stats (counts, wave, running). Its addresses go in coordinator_input /
  coordinator_output / frontend_stats_publish_address. Run here in a
  thread; --no-coordinator is external-LB mode (DPAsyncMPClient, none).
- core_client.py AsyncMPClient._send_input: [identity][type byte][msgpack
  payload][aux...]; ADD is an EngineCoreRequest with client_index set
  (DP: current_wave too); ABORT a list of request ids; UTILITY
  (client_index, call_id = uuid1().int >> 64, method, args).
  DPLBAsyncMPClient.get_core_engine_for_request: data_parallel_rank pins,
  else least loaded (round robin here). No heartbeats exist.
- core_client.py process_outputs_socket: PULL frames; a single
  b"ENGINE_CORE_DEAD" frame is engine death (BackgroundResources
  .validate_alive -> EngineDeadError); else EngineCoreOutputs; utility_output
  resolves utility_results[call_id] (failure_message -> exception, else
  result[1]).
- v1/engine/input_processor.py + sampling_params.py: request_id is the
  external id plus "-" and 8 random hex chars (external_req_id keeps the
  original); __post_init__ makes stop_token_ids a list and adds them to
  _all_stop_token_ids; update_from_generation_config sets _eos_token_id
  (unless ignore_eos) and adds eos to _all_stop_token_ids; max_tokens None
  becomes max_model_len - prompt_len; skip_reading_prefix_cache =
  prompt_logprobs is not None; the OpenAI server streams with
  output_kind DELTA.

Scenarios: basic, concurrent (--requests N), utility, abort, death (each
engine must send ENGINE_CORE_DEAD; start engines with --die-after-requests 1).
Expected tokens follow fake_engine.py's model: token k = (sum(prompt)+k) %
--vocab, stop tokens masked below min_tokens by the next non-stop id.
--structure-only checks what holds for any model instead (a real engine's
greedy tokens, e.g. `tandem engine --protocol vllm`): token counts, finish
and stop reasons, ids, engine indexes, prefill_stats, logprob layouts,
utility results, order. Stop and EOS tokens are then picked from a greedy
probe of the same prompt, and each request sets its own _eos_token_id. The
sleep/wake_up cycle is expected to work iff the engine's
EngineCoreReadyResponse says enable_sleep_mode; otherwise both must fail.

Output: one JSON line {"scenario", "engines", "ok", "checks": {name: bool},
"failures": [str], "elapsed_s"}. Exit 0 iff every check passed, 1 if a check
failed, 2 if startup (handshake / ready) failed or timed out.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import struct
import sys
import time
import uuid

import msgspec
import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks, Shape  # noqa: E402
from coordinator import Coordinator, endpoint, zsock  # noqa: E402
from structs import (  # noqa: E402
    ENGINE_CORE_DEAD,
    EngineCoreOutputs,
    EngineCoreReadyResponse,
    EngineCoreRequest,
    EngineCoreRequestType,
    EngineHandshakeMetadata,
    EngineZmqAddresses,
    FinishReason,
    MsgpackDecoder,
    MsgpackEncoder,
    RequestOutputKind,
    SamplingParams,
)


class StartupError(Exception):
    pass


class Frontend:
    def __init__(self, a):
        self.a = a
        self.n = a.engines
        self.ctx = zmq.Context(io_threads=2)
        self.encoder = MsgpackEncoder()
        self.decoder = MsgpackDecoder(EngineCoreOutputs)
        self.identities = [r.to_bytes(2, "little") for r in range(self.n)]
        self.client_index = 0
        self.rr = 0
        self.dead_frames = 0
        self.ready: dict[int, EngineCoreReadyResponse] = {}
        self.utility_results: dict[int, tuple] = {}
        self.outputs: dict[str, list] = {}  # request_id -> [EngineCoreOutput]
        self.engine_of: dict[str, int] = {}
        self.finished_sets: set[str] = set()
        self.stats_seen = 0
        self.coordinator = None

    # ---- startup -----------------------------------------------------------
    def start(self):
        host = self.a.host
        self.input = zsock(self.ctx, zmq.ROUTER, f"tcp://{host}:0", True)
        self.output = zsock(self.ctx, zmq.PULL, f"tcp://{host}:0", True)
        addrs = EngineZmqAddresses(inputs=[endpoint(self.input)], outputs=[endpoint(self.output)])
        if self.n > 1 and not self.a.no_coordinator:
            self.coordinator = c = Coordinator(self.ctx, host, self.n)
            addrs.coordinator_input = endpoint(c.publish_back)
            addrs.coordinator_output = endpoint(c.output_back)
            addrs.frontend_stats_publish_address = "inproc://fake-coord-front"
            c.start()
        self.addresses = addrs
        hs = zsock(self.ctx, zmq.ROUTER, self.a.handshake, True)
        deadline = time.monotonic() + self.a.timeout
        state = {i: "NEW" for i in self.identities}
        meta = msgspec.msgpack.encode(EngineHandshakeMetadata(addresses=addrs, parallel_config={}))
        try:
            while any(v != "READY" for v in state.values()):
                left = deadline - time.monotonic()
                if left <= 0 or not hs.poll(int(left * 1000)):
                    pend = {int.from_bytes(i, "little"): s for i, s in state.items() if s != "READY"}
                    raise StartupError(f"timed out after {self.a.timeout}s waiting for engine "
                                       f"handshake; pending ranks (state): {pend}")
                ident, body = hs.recv_multipart()
                rank = int.from_bytes(ident, "little")
                if ident not in state:
                    raise StartupError(f"Message from engine with unexpected data parallel "
                                       f"rank: {rank}")
                msg = msgspec.msgpack.decode(body)
                status, local, headless = msg["status"], msg["local"], msg["headless"]
                if local:
                    raise StartupError(f"{status} message from local engine {rank}, "
                                       f"expected it to be remote")
                if not headless:
                    raise StartupError(f"Remote engine {rank} must use --headless")
                if status == "HELLO" and state[ident] == "NEW":
                    hs.send_multipart([ident, meta])
                    state[ident] = "CONNECTED"
                elif status == "READY" and state[ident] == "CONNECTED":
                    state[ident] = "READY"
                else:
                    raise StartupError(f"Unexpected {status} message for remote engine "
                                       f"{rank} in {state[ident]} state.")
            # MPClient: one EngineCoreReadyResponse per engine on the input ROUTER.
            waiting = set(self.identities)
            while waiting:
                left = deadline - time.monotonic()
                if left <= 0 or not self.input.poll(int(left * 1000)):
                    raise StartupError("Timed out waiting for engine core processes to start "
                                       "(EngineCoreReadyResponse)")
                ident, payload = self.input.recv_multipart()
                waiting.discard(ident)
                r = msgspec.msgpack.decode(payload, type=EngineCoreReadyResponse)
                self.ready[int.from_bytes(ident, "little")] = r
        finally:
            hs.close()

    # ---- sending -----------------------------------------------------------
    def send(self, rtype: EngineCoreRequestType, obj, rank: int):
        frames = [self.identities[rank], rtype.value, *self.encoder.encode(obj)]
        self.input.send_multipart(frames, copy=False)

    def add(self, ext_id, prompt, *, rank=None, max_tokens=16, stop_token_ids=None,
            ignore_eos=False, min_tokens=0, logprobs=None, prompt_logprobs=None,
            session_id=None, eos=None):
        a = self.a
        eos = a.eos if eos is None else eos
        stop_ids = list(dict.fromkeys(stop_token_ids or []))
        if max_tokens is None:
            max_tokens = a.max_model_len - len(prompt)
        sp = SamplingParams(
            temperature=0.0, max_tokens=max_tokens, stop=[], stop_token_ids=stop_ids,
            ignore_eos=ignore_eos, min_tokens=min_tokens, logprobs=logprobs,
            prompt_logprobs=prompt_logprobs, output_kind=RequestOutputKind.DELTA,
            skip_reading_prefix_cache=prompt_logprobs is not None,
            _eos_token_id=None if ignore_eos else eos,
            _all_stop_token_ids=set(stop_ids) | {eos},
        )
        rid = f"{ext_id}-{uuid.uuid4().hex[:8]}"
        if rank is None:
            target = self.rr % self.n
            self.rr += 1
        else:
            target = rank
        req = EngineCoreRequest(
            request_id=rid, prompt_token_ids=list(prompt), mm_features=None,
            sampling_params=sp, pooling_params=None, arrival_time=time.time(),
            lora_request=None, cache_salt=None, data_parallel_rank=rank,
            client_index=self.client_index, current_wave=0, external_req_id=ext_id,
            session_id=session_id)
        self.outputs[rid] = []
        self.engine_of[rid] = target
        self.send(EngineCoreRequestType.ADD, req, target)
        return rid

    def abort(self, rids):
        by = {}
        for r in rids:
            by.setdefault(self.engine_of[r], []).append(r)
        for rank, ids in by.items():
            self.send(EngineCoreRequestType.ABORT, ids, rank)

    def utility(self, rank, method, *args) -> int:
        call_id = uuid.uuid1().int >> 64
        self.utility_results[call_id] = None
        self.send(EngineCoreRequestType.UTILITY, (self.client_index, call_id, method, args), rank)
        return call_id

    # ---- receiving ---------------------------------------------------------
    def pump(self, until, timeout):
        """Process output frames until until() is true; False on timeout."""
        deadline = time.monotonic() + timeout
        while not until():
            left = deadline - time.monotonic()
            if left <= 0 or not self.output.poll(int(left * 1000)):
                return until()
            frames = self.output.recv_multipart()
            if len(frames) == 1 and frames[0] == ENGINE_CORE_DEAD:
                self.dead_frames += 1
                continue
            outs = self.decoder.decode(frames)
            if outs.utility_output is not None:
                u = outs.utility_output
                if u.call_id not in self.utility_results:
                    raise AssertionError(f"utility output for unknown call id {u.call_id}")
                self.utility_results[u.call_id] = (outs.engine_index, u)
                continue
            if outs.scheduler_stats is not None:
                self.stats_seen += 1
            if outs.finished_requests:
                self.finished_sets |= set(outs.finished_requests)
            for o in outs.outputs:
                if o.request_id not in self.outputs:
                    raise AssertionError(f"output for unknown request {o.request_id}")
                self.outputs[o.request_id].append((outs.engine_index, o))
        return True

    def finished(self, rid) -> bool:
        outs = self.outputs[rid]
        return bool(outs) and outs[-1][1].finish_reason is not None

    def tokens(self, rid):
        return [t for _, o in self.outputs[rid] for t in o.new_token_ids]

    def close(self):
        if self.coordinator is not None:
            self.coordinator.stop.set()
            self.coordinator.join(2)
        self.ctx.destroy(linger=0)


# ---- the fake model, independently of fake_engine.py ------------------------
def expected(prompt, vocab, max_tokens, eos=None, stop_ids=(), min_tokens=0, all_stop=()):
    """Return (tokens, finish_reason, stop_reason)."""
    out = []
    base = sum(prompt)
    while True:
        t = (base + len(out)) % vocab
        if len(out) < min_tokens:
            while t in all_stop:
                t = (t + 1) % vocab
        out.append(t)
        if eos is not None and t == eos:
            return out, FinishReason.STOP, None
        if t in stop_ids:
            return out, FinishReason.STOP, t
        if len(out) >= max_tokens:
            return out, FinishReason.LENGTH, None


def check_request(c: Checks, fe: Frontend, name, rid, prompt, exp):
    """exp is (tokens, finish_reason, stop_reason) from expected(), or, with
    --structure-only, a Shape."""
    outs = fe.outputs[rid]
    c.check(f"{name}.finished", fe.finished(rid), f"{len(outs)} outputs, none finished")
    if not outs:
        return
    got = fe.tokens(rid)
    last = outs[-1][1]
    if isinstance(exp, Shape):
        exp.check(c, name, got, last)
    else:
        toks, fin, stop_reason = exp
        c.check(f"{name}.tokens", got == toks, f"got {got[:12]}... ({len(got)}), want "
                f"{toks[:12]}... ({len(toks)})")
        c.check(f"{name}.finish_reason", last.finish_reason == fin,
                f"got {last.finish_reason!r}, want {fin!r}")
        c.check(f"{name}.stop_reason", last.stop_reason == stop_reason,
                f"got {last.stop_reason!r}, want {stop_reason!r}")
    c.check(f"{name}.single_finish",
            all(o.finish_reason is None for _, o in outs[:-1]), "finish_reason before last")
    eng = fe.engine_of[rid]
    c.check(f"{name}.engine_index", all(e == eng for e, _ in outs),
            f"outputs from engines {sorted({e for e, _ in outs})}, sent to {eng}")
    ps = outs[0][1].prefill_stats
    c.check(f"{name}.prefill_stats", ps is not None and ps.num_prompt_tokens == len(prompt),
            f"{ps!r}")


def exp_for(a, prompt, max_tokens, stop_ids=(), ignore_eos=False, min_tokens=0):
    return expected(prompt, a.vocab, max_tokens, None if ignore_eos else a.eos, tuple(stop_ids),
                    min_tokens, set(stop_ids) | {a.eos})


def scenario_basic(fe: Frontend, c: Checks):
    if fe.a.structure_only:
        return basic_structure(fe, c)
    a = fe.a
    V, EOS = a.vocab, a.eos
    reqs = []
    for rank in range(fe.n):
        p = [1 + rank, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        rid = fe.add(f"len-{rank}", p, rank=rank, max_tokens=8, session_id=f"conv-{42 + rank}")
        reqs.append((f"length{rank}", rid, p, exp_for(a, p, 8)))
    # stop token: the 4th token.
    p = [100, 200, 300]
    stop = (sum(p) + 3) % V
    rid = fe.add("stop", p, max_tokens=20, stop_token_ids=[stop])
    reqs.append(("stop", rid, p, exp_for(a, p, 20, [stop])))
    # eos at the 3rd token, and the same with ignore_eos.
    p = [(EOS - 2) % V]
    rid = fe.add("eos", p, max_tokens=20)
    reqs.append(("eos", rid, p, exp_for(a, p, 20)))
    rid = fe.add("ignore_eos", p, max_tokens=6, ignore_eos=True)
    reqs.append(("ignore_eos", rid, p, exp_for(a, p, 6, ignore_eos=True)))
    # wrap-around at the vocab size.
    p = [V - 3]
    rid = fe.add("wrap", p, max_tokens=6, ignore_eos=True)
    reqs.append(("wrap", rid, p, exp_for(a, p, 6, ignore_eos=True)))
    # min_tokens masks a stop token at position 1.
    p = [500, 1]
    stop = (sum(p) + 1) % V
    rid = fe.add("min_tokens", p, max_tokens=10, stop_token_ids=[stop], min_tokens=3)
    reqs.append(("min_tokens", rid, p, exp_for(a, p, 10, [stop], min_tokens=3)))
    # logprobs + prompt logprobs.
    p = list(range(20, 40))
    lp_rid = fe.add("logprobs", p, max_tokens=5, logprobs=2, prompt_logprobs=1)
    reqs.append(("logprobs", lp_rid, p, exp_for(a, p, 5)))
    finish_basic(fe, c, reqs, lp_rid, p)


def probe(fe: Frontend, prompt, n):
    """A greedy run of prompt for n tokens (ignore_eos): the tokens the
    engine generates, to pick stop and EOS tokens from."""
    rid = fe.add("probe", prompt, max_tokens=n, ignore_eos=True)
    fe.pump(lambda: fe.finished(rid), fe.a.timeout)
    return fe.tokens(rid)


def basic_structure(fe: Frontend, c: Checks):
    """scenario_basic for any model: see the module doc."""
    a = fe.a
    V = a.vocab
    reqs = []
    for rank in range(fe.n):
        p = [1 + rank, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        rid = fe.add(f"len-{rank}", p, rank=rank, max_tokens=8, ignore_eos=True,
                     session_id=f"conv-{42 + rank}")
        reqs.append((f"length{rank}", rid, p, Shape(FinishReason.LENGTH, count=8)))
    p = [100 % V, 200 % V, 300 % V]
    toks = probe(fe, p, 6)
    c.check("basic.probe", len(toks) == 6, f"probe gave {toks}")
    if len(toks) < 6:
        return
    stop = toks[3]
    rid = fe.add("stop", p, max_tokens=20, stop_token_ids=[stop], ignore_eos=True)
    reqs.append(("stop", rid, p, Shape(FinishReason.STOP, max_count=4, stop_token=stop)))
    eos = toks[2]
    rid = fe.add("eos", p, max_tokens=20, eos=eos)
    reqs.append(("eos", rid, p, Shape(FinishReason.STOP, max_count=3, eos=eos)))
    rid = fe.add("ignore_eos", p, max_tokens=6, ignore_eos=True, eos=eos)
    reqs.append(("ignore_eos", rid, p, Shape(FinishReason.LENGTH, count=6)))
    # min_tokens masks the stop token (the probe's 2nd) for the first 3.
    stop = toks[1]
    rid = fe.add("min_tokens", p, max_tokens=10, stop_token_ids=[stop], min_tokens=3,
                 ignore_eos=True)
    reqs.append(("min_tokens", rid, p, Shape((FinishReason.STOP, FinishReason.LENGTH),
                                             max_count=10, stop_token=stop, no_stop_before=3)))
    p = list(range(20, 40))
    lp_rid = fe.add("logprobs", p, max_tokens=5, logprobs=2, prompt_logprobs=1, ignore_eos=True)
    reqs.append(("logprobs", lp_rid, p, Shape(FinishReason.LENGTH, count=5)))
    finish_basic(fe, c, reqs, lp_rid, p)


def finish_basic(fe: Frontend, c: Checks, reqs, lp_rid, p):
    """The checks scenario_basic makes in both modes, once reqs are sent."""
    a = fe.a
    ok = fe.pump(lambda: all(fe.finished(r) for _, r, _, _ in reqs), a.timeout)
    c.check("basic.all_finished", ok, "timeout")
    for name, rid, prompt, exp in reqs:
        check_request(c, fe, name, rid, prompt, exp)
    # logprobs layout: (n, k+1) int32 ids with the sampled token first, rank 1.
    for _, o in fe.outputs[lp_rid]:
        lp = o.new_logprobs
        good = (lp is not None and lp.logprob_token_ids.dtype == "<i4"
                and lp.logprob_token_ids.shape == (len(o.new_token_ids), 3)
                and lp.logprobs.dtype == "<f4" and lp.logprobs.shape == (len(o.new_token_ids), 3)
                and struct.unpack("<i", lp.logprob_token_ids.data[:4])[0] == o.new_token_ids[0]
                and lp.sampled_token_ranks.shape == (len(o.new_token_ids),)
                and struct.unpack("<q", lp.sampled_token_ranks.data[:8])[0] == 1)
        c.check("basic.logprobs_layout", good, repr(lp))
    outs = fe.outputs[lp_rid]
    plp = outs[0][1].new_prompt_logprobs_tensors if outs else None
    c.check("basic.prompt_logprobs",
            plp is not None and plp.logprob_token_ids.shape == (len(p) - 1, 2)
            and plp.logprob_token_ids.dtype == "int32"
            and all(o.new_prompt_logprobs_tensors is None for _, o in outs[1:]), repr(plp))
    c.check("basic.prompt_logprobs_skip_cache",
            outs and outs[0][1].prefill_stats.num_cached_tokens == 0, "")
    # Prefix cache: same engine, 40-token prompt then 35 shared -> 32 cached.
    base = [(7000 + i) % a.vocab for i in range(40)]
    r1 = fe.add("pc1", base, rank=0, max_tokens=2)
    fe.pump(lambda: fe.finished(r1), a.timeout)
    r2 = fe.add("pc2", base[:35] + [1, 2, 3], rank=0, max_tokens=2)
    r3 = fe.add("pc3", base, rank=0, max_tokens=2)
    fe.pump(lambda: fe.finished(r2) and fe.finished(r3), a.timeout)
    cached = [fe.outputs[r][0][1].prefill_stats.num_cached_tokens if fe.outputs[r] else None
              for r in (r1, r2, r3)]
    c.check("basic.prefix_cache", cached == [0, 32, 32], f"num_cached_tokens {cached}")
    c.check("basic.scheduler_stats", fe.stats_seen > 0, "no scheduler_stats")
    if fe.coordinator is not None:
        c.check("basic.finished_requests",
                all(r in fe.finished_sets for _, r, _, _ in reqs), "finished_requests missing")


def scenario_concurrent(fe: Frontend, c: Checks):
    a = fe.a
    rng = random.Random(1234)
    reqs = []
    for i in range(a.requests):
        p = [rng.randrange(a.vocab) for _ in range(rng.randrange(1, 50))]
        mt = 1 + i % 17
        rid = fe.add(f"c{i}", p, max_tokens=mt, ignore_eos=True)
        reqs.append((rid, p, exp_for(a, p, mt, ignore_eos=True)))
    ok = fe.pump(lambda: all(fe.finished(r) for r, _, _ in reqs), a.timeout)
    done = sum(fe.finished(r) for r, _, _ in reqs)
    c.check("concurrent.all_finished", ok, f"{done}/{len(reqs)} finished")
    if a.structure_only:
        bad = [r for r, p, e in reqs if len(fe.tokens(r)) != len(e[0]) or
               (fe.outputs[r] and fe.outputs[r][-1][1].finish_reason != FinishReason.LENGTH)]
    else:
        bad = [r for r, p, e in reqs if fe.tokens(r) != e[0] or
               (fe.outputs[r] and fe.outputs[r][-1][1].finish_reason != FinishReason.LENGTH)]
    c.check("concurrent.lengths_and_tokens", not bad, f"{len(bad)} wrong, e.g. {bad[:3]}")
    used = {fe.engine_of[r] for r, _, _ in reqs}
    c.check("concurrent.all_engines_used", used == set(range(fe.n)), f"used {sorted(used)}")


def scenario_utility(fe: Frontend, c: Checks):
    a = fe.a
    calls = []  # (call_id, rank, method, check)
    for rank in range(fe.n):
        calls += [
            (fe.utility(rank, "get_supported_tasks"), rank, "get_supported_tasks",
             lambda u: u.failure_message is None and list(u.result[1]) == ["generate"]),
            (fe.utility(rank, "is_sleeping"), rank, "is_sleeping",
             lambda u: u.failure_message is None and u.result[1] is False),
            (fe.utility(rank, "reset_prefix_cache", False, False), rank, "reset_prefix_cache",
             lambda u: u.failure_message is None and u.result[1] is True),
            (fe.utility(rank, "list_loras"), rank, "list_loras",
             lambda u: u.failure_message is None and list(u.result[1]) == []),
            (fe.utility(rank, "no_such_method", 1), rank, "no_such_method",
             lambda u: u.result is None and u.failure_message is not None
             and u.failure_message.startswith("Call to no_such_method method failed")),
        ]
    ok = fe.pump(lambda: all(fe.utility_results[cid] is not None for cid, *_ in calls), a.timeout)
    c.check("utility.all_answered", ok, "timeout")
    for cid, rank, method, chk in calls:
        res = fe.utility_results[cid]
        if res is None:
            c.check(f"utility.{method}", False, f"rank {rank}: no reply")
            continue
        eng, u = res
        c.check(f"utility.{method}", chk(u) and eng == rank and u.call_id == cid,
                f"rank {rank}: engine {eng} {u!r}")
    # sleep / is_sleeping / wake_up round trip on rank 0.
    s1 = fe.utility(0, "sleep", 1)
    fe.pump(lambda: fe.utility_results[s1] is not None, a.timeout)
    s2 = fe.utility(0, "is_sleeping")
    fe.pump(lambda: fe.utility_results[s2] is not None, a.timeout)
    s3 = fe.utility(0, "wake_up", None)
    fe.pump(lambda: fe.utility_results[s3] is not None, a.timeout)
    r1, r2, r3 = fe.utility_results[s1], fe.utility_results[s2], fe.utility_results[s3]
    if fe.ready[0].enable_sleep_mode:
        c.check("utility.sleep_cycle", r2 is not None and r2[1].result[1] is True
                and r3 is not None and r3[1].failure_message is None, f"{r2!r} {r3!r}")
    else:  # vLLM without --enable-sleep-mode: sleep and wake_up fail, it never sleeps
        c.check("utility.sleep_refused",
                all(r is not None and r[1].result is None and r[1].failure_message
                    .startswith(f"Call to {m} method failed") for r, m in ((r1, "sleep"),
                                                                           (r3, "wake_up")))
                and r2 is not None and r2[1].result[1] is False, f"{r1!r} {r2!r} {r3!r}")


def scenario_abort(fe: Frontend, c: Checks):
    a = fe.a
    long_ids = [fe.add(f"long{r}", [r + 1, 2, 3], rank=r, max_tokens=a.max_model_len - 3,
                       ignore_eos=True) for r in range(fe.n)]
    ok = fe.pump(lambda: all(len(fe.outputs[r]) >= 2 for r in long_ids), a.timeout)
    c.check("abort.started", ok, "no tokens before abort")
    fe.abort(long_ids)
    # Same pipe, FIFO: once a later utility call is answered, the ABORT was handled.
    cids = [fe.utility(r, "is_sleeping") for r in range(fe.n)]
    ok = fe.pump(lambda: all(fe.utility_results[x] is not None for x in cids), a.timeout)
    c.check("abort.sentinel_answered", ok, "timeout")
    seen = {r: len(fe.outputs[r]) for r in long_ids}
    # A short request afterwards still completes, and nothing more arrives for the aborted.
    p = [9, 9, 9]
    after = fe.add("after", p, max_tokens=4, ignore_eos=True)
    fe.pump(lambda: fe.finished(after), a.timeout)
    check_request(c, fe, "abort.after", after, p, Shape(FinishReason.LENGTH, count=4)
                  if a.structure_only else exp_for(a, p, 4, ignore_eos=True))
    if fe.coordinator is not None:
        ok = fe.pump(lambda: all(r in fe.finished_sets for r in long_ids), a.timeout)
        c.check("abort.finished_requests", ok, "aborted ids not in finished_requests")
    for r in long_ids:
        c.check("abort.no_output_after_abort", len(fe.outputs[r]) == seen[r],
                f"{r}: {len(fe.outputs[r]) - seen[r]} outputs after abort")
        c.check("abort.no_finish_reason", not fe.finished(r), f"{r} got a finish_reason")


def scenario_death(fe: Frontend, c: Checks):
    a = fe.a
    rids = [fe.add(f"doomed{r}", [1, 2, 3], rank=r, max_tokens=50) for r in range(fe.n)]
    ok = fe.pump(lambda: fe.dead_frames >= fe.n, a.timeout)
    c.check("death.engine_core_dead", ok, f"{fe.dead_frames}/{fe.n} ENGINE_CORE_DEAD frames")
    c.check("death.no_finish", not any(fe.finished(r) for r in rids), "a request finished")


SCENARIOS = {"basic": scenario_basic, "concurrent": scenario_concurrent,
             "utility": scenario_utility, "abort": scenario_abort, "death": scenario_death}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--handshake", required=True,
                   help="address to bind the handshake ROUTER, e.g. tcp://127.0.0.1:29550")
    p.add_argument("--host", default="127.0.0.1", help="host for the input/output sockets")
    p.add_argument("--engines", type=int, default=1, help="DP size: engines to wait for")
    p.add_argument("--scenario", choices=sorted(SCENARIOS), default="basic")
    p.add_argument("--requests", type=int, default=64, help="for --scenario concurrent")
    p.add_argument("--vocab", type=int, default=32000, help="must match the engine")
    p.add_argument("--eos", type=int, default=2, help="the tokenizer's eos id (_eos_token_id)")
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds for startup and for each wait")
    p.add_argument("--no-coordinator", action="store_true",
                   help="DP>1 without a DP coordinator (external LB mode)")
    p.add_argument("--structure-only", action="store_true",
                   help="check what holds for any model, not fake_engine.py's tokens")
    a = p.parse_args(argv)

    t0 = time.monotonic()
    fe = Frontend(a)
    c = Checks()
    summary = {"scenario": a.scenario, "engines": a.engines}
    rc = 0
    try:
        fe.start()
        c.check("startup.ready_responses",
                sorted(fe.ready) == list(range(a.engines))
                and all(fe.ready[r].data_parallel_rank == r for r in fe.ready),
                f"{ {r: v.data_parallel_rank for r, v in fe.ready.items()} }")
        SCENARIOS[a.scenario](fe, c)
        if fe.coordinator is not None:
            c.check("coordinator.ok", fe.coordinator.error is None, str(fe.coordinator.error))
        if a.scenario != "death":
            c.check("no_engine_dead", fe.dead_frames == 0, f"{fe.dead_frames} dead frames")
        rc = 0 if all(c.checks.values()) else 1
    except StartupError as e:
        c.failures.append(f"startup: {e}")
        rc = 2
    except Exception as e:  # noqa: BLE001
        c.failures.append(f"error: {e!r}")
        rc = 1
    finally:
        fe.close()
    summary.update({"ok": rc == 0, "checks": c.checks, "failures": c.failures,
                    "elapsed_s": round(time.monotonic() - t0, 3)})
    print(json.dumps(summary, sort_keys=True), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
