#!/usr/bin/env python3
"""Decode a Tandem engine's KV-events socket the way vLLM's consumers do.

The decoder is msgspec with vLLM's own struct definitions: those of
vllm/distributed/kv_events.py at vLLM 0.33.0 (the layout Tandem publishes by
default: events are tagged maps), or with --layout array those of vLLM 0.19.0
(events are tagged arrays; Tandem's "layout": "array"). They are written
here from vLLM's published source, field for field, with vLLM's struct
options; nothing of Tandem's is used. A message that does not decode is
reported, never skipped.

Every message on the socket is [topic, 8-byte big-endian sequence number,
msgpack KVEventBatch]. The consumer subscribes to --topic (default "", vLLM's
default: everything). With --replay ENDPOINT it also asks the engine's replay
socket (a ROUTER, as vLLM's ZmqEventPublisher binds) from a DEALER right after
subscribing: --from SEQ for vLLM's replay of the buffered batches from SEQ
on, or --snapshot for Tandem's snapshot of every block cached now.

It prints one JSON object per message on stdout:

  {"source": "live"|"replay"|"snapshot", "topic": "kv@pod@model", "seq": 3,
   "payload": {"ts": ..., "data_parallel_rank": 0,
               "events": [{"type": "BlockStored", "block_hashes": [...], ...}]}}
  {"source": "live", "topic": ..., "seq": ..., "error": "msgspec: ..."}

Usage: consume.py ENDPOINT [--topic T] [--layout map|array] [--seconds S]
       [--replay ENDPOINT (--from SEQ | --snapshot)]
"""

import argparse
import json
import sys
import time
from typing import Any

import msgspec
import zmq

# ExternalBlockHash in vllm/v1/core/kv_cache_utils.py.
ExternalBlockHash = bytes | int

END_SEQ = (-1).to_bytes(8, "big", signed=True)
SNAPSHOT_REQUEST = b"kv-snapshot"


def vllm_0_33():
    """vllm/distributed/kv_events.py at vLLM 0.33.0."""

    class EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
        ts: float
        events: list[Any]
        data_parallel_rank: int | None = None

    class KVCacheEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
        pass

    class BlockStored(KVCacheEvent):
        block_hashes: list[ExternalBlockHash]
        parent_block_hash: ExternalBlockHash | None
        token_ids: list[int]
        block_size: int
        lora_id: int | None
        medium: str | None
        lora_name: str | None
        extra_keys: list[tuple[Any, ...] | None] | None = None
        group_idx: int | None = None
        kv_cache_spec_kind: str | None = None
        kv_cache_spec_sliding_window: int | None = None
        locality: str | None = None
        ownership: str | None = None
        session_id: str | None = None
        lookahead_token_ids: list[list[int]] | None = None

    class BlockRemoved(KVCacheEvent):
        block_hashes: list[ExternalBlockHash]
        medium: str | None
        group_idx: int | None = None
        locality: str | None = None
        ownership: str | None = None

    class AllBlocksCleared(KVCacheEvent):
        pass

    class KVEventBatch(EventBatch):
        events: list[BlockStored | BlockRemoved | AllBlocksCleared]

    return KVEventBatch


def vllm_0_19():
    """vllm/distributed/kv_events.py at vLLM 0.19.0 (array_like events)."""

    class EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
        ts: float
        events: list[Any]
        data_parallel_rank: int | None = None

    class KVCacheEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
        pass

    class BlockStored(KVCacheEvent):
        block_hashes: list[ExternalBlockHash]
        parent_block_hash: ExternalBlockHash | None
        token_ids: list[int]
        block_size: int
        lora_id: int | None
        medium: str | None
        lora_name: str | None
        extra_keys: list[tuple[Any, ...] | None] | None = None

    class BlockRemoved(KVCacheEvent):
        block_hashes: list[ExternalBlockHash]
        medium: str | None

    class AllBlocksCleared(KVCacheEvent):
        pass

    class KVEventBatch(EventBatch):
        events: list[BlockStored | BlockRemoved | AllBlocksCleared]

    return KVEventBatch


def as_json(batch):
    events = []
    for ev in batch.events:
        d = {"type": type(ev).__name__}
        for f in ev.__struct_fields__:
            v = getattr(ev, f)
            if isinstance(v, bytes):
                v = v.hex()
            elif isinstance(v, list):
                v = [x.hex() if isinstance(x, bytes) else x for x in v]
            d[f] = v
        events.append(d)
    return {"ts": batch.ts, "data_parallel_rank": batch.data_parallel_rank, "events": events}


def emit(decoder, source, topic, seq, payload):
    line = {"source": source, "topic": topic.decode("utf-8", "replace"), "seq": int.from_bytes(seq, "big")}
    try:
        line["payload"] = as_json(decoder.decode(payload))
    except (msgspec.ValidationError, msgspec.DecodeError) as e:
        line["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(line), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("endpoint")
    ap.add_argument("--topic", default="", help="subscription prefix (vLLM's default: everything)")
    ap.add_argument("--layout", choices=["map", "array"], default="map")
    ap.add_argument("--seconds", type=float, default=5.0, help="stop after this long")
    ap.add_argument("--replay", help="the engine's replay endpoint")
    ap.add_argument("--from", dest="from_seq", type=int, default=0, help="replay from this sequence number")
    ap.add_argument("--snapshot", action="store_true", help="ask for a snapshot instead of a replay")
    args = ap.parse_args()

    decoder = msgspec.msgpack.Decoder(type=vllm_0_33() if args.layout == "map" else vllm_0_19())
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, args.topic.encode())
    sub.connect(args.endpoint)
    print(json.dumps({"source": "_connected"}), flush=True)
    deadline = time.monotonic() + args.seconds
    if args.replay:
        time.sleep(0.3)  # ZMQ's late joiner: live messages from here on reach us
        # A DEALER with the empty delimiter a REQ socket would add: the
        # answer is many messages, which a REQ socket cannot read.
        req = ctx.socket(zmq.DEALER)
        req.connect(args.replay)
        req.send_multipart([b"", SNAPSHOT_REQUEST if args.snapshot else args.from_seq.to_bytes(8, "big")])
        source = "snapshot" if args.snapshot else "replay"
        while time.monotonic() < deadline:
            if not req.poll(int((deadline - time.monotonic()) * 1000)):
                break
            _, topic, seq, payload = req.recv_multipart()
            if seq == END_SEQ:
                print(json.dumps({"source": source + "_end"}), flush=True)
                break
            emit(decoder, source, topic, seq, payload)
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        if not poller.poll(int(left * 1000)):
            continue
        topic, seq, payload = sub.recv_multipart()
        emit(decoder, "live", topic, seq, payload)


if __name__ == "__main__":
    sys.exit(main())
