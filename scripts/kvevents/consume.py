#!/usr/bin/env python3
"""Decode a Tandem engine's PUB socket with nothing but pyzmq and msgpack.

The engine publishes three topics (docs/wire.md §10), each message three
frames [topic, 8-byte big-endian sequence number, msgpack payload]:

  kv        vLLM's KVEventBatch: [ts, [event, ...], dp_rank], each event a
            tagged array ["BlockStored", block_hashes, parent_block_hash,
            token_ids, block_size, lora_id, medium] | ["BlockRemoved",
            block_hashes, medium] | ["AllBlocksCleared"]
  load      [engine_index, timestamp, num_waiting, num_running,
            num_free_blocks, num_total_blocks, kv_cache_usage]
  sessions  [engine_index, timestamp, full, added, removed]

This is the same decoding a vLLM/Dynamo/llm-d consumer does (tagged
msgspec arrays). It prints one JSON object per message on stdout:

  {"topic": "kv", "seq": 3, "payload": {"ts": ..., "dp_rank": 0,
   "events": [{"type": "BlockStored", "block_hashes": [...], ...}]}}

Usage: consume.py ENDPOINT [--seconds S] [--max-messages N]
"""

import argparse
import json
import struct
import sys
import time

import msgpack
import zmq

BLOCK_STORED_FIELDS = ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"]
BLOCK_REMOVED_FIELDS = ["block_hashes", "medium"]
LOAD_FIELDS = ["engine_index", "timestamp", "num_waiting", "num_running", "num_free_blocks", "num_total_blocks", "kv_cache_usage"]
SESSION_FIELDS = ["engine_index", "timestamp", "full", "added", "removed"]


def named(fields, values):
    """Zip an array-like struct with its field names (extra values kept by index)."""
    out = {name: None for name in fields}
    for i, v in enumerate(values):
        out[fields[i] if i < len(fields) else f"field_{i}"] = v
    return out


def kv_event(ev):
    tag, rest = ev[0], ev[1:]
    if tag == "BlockStored":
        d = named(BLOCK_STORED_FIELDS, rest)
    elif tag == "BlockRemoved":
        d = named(BLOCK_REMOVED_FIELDS, rest)
    else:
        d = {}
    d["type"] = tag
    return d


def decode(topic, payload):
    v = msgpack.unpackb(payload, raw=False)
    if topic == "kv":
        ts, events, dp_rank = (v + [None] * 3)[:3]
        return {"ts": ts, "dp_rank": dp_rank, "events": [kv_event(e) for e in events]}
    if topic == "load":
        return named(LOAD_FIELDS, v)
    if topic == "sessions":
        return named(SESSION_FIELDS, v)
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("endpoint")
    ap.add_argument("--seconds", type=float, default=5.0, help="stop after this long")
    ap.add_argument("--max-messages", type=int, default=0, help="stop after this many messages (0: no limit)")
    args = ap.parse_args()

    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(args.endpoint)
    print(json.dumps({"topic": "_connected"}), flush=True)
    deadline = time.monotonic() + args.seconds
    n = 0
    while time.monotonic() < deadline and (args.max_messages == 0 or n < args.max_messages):
        if not sub.poll(timeout=100):
            continue
        frames = sub.recv_multipart()
        if len(frames) != 3 or len(frames[1]) != 8:
            print(json.dumps({"topic": "_malformed", "frames": len(frames)}), flush=True)
            continue
        topic = frames[0].decode()
        (seq,) = struct.unpack(">Q", frames[1])
        print(json.dumps({"topic": topic, "seq": seq, "payload": decode(topic, frames[2])}), flush=True)
        n += 1
    sub.close(linger=0)
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
